"""Output guards: the one place that decides whether an Observer or Reflector output may become memory.

A guard looks at one `Candidate` (the raw completion, what the parser extracted from it, and the text the model
was asked to compress) and returns a short reason when the output must not be committed, else None. The
callers (`om_core.observer.observe`, `om_core.reflector.reflect`) run `first_rejection` on every attempt:

* Observer: a rejected attempt is regenerated while attempts remain (m31: one regeneration, as Mastra's
  observer-runner.ts does for degenerate output; m11: none), then `RejectedOutputError(reason)` is raised.
* Reflector: a rejected attempt counts as a failed level (m31 climbs the compression ladder; m11 makes its one
  retry); when no attempt is usable, `EmptyReflectionError(reason)` is raised.

The engine (`om_core.engine`) catches those errors: messages stay unobserved, the previous memory is kept, and
the turn records an `observation_rejected` / `reflection_rejected` event with the reason. New guards (copy of
the input, prompt echo, truncation, counting loops...) are functions with the `Guard` signature added to the
lists `observer_guards` / `reflector_guards` return; docs/om-engine.md describes the path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal, Sequence

from om_core.degenerate import detect_degenerate_repetition
from om_core.llm import Completion

GuardRole = Literal["observer", "reflector"]

# reasons of the built-in guards (also the `reason` of the errors and engine rejections they lead to)
DEGENERATE = "degenerate_repetition"
EMPTY = "empty_output"


@dataclass(frozen=True)
class Candidate:
    """One model output on its way to memory."""

    role: GuardRole
    profile: str
    completion: Completion  # the raw completion (text, usage, provider meta such as a finish reason)
    observations: str  # what the parser extracted: the text that would become memory
    source: str  # what the model was asked to compress: the formatted message history, or the observations


Guard = Callable[[Candidate], "str | None"]


def degenerate_guard(c: Candidate) -> str | None:
    """A repetition loop that the source does not have itself (`detect_degenerate_repetition`)."""
    return DEGENERATE if detect_degenerate_repetition(c.completion.text, source=c.source) else None


def empty_guard(c: Candidate) -> str | None:
    """Nothing to commit: an empty output must never mark messages observed nor replace memory."""
    return EMPTY if not c.observations.strip() else None


def observer_guards(degenerate_check: bool) -> list[Guard]:
    """The guards an Observer output passes. `degenerate_check`: m31's repetition check (off in m11 unless
    `OMConfig.degenerate_guard` turns it on)."""
    return [empty_guard, degenerate_guard] if degenerate_check else [empty_guard]


def reflector_guards(degenerate_check: bool) -> list[Guard]:
    """The guards a Reflector output passes (the same rules as the Observer's)."""
    return [empty_guard, degenerate_guard] if degenerate_check else [empty_guard]


def first_rejection(guards: Sequence[Guard], candidate: Candidate) -> str | None:
    """The reason of the first guard that refuses `candidate`, or None when every guard accepts it."""
    for guard in guards:
        reason = guard(candidate)
        if reason:
            return reason
    return None
