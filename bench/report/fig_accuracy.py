"""Accuracy figures: per question type with Wilson intervals and per-bar n, and the abstention panel."""

from __future__ import annotations

from pathlib import Path

from bench.evaluate.metrics import Acc
from bench.report.data import ReportData
from bench.report.plotting import Figure, plt, save, skip


def _err(accs: list[Acc | None]) -> list[list[float]]:
    # bounds are clamped in metrics.wilson; max(0, ...) keeps a bar whose interval is empty drawable anyway
    lo = [max(0.0, a.acc - a.ci_low) if a and a.n else 0.0 for a in accs]
    hi = [max(0.0, a.ci_high - a.acc) if a and a.n else 0.0 for a in accs]
    return [lo, hi]


def accuracy_by_type(d: ReportData, out: Path) -> Figure:
    f = Figure("accuracy_by_type", "Accuracy by question type (Wilson 95% intervals; n inside each bar)")
    runs = [r for r in d.runs if d.metrics[r.run_key].overall.n]
    if not runs:
        return skip(f, "no judged questions in the database")
    p = plt()
    cats = [t for t in d.types() if any(t in d.metrics[r.run_key].per_type for r in runs)]
    cats += sorted({t for r in runs for t in d.metrics[r.run_key].per_type} - set(cats)) + ["overall"]
    width = 0.8 / len(runs)
    fig, ax = p.subplots(figsize=(max(7.0, 1.1 * len(cats) + 0.35 * len(runs) * len(cats) / 3), 4.6))
    for i, r in enumerate(runs):
        m = d.metrics[r.run_key]
        accs: list[Acc | None] = [m.per_type.get(c) for c in cats[:-1]] + [m.overall]
        xs = [j + (i - (len(runs) - 1) / 2) * width for j in range(len(cats))]
        ys = [a.acc if a and a.n else 0.0 for a in accs]
        ax.bar(xs, ys, width, yerr=_err(accs), capsize=2, color=r.color, label=r.label,
               hatch="//" if r.external else None, edgecolor="white", linewidth=0.3)
        for x, a in zip(xs, accs):
            if a and a.n:
                ax.text(x, 0.02, str(a.n), ha="center", va="bottom", fontsize=5.5, rotation=90, color="white")
    ax.set_xticks(range(len(cats)), [d.short(c) for c in cats])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("accuracy")
    ax.legend(fontsize=7, ncol=min(4, len(runs)), loc="upper center", bbox_to_anchor=(0.5, -0.08), frameon=False)
    f.path = save(fig, out, f.name)
    return f


def abstention(d: ReportData, out: Path) -> Figure:
    f = Figure("abstention", "Abstention: share of unanswerable questions the system declined (Wilson 95%)")
    runs = [r for r in d.runs if d.metrics[r.run_key].abstention.n]
    if not runs:
        return skip(f, "no abstention (unanswerable) questions were judged")
    p = plt()
    fig, ax = p.subplots(figsize=(max(5.0, 0.6 * len(runs) + 2), 3.6))
    accs = [d.metrics[r.run_key].abstention for r in runs]
    xs = list(range(len(runs)))
    ax.bar(xs, [a.acc for a in accs], 0.7, yerr=_err(list(accs)), capsize=3, color=[r.color for r in runs])
    for x, a in zip(xs, accs):
        ax.text(x, min(1.0, a.acc) + 0.02, f"{a.correct}/{a.n}", ha="center", fontsize=7)
    ax.set_xticks(xs, [r.label for r in runs], rotation=30, ha="right", fontsize=7)
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("abstention accuracy")
    f.path = save(fig, out, f.name)
    return f
