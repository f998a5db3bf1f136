"""OM's threshold sweep: accuracy and cache hit rate over `strategies.<key>.params.message_tokens` (the observe
threshold) and `observation_tokens` (the reflect threshold), as a heatmap and as curves."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from bench.report.data import ReportData
from bench.report.plotting import Figure, plt, save, skip

X, Y = "message_tokens", "observation_tokens"


def sweep_points(d: ReportData) -> pd.DataFrame:
    """One row per judged run whose strategy has both threshold params (defaults filled in), with its accuracy
    and its cache hit rate for the report's profile."""
    hit = {}
    if not d.cache.empty:
        c = d.cache[d.cache.profile == d.profile]
        hit = dict(zip(c.run_key, c.hit_rate))
    rows = []
    for r in d.runs:
        p = r.params()
        if X in p and Y in p and d.metrics[r.run_key].overall.n:
            rows.append({"run_key": r.run_key, "kind": r.kind, X: float(p[X]), Y: float(p[Y]),
                         "accuracy": d.metrics[r.run_key].overall.acc, "n": d.metrics[r.run_key].overall.n,
                         "hit_rate": hit.get(r.run_key)})
    return pd.DataFrame(rows)


def threshold_sweep(d: ReportData, out: Path) -> Figure:
    f = Figure("threshold_sweep", f"OM threshold sweep: accuracy and cache hit rate ({d.profile}) against the "
                                  "observe (message_tokens) and reflect (observation_tokens) thresholds")
    df = sweep_points(d)
    if df.empty or len(df[[X, Y]].drop_duplicates()) < 2:
        return skip(f, "no sweep over OM thresholds (needs runs whose strategies.om.params differ in "
                       "message_tokens or observation_tokens)")
    # several runs at one setting (other datasets or models) are averaged, weighted by questions
    g = df.assign(w=df.accuracy * df.n).groupby([X, Y]).agg(w=("w", "sum"), n=("n", "sum"),
                                                            hit_rate=("hit_rate", "mean")).reset_index()
    g["accuracy"] = g.w / g.n
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
