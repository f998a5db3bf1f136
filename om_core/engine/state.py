"""Small pieces the orchestrator shares: the turn result, per-scope in-process state, message helpers."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from om_core.tokens import CONVERSATION_OVERHEAD, TokenCounter
from om_core.types import ContextMessage, Message

EVENTS = ("buffer", "activate", "observe", "reflect", "buffer_reflection", "activate_reflection", "temporal_marker")
TEMPORAL_MARKER_PREFIX = "__temporal_gap_"


@dataclass
class TurnContext:
    """What the Actor is given this turn, and what memory did while preparing it."""

    messages: list[ContextMessage]
    events: list[str]
    pending_tokens: int
    observation_tokens: int
    generation: int


@dataclass
class ScopeState:
    """In-process state of one lookup key: the lock, live background operations, buffering boundary."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_boundary: int = 0  # pending tokens at the last buffering trigger (Mastra's lastBufferedBoundary)
    buffer_task: asyncio.Task[None] | None = None
    reflect_task: asyncio.Task[None] | None = None
    suppressed_reflection: int | None = None  # hash of a text whose sync reflection stayed over target

    def buffering_busy(self) -> bool:
        return self.buffer_task is not None and not self.buffer_task.done()

    def reflecting_busy(self) -> bool:
        return self.reflect_task is not None and not self.reflect_task.done()


class MessageTokens:
    """Per-message token counts memoised by id (and content), summed like `TokenCounter.count_messages`."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._memo: dict[str, tuple[str, float]] = {}

    def one(self, m: Message) -> float:
        hit = self._memo.get(m.id)
        if hit is not None and (hit[0] is m.content or hit[0] == m.content):
            return hit[1]
        n = self.counter.count_message(m.role, m.content)
        self._memo[m.id] = (m.content, n)
        return n

    def total(self, messages: Iterable[Message]) -> int:
        n = 0
        s = 0.0
        for m in messages:
            s += self.one(m)
            n += 1
        return round(s + (CONVERSATION_OVERHEAD if n else 0))


def has_pending_tool_call(messages: Iterable[Message]) -> bool:
    return any(tc.state == "call" for m in messages for tc in m.tool_calls)


def safe_prefix(messages: Sequence[Message]) -> list[Message]:
    """Messages before the first one that still waits for a tool result (never buffer half an exchange)."""
    out: list[Message] = []
    for m in messages:
        if any(tc.state == "call" for tc in m.tool_calls):
            break
        out.append(m)
    return out


def retention_tail(observed: Sequence[Message], floor: int, tokens: MessageTokens, keep_ids: set[str]) -> list[Message]:
    """Most recent observed messages whose tokens reach `floor` (oldest removed first), plus the turn's input."""
    kept: list[Message] = []
    total = 0.0
    for m in reversed(observed):
        if total >= floor and m.id not in keep_ids:
            continue
        kept.append(m)
        total += tokens.one(m)
    return kept[::-1]
