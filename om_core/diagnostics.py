"""What became of every Observer and Reflector output: one `OutputRecord` per model call, collected by
`collect_outputs()` around any code that runs memory (background tasks started inside keep recording into it,
as they inherit its context).

Nothing is counted when no collector is active, so the records cost nothing to code that does not ask.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Iterator, Literal

from om_core.guards import TRUNCATED, Candidate
from om_core.tokens import TokenCounter, default_counter

Outcome = Literal["clean", "fallback", "rejected", "truncated"]
OUTCOMES: tuple[Outcome, ...] = ("clean", "fallback", "rejected", "truncated")


@dataclass(frozen=True)
class OutputRecord:
    """One Observer or Reflector call and what the output guards made of it.

    outcome: "clean" (accepted, read from an <observations> block), "fallback" (accepted, observation lines
    picked out of untagged text), "rejected" (refused; `reason` names the guard), "truncated" (cut at the output
    cap or context window; asked for once more with a larger cap, then refused). Accepted is not committed: a
    reflection ladder keeps only its last usable attempt. input_tokens: tokens of what the model was asked to
    compress (the formatted history, or the observations); output_tokens: tokens of the parsed observations.
    level: the Reflector's compression level (None for the Observer)."""

    role: str
    outcome: Outcome
    reason: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    level: int | None = None


_SINK: ContextVar[list[OutputRecord] | None] = ContextVar("om_core_output_records", default=None)


@contextmanager
def collect_outputs() -> Iterator[list[OutputRecord]]:
    """`with collect_outputs() as records:` every Observer/Reflector call made inside (and in tasks started
    inside) appends its `OutputRecord`. Nests: an inner block collects its own."""
    records: list[OutputRecord] = []
    token = _SINK.set(records)
    try:
        yield records
    finally:
        _SINK.reset(token)


def collecting() -> bool:
    return _SINK.get() is not None


def outcome_of(candidate: Candidate, reason: str | None) -> Outcome:
    if not reason:
        return "fallback" if candidate.parse_mode == "fallback" else "clean"
    return "truncated" if reason == TRUNCATED else "rejected"


def record_output(candidate: Candidate, reason: str | None, *, counter: TokenCounter | None = None,
                  level: int | None = None) -> None:
    """Record one call's outcome in the active collector (nothing when none is active)."""
    sink = _SINK.get()
    if sink is None:
        return
    c = counter or default_counter()
    sink.append(OutputRecord(
        role=candidate.role, outcome=outcome_of(candidate, reason), reason=reason or "",
        input_tokens=c.count_by_lines(candidate.source), output_tokens=c.count_by_lines(candidate.observations),
        level=level))
