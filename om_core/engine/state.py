"""What the engine steps share with the orchestrator: the turn result, the pending-work snapshot (`Status`),
per-scope in-process state, message helpers, and `EngineContext`, the narrow view of the orchestrator that
every step receives (steps never import `om_core.memory`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any, Coroutine, Iterable, Iterator, Literal, Mapping, Protocol, Sequence

from om_core.config import OMConfig
from om_core.llm import ChatModel
from om_core.records import OMRecord
from om_core.storage.base import Storage
from om_core.tokens import CONVERSATION_OVERHEAD, TokenCounter
from om_core.types import ContextMessage, Message, ToolCall

EVENTS = ("buffer", "activate", "observe", "reflect", "buffer_reflection", "activate_reflection", "temporal_marker",
          "observation_rejected", "reflection_rejected", "degenerate_observation", "degenerate_reflection",
          "observation_deferred", "reflection_deferred", "background_error")
TEMPORAL_MARKER_PREFIX = "__temporal_gap_"
Stage = Literal["observation", "buffer", "reflection", "buffer_reflection"]


@dataclass(frozen=True)
class Rejection:
    """A model output that did not become memory (or, `committed`, became memory although flagged, as m11
    commits a looping output). `reason` is the guard's ("degenerate_repetition", "empty_output", ...) or the
    engine's ("missing_thread_section": a multi-thread output had no section for these threads)."""

    stage: Stage
    reason: str
    lookup_key: str
    thread_ids: tuple[str, ...] = ()
    at: datetime | None = None
    committed: bool = False

    @property
    def events(self) -> list[str]:
        """The event names it shows as: observation_rejected / degenerate_observation (m11, committed);
        reflection_rejected and/or degenerate_reflection (a looping reflection, refused or committed)."""
        if self.stage in ("reflection", "buffer_reflection"):
            loop = ["degenerate_reflection"] if self.reason == "degenerate_repetition" else []
            return loop + ([] if self.committed else ["reflection_rejected"])
        return ["degenerate_observation" if self.committed else "observation_rejected"]


class TurnLog:
    """What memory did during one turn (or in the background between turns): event names in order, and the
    outputs it refused. Behaves like the list of event names for `append`, `in`, iteration and `len`."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.rejections: list[Rejection] = []

    def append(self, event: str) -> None:
        self.events.append(event)

    def reject(self, r: Rejection) -> None:
        self.rejections.append(r)
        self.events += r.events

    def merge(self, other: TurnLog) -> None:
        self.events += other.events
        self.rejections += other.rejections

    def __contains__(self, event: object) -> bool:
        return event in self.events

    def __iter__(self) -> Iterator[str]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)


@dataclass
class TurnContext:
    """What the Actor is given this turn, and what memory did while preparing it: `events` (names, in order;
    docs/om-engine.md lists them) and `rejections` (model outputs memory refused, with their reasons)."""

    messages: list[ContextMessage]
    events: list[str]
    pending_tokens: int
    observation_tokens: int
    generation: int
    rejections: list[Rejection] = field(default_factory=list)


@dataclass
class Status:
    """Pending work of one scope as seen from one thread (Mastra's per-step status check; token counts in
    tokens of the configured encoding)."""

    record: OMRecord
    thread_id: str
    unobserved: Sequence[Message]  # the current thread's unobserved messages, oldest first (read-only)
    others: Mapping[str, Sequence[Message]]  # resource scope: other threads' unobserved messages (read-only)
    other_text: str  # the OTHER-conversations block shown to the Actor ("" when none)
    pending: int  # unobserved tokens of this thread plus the OTHER block
    threshold: int  # observation threshold in force (dynamic with a shared token budget)


REFUSED_RETRY_GROWTH = 0.5  # share of the observation threshold the input must grow by before a refused one is retried


@dataclass
class RefusalBackoff:
    """When a synchronous observation whose output was refused may be tried again (not Mastra's: Mastra commits
    whatever its Observer returns, so it never meets a refusal; docs/om.md, "Deliberate differences").

    A refused input is retried only once it changed materially: the pending tokens grew by at least
    `REFUSED_RETRY_GROWTH` of the threshold since the refusal, doubled for every further refusal in a row (so
    a model that refuses everything costs O(log(history / threshold)) calls, not one per turn), or they fell
    (something else was observed or activated: another input). An accepted observation clears it. Token counts
    in tokens of the configured encoding."""

    at_pending: int | None = None  # pending tokens when the last refusal happened (None: no refusal pending)
    refusals: int = 0  # refusals in a row

    def due(self, pending: int, threshold: int) -> bool:
        """May an observation of `pending` tokens be tried now?"""
        if self.at_pending is None or pending < self.at_pending:
            return True
        return pending - self.at_pending >= self.growth(threshold)

    def growth(self, threshold: int) -> int:
        """Tokens the input must grow by before the next retry."""
        return max(1, round(threshold * REFUSED_RETRY_GROWTH * (1 << max(0, self.refusals - 1))))

    def refused(self, pending: int) -> None:
        self.at_pending = pending
        self.refusals += 1

    def clear(self) -> None:
        self.at_pending, self.refusals = None, 0


@dataclass
class ScopeState:
    """In-process state of one lookup key: the lock, live background operations, buffering boundary."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_boundary: int = 0  # pending tokens at the last buffering trigger (Mastra's lastBufferedBoundary)
    activations: int = 0  # activations so far: a buffer call started before one holds a stale boundary
    buffer_task: asyncio.Task[None] | None = None
    reflect_task: asyncio.Task[None] | None = None
    suppressed_reflection: int | None = None  # hash of a text whose sync reflection stayed over target
    refused_reflection: int | None = None  # hash of a text whose sync reflection was refused (not retried on it)
    observation_backoff: RefusalBackoff = field(default_factory=RefusalBackoff)  # after a refused observation
    # observation tokens when the last background reflection started (Mastra's reflection boundary): no new
    # background reflection until a new generation, or until the observations grew after a failed one
    reflection_boundary: int | None = None
    background: TurnLog = field(default_factory=TurnLog)  # what background work did since the last turn

    def buffering_busy(self) -> bool:
        return self.buffer_task is not None and not self.buffer_task.done()

    def reflecting_busy(self) -> bool:
        return self.reflect_task is not None and not self.reflect_task.done()


