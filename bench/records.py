"""Accounting records shared by the gateway, strategies, cache simulators and the store."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


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
    latency_s: float = 0.0
    response_cache_hit: bool = False
    retries: int = 0
    error: str | None = None
    sim_time: datetime | None = None  # the replay clock when the call was issued
    simulated: bool = False  # True for Actor prompts rendered during replay (no real call made)
    messages: list[dict[str, Any]] | None = None  # request messages (for cache simulation); not persisted
    # per cache profile: {"openai": {"cached": n, "prefill": n, "write": n, "cost_usd": x}, ...}
    cache: dict[str, dict[str, float]] = field(default_factory=dict)


# The collector of the question being processed. The gateway appends every call it makes to it, so
# strategies never need to thread call lists through their APIs.
current_calls: contextvars.ContextVar[list[CallRecord] | None] = contextvars.ContextVar("current_calls", default=None)


def record_call(rec: CallRecord) -> None:
    calls = current_calls.get()
    if calls is not None:
        calls.append(rec)
