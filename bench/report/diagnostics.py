"""Memory diagnostics: what became of the Observer's and Reflector's outputs, per run and per question, from the
`memory_outputs` and `memory` tables (om_core's output guards judged every call; bench.store).

Shared by the console summary, the report and the viewer, so the three say the same thing:

* calls by outcome: clean (read from an <observations> block), fallback (observation lines picked out of
  untagged text), rejected (a guard refused it: the reasons are counted), truncated (cut at the output cap);
* compression ratio: the input tokens the accepted Observer calls compressed, over the observation tokens they
  wrote (both o200k);
* reflection generations at question time (mean and max over questions);
* a warning when memory is probably unusable: most outputs refused, or no Observer output accepted at all.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from bench.store.reader import is_missing

OUTCOMES = ("clean", "fallback", "rejected", "truncated")
ROLES = ("observer", "reflector")
UNUSABLE_REFUSED_SHARE = 0.5  # more than this share of outputs refused: memory is probably unusable
MIN_CALLS_FOR_WARNING = 3


@dataclass
class MemoryDiagnostics:
    """One run's (or one question's) Observer and Reflector outputs."""

    questions: int = 0  # questions with at least one Observer/Reflector call
    calls: dict[str, Counter[str]] = field(default_factory=lambda: {r: Counter() for r in ROLES})
    reasons: Counter[str] = field(default_factory=Counter)  # "observer copied_input" -> calls refused for it
    input_tokens: int = 0  # compressed by accepted Observer calls
    output_tokens: int = 0  # observations those calls wrote
    generations: list[int] = field(default_factory=list)  # per question: reflections at question time

    def count(self, role: str, outcome: str | None = None) -> int:
        c = self.calls.get(role, Counter())
        return c[outcome] if outcome else sum(c.values())

    @property
    def total(self) -> int:
        return sum(self.count(r) for r in ROLES)

    @property
    def refused(self) -> int:
        return sum(self.count(r, o) for r in ROLES for o in ("rejected", "truncated"))

    @property
    def compression_ratio(self) -> float | None:
        return self.input_tokens / self.output_tokens if self.output_tokens else None

    @property
    def mean_generation(self) -> float | None:
        return sum(self.generations) / len(self.generations) if self.generations else None

    def outcome_cell(self, role: str) -> str:
        """`clean/fallback/rejected/truncated` calls of a role ("-" without any)."""
        if not self.count(role):
            return "-"
        return "/".join(str(self.count(role, o)) for o in OUTCOMES)

    def top_reasons(self, n: int = 3, *, roles: bool = True) -> str:
        """The n most frequent refusal reasons with their counts ("observer copied_input 12, ..."; `roles=False`
        leaves the role out), "-" without any."""
        return ", ".join(f"{k if roles else k.split(' ', 1)[-1]} {v}" for k, v in self.reasons.most_common(n)) or "-"

    def unusable(self) -> bool:
        if self.total < MIN_CALLS_FOR_WARNING:
            return False
        no_observation = self.count("observer") > 0 and not (self.count("observer", "clean")
                                                             + self.count("observer", "fallback"))
        return no_observation or self.refused / self.total > UNUSABLE_REFUSED_SHARE

    def warning(self, label: str) -> str | None:
        """A warning (two lines of at most 100 columns) when memory is probably unusable, else None."""
        if not self.unusable():
            return None
        return (f"warning: {label}: memory probably unusable: {self.refused} of {self.total} Observer/Reflector "
                f"outputs refused\n  ({self.top_reasons(roles=False)}; per question: `ombench view`)")


def _int(v: Any) -> int:
    return 0 if is_missing(v) else int(v)


def add_rows(d: MemoryDiagnostics, rows: pd.DataFrame) -> MemoryDiagnostics:
    """Add `memory_outputs` rows (any number of questions) to `d`."""
    for r in rows.itertuples():
        d.calls.setdefault(str(r.role), Counter())[str(r.outcome)] += _int(r.calls)
        if r.outcome in ("rejected", "truncated"):
            d.reasons[f"{r.role} {r.reason or r.outcome}"] += _int(r.calls)
        elif r.role == "observer":
            d.input_tokens += _int(r.input_tokens)
            d.output_tokens += _int(r.output_tokens)
    d.questions += rows.question_id.nunique() if "question_id" in rows and len(rows) else 0
    return d


def by_run(outputs: pd.DataFrame, memory_summary: pd.DataFrame | None = None) -> dict[str, MemoryDiagnostics]:
    """Diagnostics of every run that has Observer/Reflector calls (`Results.memory_outputs()`), with the
    generations of `Results.memory_summary()`."""
    out: dict[str, MemoryDiagnostics] = {}
    if outputs.empty:
        return out
    for run_key, rows in outputs.groupby("run_key"):
        d = add_rows(MemoryDiagnostics(), rows)
        if memory_summary is not None and not memory_summary.empty:
            ms = memory_summary[(memory_summary.run_key == run_key)
                                & memory_summary.question_id.isin(set(rows.question_id))]
            d.generations = [_int(g) for g in ms.generation]
        out[str(run_key)] = d
    return out


HEADER = ["observer calls", "reflector calls", "compression", "generations (mean / max)", "refused because"]
LEGEND = ("calls: clean/fallback/rejected/truncated · compression: input tokens per observation token of the "
          "accepted Observer outputs")


def cells(d: MemoryDiagnostics) -> list[str]:
    """The row of a diagnostics table (after the run label): see HEADER."""
    ratio = d.compression_ratio
    gen = "-" if d.mean_generation is None else f"{d.mean_generation:.1f} / {max(d.generations)}"
    return [d.outcome_cell("observer"), d.outcome_cell("reflector"), "-" if ratio is None else f"{ratio:.1f}x",
            gen, d.top_reasons()]
