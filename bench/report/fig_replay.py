"""Figures of the replay: Actor prompt size over the turns with memory events, OM's Actor prompt split into
memory, raw messages and the rest as each prompt held them, and the simulated prefix cache of one named profile."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from bench.report.data import ReportData, RunInfo
from bench.report.plotting import Figure, plt, save, skip

MARKERS = {"observe": "v", "reflect": "*", "buffer": "o", "activate": "^", "compact": "s", "retrieve": "X",
           "truncate": "d"}  # filled markers only: each takes the run's colour with a black edge
_OTHER_MARKERS = ("D", "P", "X", "h", "p", "<", ">")
MAX_LINES = 8


def marker(event: str) -> str:
    if event in MARKERS:
        return MARKERS[event]
    return _OTHER_MARKERS[sum(map(ord, event)) % len(_OTHER_MARKERS)]  # stable for names added later


def _one_per_strategy(d: ReportData, t: pd.DataFrame) -> tuple[list[RunInfo], str]:
    """One run per strategy (the first by label) and a question as many of them share as possible."""
    chosen: dict[str, RunInfo] = {}
    for r in sorted(d.runs, key=lambda x: x.label):
        if r.run_key in set(t.run_key):
            chosen.setdefault(r.kind, r)
    runs = list(chosen.values())[:MAX_LINES]
    common = t[t.run_key.isin([r.run_key for r in runs])].groupby("question_id").run_key.nunique()
    return runs, str(sorted(common[common == common.max()].index)[0])


def _series(t: pd.DataFrame, rk: str, qid: str) -> pd.DataFrame:
    g = t[(t.run_key == rk) & (t.question_id == qid)]
    if g.empty:  # this run lacks the shared question: its first one
        g = t[t.run_key == rk]
        g = g[g.question_id == sorted(g.question_id.unique())[0]]
    return g


def prompt_over_turns(d: ReportData, out: Path) -> Figure:
    f = Figure("prompt_over_turns", "Actor prompt size over the replay (one question, one run per strategy)")
    t = d.turns.dropna(subset=["prompt_tokens"])
    if t.empty:
        return skip(f, "no per-turn prompt sizes recorded (table `turns` is empty)")
    runs, qid = _one_per_strategy(d, t)
    p = plt()
    fig, ax = p.subplots(figsize=(8.5, 4.6))
    seen: set[str] = set()
    for r in runs:
        g = _series(t, r.run_key, qid)
        ax.plot(g.turn, g.prompt_tokens, label=r.label, lw=1.2, color=r.color)
        ev = g.assign(event=g.events.fillna("").str.split(",")).explode("event")
        for name, e in ev[ev.event.str.len() > 0].groupby("event"):
            ax.scatter(e.turn, e.prompt_tokens, s=22, marker=marker(str(name)), color=r.color, zorder=3,
                       edgecolors="black", linewidths=0.3)
            seen.add(str(name))
    for name in sorted(seen):  # one legend entry per event kind, in black
        ax.scatter([], [], marker=marker(name), color="white", edgecolors="black", label=f"event: {name}")
    ax.set_xlabel("turn")
    ax.set_ylabel("Actor prompt tokens")
    ax.set_title(f"question {qid}; markers: memory events, in the run's colour", fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    f.path = save(fig, out, f.name)
    return f


def split_bands(g: pd.DataFrame) -> tuple[list[float], list[float], list[float], bool]:
    """Per turn: memory, raw-message and other tokens of the Actor's prompt (other = system prompt, OM's
    instructions, message headers: prompt_tokens less the two), and whether any turn's split exceeds its prompt
    (a run recorded before the split was read from the prompt, when raw meant every unobserved token of the
    resource)."""
    mem = [float(v) for v in g.memory_tokens.fillna(0)]
    raw = [float(v) for v in g.raw_tokens.fillna(0)]
    total = [float(v) for v in g.prompt_tokens.fillna(0)]
    rest = [t - m - r for t, m, r in zip(total, mem, raw)]
    return mem, raw, [max(0.0, x) for x in rest], any(x < 0 for x in rest)


def context_split(d: ReportData, out: Path) -> Figure:
    f = Figure("context_split", "Actor context over the replay: what each prompt held (observations, raw messages, "
                                "instructions)")
    t = d.turns.dropna(subset=["memory_tokens"]) if "memory_tokens" in d.turns else pd.DataFrame()
    if t.empty:
        return skip(f, "no run reported its memory/raw split (OM runs record it per turn)")
    runs, qid = _one_per_strategy(d, t)
    runs = runs[:4]
    p = plt()
    fig, axes = p.subplots(1, len(runs), figsize=(4.2 * len(runs) + 1, 3.8), squeeze=False)
    stale = []
    for ax, r in zip(axes[0], runs):
        g = _series(t, r.run_key, qid)
        mem, raw, rest, over = split_bands(g)
        if over:
            stale.append(r.label)
        ax.stackplot(g.turn, mem, raw, rest, labels=["memory (observations)", "raw messages",
                                                     "system prompt and instructions"],
                     colors=[r.color, "#c7c7c7", "#eeeeee"])
        refl = g[g.events.fillna("").str.contains("reflect")]
        for x in refl.turn:
            ax.axvline(x, color="black", lw=0.6, ls=":")
        ax.set_title(f"{r.label}: question {g.question_id.iloc[0]}", fontsize=8)
        ax.set_xlabel("turn (dotted: reflection)")
    axes[0][0].set_ylabel("tokens in the Actor's prompt")
    axes[0][0].legend(fontsize=7, loc="upper left")
    f.path = save(fig, out, f.name)
    f.note = ("Read from each recorded Actor prompt: memory = observation chunks, working memory and hints; raw = "
              "the messages in the prompt (this thread's unobserved tail, other threads' block).")
    if stale:
        f.note += (f" {', '.join(stale)}: recorded before the split was read from the prompt (its raw band is "
                   "the resource's unobserved tokens, more than the Actor saw); rerun to redraw.")
    return f


def _bars(d: ReportData, values: dict[str, float], ylabel: str, out: Path, f: Figure, fmt: str) -> Figure:
    runs = [r for r in d.runs if r.run_key in values]
    p = plt()
    fig, ax = p.subplots(figsize=(max(5.0, 0.6 * len(runs) + 2), 3.8))
    xs = list(range(len(runs)))
    ys = [values[r.run_key] for r in runs]
    ax.bar(xs, ys, 0.7, color=[r.color for r in runs])
    for x, y in zip(xs, ys):
        ax.text(x, y, fmt.format(y), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(xs, [r.label for r in runs], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel(ylabel)
    f.path = save(fig, out, f.name)
    return f


def cache_hit_rate(d: ReportData, out: Path) -> Figure:
    f = Figure("cache_hit_rate", f"Simulated prefix-cache hit rate of Actor prompts, cache profile {d.profile}")
    df = d.cache[(d.cache.profile == d.profile)].dropna(subset=["hit_rate"]) if not d.cache.empty else d.cache
    if df.empty:
        return skip(f, f"no cache numbers for profile {d.profile}")
    return _bars(d, dict(zip(df.run_key, df.hit_rate.astype(float))), f"cached / prompt tokens ({d.profile})",
                 out, f, "{:.0%}")


def prefill_tokens(d: ReportData, out: Path) -> Figure:
    f = Figure("prefill_tokens", f"Prefill tokens per question (Actor + background calls), cache profile {d.profile}")
    df = d.prefill[d.prefill.profile == d.profile].dropna(subset=["prefill_per_question"]) if not d.prefill.empty \
        else d.prefill
    if df.empty:
        return skip(f, f"no prefill numbers for profile {d.profile}")
    return _bars(d, dict(zip(df.run_key, df.prefill_per_question.astype(float))),
                 f"prefill tokens / question ({d.profile})", out, f, "{:,.0f}")
