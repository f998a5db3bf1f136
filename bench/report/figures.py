"""Report figures. Each one returns a Figure with a path, or with a note saying why it was skipped."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bench.evaluate.metrics import TYPE_ORDER
from bench.report.data import ReportData

SHORT = {"single-session-user": "SSU", "single-session-preference": "SSP", "single-session-assistant": "SSA",
         "multi-session": "MS", "temporal-reasoning": "TR", "knowledge-update": "KU"}


@dataclass
class Figure:
    name: str
    title: str
    path: Path | None = None
    note: str = ""


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, out: Path, name: str) -> Path:
    path = out / f"{name}.png"
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    _plt().close(fig)
    return path


def accuracy_by_type(d: ReportData, out: Path) -> Figure:
    f = Figure("accuracy_by_type", "Accuracy by question type (Wilson 95% intervals)")
    runs = [r for r in d.runs if d.metrics[r.run_key].overall.n]
    if not runs:
        f.note = "no judged questions in the database"
        return f
    plt = _plt()
    cats = [t for t in TYPE_ORDER if any(t in d.metrics[r.run_key].per_type for r in runs)] + ["overall"]
    width = 0.8 / len(runs)
    fig, ax = plt.subplots(figsize=(max(7, 1.3 * len(cats) + 0.4 * len(runs)), 4.5))
    for i, r in enumerate(runs):
        m = d.metrics[r.run_key]
        accs = [m.per_type[c] if c in m.per_type else None for c in cats[:-1]] + [m.overall]
        xs = [j + (i - (len(runs) - 1) / 2) * width for j in range(len(cats))]
        ys = [a.acc if a else float("nan") for a in accs]
        lo = [a.acc - a.ci_low if a else 0 for a in accs]
        hi = [a.ci_high - a.acc if a else 0 for a in accs]
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=r.label, hatch="//" if r.external else None)
    ax.set_xticks(range(len(cats)), [SHORT.get(c, c) for c in cats])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("accuracy")
    ax.legend(fontsize=7, ncol=2)
    f.path = _save(fig, out, f.name)
    return f


def prompt_over_turns(d: ReportData, out: Path) -> Figure:
    f = Figure("prompt_over_turns", "Actor prompt size over the replay (one question per strategy)")
    t = d.turns.dropna(subset=["prompt_tokens"])
    if t.empty:
        f.note = "no per-turn prompt sizes recorded (table `turns` is empty)"
        return f
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    by_run = {r.run_key: r for r in d.runs}
    # One run per strategy, and a question that as many strategies as possible share.
    chosen: dict[str, str] = {}
    for rk in t.run_key.unique():
        chosen.setdefault(by_run[rk].strategy if rk in by_run else rk, rk)
    common = t[t.run_key.isin(chosen.values())].groupby("question_id").run_key.nunique()
    qid = sorted(common[common == common.max()].index)[0]
    for strat, rk in chosen.items():
        g = t[(t.run_key == rk) & (t.question_id == qid)]
        if g.empty:
            g = t[t.run_key == rk]
            g = g[g.question_id == sorted(g.question_id.unique())[0]]
        ax.plot(g.turn, g.prompt_tokens, label=by_run[rk].label if rk in by_run else f"{rk} ({strat})", lw=1.2)
        ev = g[g.events.fillna("").str.len() > 0]
        if not ev.empty:
            ax.scatter(ev.turn, ev.prompt_tokens, s=10, marker="v")
    ax.set_xlabel("turn")
    ax.set_ylabel("Actor prompt tokens")
    ax.set_title(f"question {qid} (markers: memory events)", fontsize=9)
    ax.legend(fontsize=7)
    f.path = _save(fig, out, f.name)
    return f


def _bars(df: pd.DataFrame, value: str, ylabel: str, d: ReportData, out: Path, f: Figure) -> Figure:
    plt = _plt()
    labels = {r.run_key: r.label for r in d.runs}
    piv = df.pivot_table(index="run_key", columns="profile", values=value, aggfunc="first")
    piv.index = [labels.get(k, k) for k in piv.index]
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(piv)), 4.2))
    piv.plot.bar(ax=ax, rot=20)
    ax.set_ylabel(ylabel)
    ax.legend(title="cache profile", fontsize=7)
    f.path = _save(fig, out, f.name)
    return f


def cache_hit_rate(d: ReportData, out: Path) -> Figure:
    f = Figure("cache_hit_rate", "Simulated prefix-cache hit rate of Actor prompts, per cache profile")
    df = d.cache.dropna(subset=["hit_rate"])
    if df.empty:
        f.note = "no per-profile cache numbers recorded"
        return f
    return _bars(df, "hit_rate", "cached / prompt tokens", d, out, f)


def prefill_tokens(d: ReportData, out: Path) -> Figure:
    f = Figure("prefill_tokens", "Prefill tokens per question (Actor + background calls), per cache profile")
    df = d.prefill.dropna(subset=["prefill_per_question"])
    if df.empty:
        f.note = "no per-profile prefill numbers recorded"
        return f
    return _bars(df, "prefill_per_question", "prefill tokens / question", d, out, f)


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of points not dominated (lower x and higher y are better), sorted by x."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    front, best = [], float("-inf")
    for i in order:
        if points[i][1] > best:
            front.append(i)
            best = points[i][1]
    return front


def _scatter(d: ReportData, out: Path, f: Figure, xs: dict[str, float], xlabel: str) -> Figure:
    pts = [(k, x, d.metrics[k].overall.acc) for k, x in xs.items() if x == x and d.metrics[k].overall.n]
    if len(pts) < 1:
        f.note = f"no run has both accuracy and {xlabel}"
        return f
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    labels = {r.run_key: r.label for r in d.runs}
    for k, x, y in pts:
        ax.scatter([x], [y])
        ax.annotate(labels.get(k, k), (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
    front = [pts[i] for i in pareto_front([(x, y) for _, x, y in pts])]
    ax.plot([p[1] for p in front], [p[2] for p in front], "k--", lw=1, label="Pareto frontier")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("overall accuracy (micro)")
    ax.legend(fontsize=7)
    f.path = _save(fig, out, f.name)
    return f


def accuracy_vs_cost(d: ReportData, out: Path) -> Figure:
    f = Figure("accuracy_vs_cost", "Accuracy against cost per question (Pareto frontier dashed)")
    ext = {r.run_key for r in d.runs if r.external}
    xs = {r.run_key: r.cost_per_question for r in d.cost.itertuples() if r.run_key not in ext}
    return _scatter(d, out, f, {k: float(v) for k, v in xs.items() if pd.notna(v)}, "cost per question (USD)")


def accuracy_vs_prefill(d: ReportData, out: Path) -> Figure:
    f = Figure("accuracy_vs_prefill", "Accuracy against prefill tokens per question (Pareto frontier dashed)")
    if d.prefill.empty:
        f.note = "no per-profile prefill numbers recorded"
        return f
    profile = d.prefill.groupby("profile").run_key.nunique().idxmax()
    f.title += f", cache profile {profile}"
    df = d.prefill[d.prefill.profile == profile]
    return _scatter(d, out, f, dict(zip(df.run_key, df.prefill_per_question.astype(float))), f"prefill tokens / question ({profile})")


def threshold_curves(d: ReportData, out: Path) -> Figure:
    f = Figure("threshold_curves", "OM threshold sweep: accuracy and cache hit rate against the observe threshold")
    rows = []
    for r in d.runs:
        msg, obs = r.om_thresholds()
        if msg is not None and d.metrics[r.run_key].overall.n:
            rows.append({"run_key": r.run_key, "message_tokens": float(msg), "observation_tokens": obs,
                         "accuracy": d.metrics[r.run_key].overall.acc})
    df = pd.DataFrame(rows)
    if df.empty or len(df[["message_tokens", "observation_tokens"]].astype(str).drop_duplicates()) < 2:
        f.note = "no sweep over OM thresholds (needs runs whose config differs in strategy.om.message_tokens/observation_tokens)"
        return f
    hit = d.cache.groupby("run_key").hit_rate.mean() if not d.cache.empty else pd.Series(dtype=float)
    df["hit_rate"] = df.run_key.map(hit)
    plt = _plt()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    for obs, g in df.groupby(df.observation_tokens.astype(str)):
        g = g.sort_values("message_tokens")
        a1.plot(g.message_tokens, g.accuracy, "o-", label=f"observation_tokens={obs}")
        a2.plot(g.message_tokens, g.hit_rate, "o-", label=f"observation_tokens={obs}")
    a1.set_xlabel("message_tokens (observe threshold)")
    a1.set_ylabel("overall accuracy")
    a2.set_xlabel("message_tokens (observe threshold)")
    a2.set_ylabel("mean cache hit rate over profiles")
    a1.legend(fontsize=7)
    f.path = _save(fig, out, f.name)
    return f


ALL = (accuracy_by_type, prompt_over_turns, cache_hit_rate, prefill_tokens, accuracy_vs_cost, accuracy_vs_prefill,
       threshold_curves)
