"""The report's figures, in order, and the one way to make one: `make(fn, data, out)` never raises (a figure that
fails is skipped with a one-line note in the report and on the console)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

from bench.report.data import ReportData
from bench.report.fig_accuracy import abstention, accuracy_by_type
from bench.report.fig_cost import accuracy_vs_cost, accuracy_vs_prefill, cost_by_role, pareto_front
from bench.report.fig_evidence import evidence_sessions
from bench.report.fig_replay import cache_hit_rate, context_split, prefill_tokens, prompt_over_turns
from bench.report.fig_sweep import threshold_sweep
from bench.report.plotting import Figure
from bench.registry import Registry

FigureFn = Callable[[ReportData, Path], Figure]

# the report's figures, in order (bench.registry): a new one is a function and one entry
FIGURES: Registry[FigureFn] = Registry("report figure", {fn.__name__: fn for fn in (
    accuracy_by_type, abstention, prompt_over_turns, context_split, cache_hit_rate, prefill_tokens,
    accuracy_vs_cost, accuracy_vs_prefill, cost_by_role, threshold_sweep, evidence_sessions,
)})


def make(fn: FigureFn, d: ReportData, out: Path) -> Figure:
    """Draw one figure; on any error, a skipped Figure whose note says what failed (also printed)."""
    try:
        return fn(d, out)
    except Exception as exc:  # a figure never stops the report
        name = getattr(fn, "__name__", "figure")
        msg = str(exc).splitlines()[0] if str(exc) else ""
        print(f"report: figure {name} skipped: {type(exc).__name__}: {msg}", file=sys.stderr)
        try:
            from bench.report.plotting import plt

            plt().close("all")
        except Exception:
            pass
        return Figure(name, name.replace("_", " "), note=f"failed to draw ({type(exc).__name__}: {msg})",
                      failed=True)


__all__ = ["FIGURES", "Figure", "make", "pareto_front"]
