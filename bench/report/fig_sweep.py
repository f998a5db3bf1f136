"""OM's threshold sweep: accuracy and cache hit rate over `strategies.<key>.params.message_tokens` (the observe
threshold) and `observation_tokens` (the reflect threshold), as a heatmap and as curves.

Only runs that differ in nothing but those two thresholds are drawn together (one *sweep family*: same dataset and
subset, models, answer and judge settings, cache profiles and other strategy params): a run of another dataset or
model at the same thresholds is another experiment, and averaging it in would move the points."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from bench.report.data import ReportData, RunInfo
from bench.report.plotting import Figure, plt, save, skip

X, Y = "message_tokens", "observation_tokens"
# config sections that change what a run measures besides the strategy's params (output, run, gateway do not)
_FAMILY_SECTIONS = ("model", "answer", "judge", "replay", "cachesim")


def sweep_family(r: RunInfo, params: dict[str, Any]) -> str:
    """A key shared by the runs that differ only in the two thresholds (JSON text; compared, never shown)."""
    cfg = r.config or {}
    ds = {k: v for k, v in (cfg.get("dataset") or {}).items() if k != "data_dir"}
    rest = {k: v for k, v in params.items() if k not in (X, Y)}
    parts = [r.dataset, ds, r.kind, r.actor_model, r.judge_model, rest, *(cfg.get(s) for s in _FAMILY_SECTIONS)]
    return json.dumps(parts, sort_keys=True, default=str)


def sweep_points(d: ReportData) -> pd.DataFrame:
    """One row per judged run whose strategy has both threshold params (defaults filled in), with its accuracy,
    its cache hit rate for the report's profile and its sweep family (`sweep_family`)."""
    hit = {}
    if not d.cache.empty:
        c = d.cache[d.cache.profile == d.profile]
        hit = dict(zip(c.run_key, c.hit_rate))
    rows = []
    for r in d.runs:
        p = r.params()
        if X in p and Y in p and d.metrics[r.run_key].overall.n:
            rows.append({"run_key": r.run_key, "kind": r.kind, "family": sweep_family(r, p), "dataset": r.dataset,
                         X: float(p[X]), Y: float(p[Y]), "accuracy": d.metrics[r.run_key].overall.acc,
                         "n": d.metrics[r.run_key].overall.n, "hit_rate": hit.get(r.run_key)})
    return pd.DataFrame(rows)


def sweep_grid(d: ReportData) -> tuple[pd.DataFrame, str]:
    """The points of the figure: the sweep family with the most threshold settings (then the most questions),
    one row per (message_tokens, observation_tokens) with accuracy (runs repeated at one setting pooled by
    questions) and mean hit rate; and a note naming what was left out ("" when nothing). Empty frame: no sweep."""
    df = sweep_points(d)
    if df.empty:
        return df, ""
    sizes = [(len(g[[X, Y]].drop_duplicates()), int(g.n.sum()), fam) for fam, g in df.groupby("family")]
    settings, _, fam = max(sizes, key=lambda s: (s[0], s[1]))
    if settings < 2:
        return pd.DataFrame(), ""
    chosen, others = df[df.family == fam], df[df.family != fam]
    g = chosen.assign(w=chosen.accuracy * chosen.n).groupby([X, Y]).agg(
        w=("w", "sum"), n=("n", "sum"), hit_rate=("hit_rate", "mean")).reset_index()
    g["accuracy"] = g.w / g.n
    note = f"Runs drawn: {_labels(d, chosen.run_key)} ({chosen.dataset.iloc[0] or 'dataset unknown'})."
    if len(others):
        note += f" Left out, as another dataset, subset, model or setting: {_labels(d, others.run_key)}."
    return g, note


def _labels(d: ReportData, keys: Any) -> str:
    """Run labels in natural order (om#2 before om#10)."""
    import re

    return ", ".join(sorted((d.label(k) for k in keys),
                            key=lambda s: [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", s)]))


def threshold_sweep(d: ReportData, out: Path) -> Figure:
    f = Figure("threshold_sweep", f"OM threshold sweep: accuracy and cache hit rate ({d.profile}) against the "
                                  "observe (message_tokens) and reflect (observation_tokens) thresholds")
    g, note = sweep_grid(d)
    if g.empty:
        return skip(f, "no sweep over OM thresholds (needs runs that differ only in strategies.om.params."
                       "message_tokens or observation_tokens: same dataset, subset and models)")
    f.note = note
    p = plt()
    fig, (a0, a1, a2) = p.subplots(1, 3, figsize=(14, 4.2))
    grid = g.pivot(index=Y, columns=X, values="accuracy")
    im = a0.imshow(grid.values, origin="lower", cmap="viridis", vmin=0, vmax=1, aspect="auto")
    a0.set_xticks(range(len(grid.columns)), [f"{v:,.0f}" for v in grid.columns], rotation=30, fontsize=7)
    a0.set_yticks(range(len(grid.index)), [f"{v:,.0f}" for v in grid.index], fontsize=7)
    for (i, j), v in pd.DataFrame(grid.values).stack().items():
        a0.text(j, i, f"{v:.0%}", ha="center", va="center", color="white", fontsize=8)
    a0.set_xlabel(X)
    a0.set_ylabel(Y)
    fig.colorbar(im, ax=a0, label="accuracy")
    for obs, s in g.groupby(Y):
        s = s.sort_values(X)
        a1.plot(s[X], s.accuracy, "o-", label=f"{Y}={obs:,.0f}")
        a2.plot(s[X], s.hit_rate, "o-", label=f"{Y}={obs:,.0f}")
    a1.set_xlabel(f"{X} (observe threshold)")
    a1.set_ylabel("overall accuracy")
    a1.set_ylim(0, 1.05)
    a2.set_xlabel(f"{X} (observe threshold)")
    a2.set_ylabel(f"cache hit rate ({d.profile})")
    a1.legend(fontsize=7)
    f.path = save(fig, out, f.name)
    return f
