"""Accounting records shared by the gateway, strategies, cache simulators and the store, and the one helper
that collects the calls a block of code made (`collect_calls`)."""

from __future__ import annotations

import contextvars
import itertools
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterator


@dataclass
class CallRecord:
    """One model call, real or simulated. Gateway fills the provider side; cachesim adds per-profile numbers."""

    role: str  # actor | observer | reflector | judge | summarizer | embedder | reader
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens_reported: int = 0
    cache_write_tokens_reported: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True  # False: the model has no price in litellm's map (reported as unpriced, not $0)
    latency_s: float = 0.0
    response_cache_hit: bool = False
    retries: int = 0
    error: str | None = None
    finish_reason: str | None = None  # the provider's: "stop", "length" (cut short), ...
    sim_time: datetime | None = None  # the replay clock when the call was issued
    simulated: bool = False  # True for Actor prompts rendered during replay (no real call made)
    # request messages (for cache simulation) and the reply text: stored (compressed) for question-time calls,
    # and for replay calls only with output.store_prompts=all
    messages: list[dict[str, Any]] | None = None
    response: str | None = None
    # per cache profile: {"openai": {"cached": n, "prefill": n, "write": n, "cost_usd": x}, ...}
    cache: dict[str, dict[str, float]] = field(default_factory=dict)
    # when the call was issued (`issue_number`, process-wide, rising); 0 for records made without a call
    # (simulated Actor prompts). Concurrent calls finish in any order; collectors keep them in issue order, so
    # the cache simulators see them in the same order on every run.
    issued: int = 0


# Where record_call puts calls: the list of the innermost collect_calls() block, if any. A ContextVar, so
# concurrent questions (tasks) each have their own, and the gateway needs no call list threaded through it.
_collector: contextvars.ContextVar[list[CallRecord] | None] = contextvars.ContextVar("call_collector", default=None)


_issued = itertools.count(1)


def issue_number() -> int:
    """The next call issue number (1, 2, ...): taken when a call starts, stored as `CallRecord.issued`."""
    return next(_issued)


def record_call(rec: CallRecord) -> None:
    """Add a call to the innermost `collect_calls()` block of the current task; dropped outside any block.

    A call is placed after every record issued before it: concurrent calls that finish out of order are
    listed in the order they were issued (records with `issued` 0 are never passed). The gateway calls this
    for every model call it makes (and test doubles do the same)."""
    calls = _collector.get()
    if calls is None:
        return
    i = len(calls)
    while rec.issued and i and calls[i - 1].issued > rec.issued:
        i -= 1
    calls.insert(i, rec)


@contextmanager
def collect_calls() -> Iterator[list[CallRecord]]:
    """Collect the calls recorded inside the block: `with collect_calls() as calls: ...` -> list[CallRecord].

    The one way to learn which model calls a piece of code made. Blocks nest: an inner block takes the calls
    made inside it and the outer block never sees them (whoever opened the inner block returns them
    explicitly). Asyncio tasks started inside the block keep recording into its list, also after it closes
    (a context is copied when a task starts), so background work finishing late is not lost.
    """
    calls: list[CallRecord] = []
    token = _collector.set(calls)
    try:
        yield calls
    finally:
        _collector.reset(token)