class EngineContext(Protocol):
    """Everything an engine step (observe, activate, reflect, resource observation) may use of the
    orchestrator; `ObservationalMemory` implements it. Read-only attributes plus a few services."""

    @property
    def config(self) -> OMConfig: ...

    @property
    def storage(self) -> Storage: ...

    @property
    def observer(self) -> ChatModel: ...

    @property
    def reflector(self) -> ChatModel: ...

    @property
    def counter(self) -> TokenCounter: ...

    @property
    def tokens(self) -> MessageTokens: ...

    @property
    def tz(self) -> tzinfo: ...

    def now(self, default: datetime) -> datetime:
        """The clock for records written by background work (`default`: the starting turn's time)."""
        ...

    def spawn(self, coro: Coroutine[Any, Any, None], key: str | None = None) -> asyncio.Task[None]:
        """Run background work that never raises into a turn (failures go to `record_error`, and to the
        background log of scope `key` as `background_error`)."""
        ...

    def record_error(self, exc: BaseException) -> None: ...

    def background(self, key: str) -> TurnLog:
        """Where background work (buffering, background reflection) of a scope logs; reported with that
        scope's next turn."""
        ...

    def reject(self, log: TurnLog, rejection: Rejection) -> None:
        """Record a refused (or flagged) model output in `log` and in the engine's history."""
        ...

    def group(self, text: str, messages: Sequence[Message]) -> str:
        """Wrap fresh observations of `messages` in an observation group when retrieval mode is on."""
        ...

    def scope_state(self, key: str) -> ScopeState: ...


class MessageTokens:
    """Per-message token counts memoised by id (and content), summed like `TokenCounter.count_messages`.
    `profile` m31 counts each message as 1.31.0 does (`TokenCounter.count_message_split`), m11 as 1.1.0."""

    def __init__(self, counter: TokenCounter, profile: str = "m11") -> None:
        self.counter = counter
        self._count = counter.count_message_split if profile == "m31" else counter.count_message
        self._memo: dict[str, tuple[str, tuple[ToolCall, ...], float]] = {}

    def one(self, m: Message) -> float:
        """Tokens of `m`: its text and its tool calls (name, arguments, full result), with the overheads."""
        hit = self._memo.get(m.id)
        if hit is not None and (hit[0] is m.content or hit[0] == m.content) and \
                (hit[1] is m.tool_calls or hit[1] == m.tool_calls):
            return hit[2]
        n = self._count(m.role, m.content, m.tool_calls)
        self._memo[m.id] = (m.content, m.tool_calls, n)
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
