"""Stored state of Observational Memory: one `OMRecord` per generation, buffered chunks, thread metadata.

The fields follow Mastra's `mastra_observational_memory` table and `BufferedObservationChunk` (mastra-ai/mastra,
packages/core/src/storage/constants.ts and packages/core/src/storage/types.ts).

All records are frozen; storage operations return new values. `to_dict`/`from_dict` give a JSON-safe form
(datetimes as ISO-8601 UTC strings) used by every storage backend and by export/import.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from typing import Any, Literal, Mapping, overload

from om_core.errors import InputError
from om_core.types import Message, ToolCall

OriginType = Literal["initial", "reflection"]

Scope = Literal["thread", "resource"]  # one record per thread, or one per resource (all its threads)


@overload
def iso(ts: datetime) -> str: ...


@overload
def iso(ts: None) -> None: ...


def iso(ts: datetime | None) -> str | None:
    """Fixed-width UTC ISO string (sortable as text)."""
    if ts is None:
        return None
    if ts.tzinfo is None:
        raise InputError(f"timestamp {ts!r} must be timezone-aware (use UTC)")
    return ts.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@overload
def parse_iso(text: str) -> datetime: ...


@overload
def parse_iso(text: str | None) -> datetime | None: ...


def parse_iso(text: str | None) -> datetime | None:
    if text is None:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _dump(obj: Any) -> Any:
    if isinstance(obj, datetime):
        return iso(obj)
    if isinstance(obj, (list, tuple)):
        return [_dump(x) for x in obj]
    if isinstance(obj, Mapping):
        return {k: _dump(v) for k, v in obj.items()}
    return obj


@dataclass(frozen=True)
class BufferedChunk:
    """Observations produced in the background for a run of messages, waiting to be activated."""

    id: str
    cycle_id: str
    observations: str
    token_count: int
    message_ids: tuple[str, ...]
    message_tokens: int
    last_observed_at: datetime  # newest observed message + 1 ms
    created_at: datetime
    first_message_at: datetime | None = None
    suggested_continuation: str | None = None
    current_task: str | None = None
    thread_title: str | None = None
    # working-memory updates of this chunk's Observer output, applied when it activates (None: none)
    working_memory: tuple[tuple[str, str], ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _dump(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "BufferedChunk":
        wm = d.get("working_memory")
        return cls(
            id=d["id"], cycle_id=d["cycle_id"], observations=d["observations"], token_count=int(d["token_count"]),
            message_ids=tuple(d.get("message_ids") or ()), message_tokens=int(d["message_tokens"]),
            last_observed_at=parse_iso(d["last_observed_at"]),
            created_at=parse_iso(d["created_at"]),
            first_message_at=parse_iso(d.get("first_message_at")),
            suggested_continuation=d.get("suggested_continuation"), current_task=d.get("current_task"),
            thread_title=d.get("thread_title"),
            working_memory=tuple((str(a), str(b)) for a, b in wm) if wm is not None else None,
        )


_RECORD_DATES = ("last_observed_at", "last_reflection_at", "last_buffered_at_time", "created_at", "updated_at")


@dataclass(frozen=True)
class OMRecord:
    """One generation of observational memory for a lookup key ("thread:<id>" or "resource:<id>")."""

    id: str
    lookup_key: str
    scope: Scope
    resource_id: str
    thread_id: str | None
    created_at: datetime
    updated_at: datetime
    active_observations: str = ""
    origin_type: OriginType = "initial"
    config: Mapping[str, Any] = field(default_factory=dict)
    generation_count: int = 0
    last_observed_at: datetime | None = None  # messages with created_at ≤ this count as observed
    last_reflection_at: datetime | None = None
    pending_message_tokens: int = 0
    total_tokens_observed: int = 0
    observation_token_count: int = 0
    is_observing: bool = False
    is_reflecting: bool = False
    observed_message_ids: tuple[str, ...] = ()
    observed_timezone: str = "UTC"
    buffered_reflection: str | None = None
    buffered_reflection_tokens: int = 0
    buffered_reflection_input_tokens: int = 0
    reflected_observation_line_count: int = 0
    buffered_observation_chunks: tuple[BufferedChunk, ...] = ()
    is_buffering_observation: bool = False
    is_buffering_reflection: bool = False
    last_buffered_at_tokens: int = 0
    last_buffered_at_time: datetime | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def buffered_message_ids(self) -> set[str]:
        return {mid for c in self.buffered_observation_chunks for mid in c.message_ids}

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "buffered_observation_chunks":
                d[f.name] = [c.to_dict() for c in v]
            else:
                d[f.name] = _dump(v)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "OMRecord":
        kw: dict[str, Any] = {}
        names = {f.name for f in fields(cls)}
        for k, v in d.items():
            if k not in names:
                continue  # tolerate columns written by a newer version
            if k in _RECORD_DATES:
                v = parse_iso(v)
            elif k == "buffered_observation_chunks":
                v = tuple(BufferedChunk.from_dict(c) for c in v or ())
            elif k == "observed_message_ids":
                v = tuple(v or ())
            elif k in ("config", "metadata"):
                v = dict(v or {})
            kw[k] = v
        return cls(**kw)


@dataclass(frozen=True)
class ThreadMeta:
    """Per-thread OM metadata (Mastra keeps it under thread.metadata.mastra.om)."""

    thread_id: str
    resource_id: str
    created_at: datetime
    updated_at: datetime
    title: str | None = None
    current_task: str | None = None
    suggested_response: str | None = None
    thread_title: str | None = None
    last_observed_at: datetime | None = None  # resource scope: this thread's own cursor
    last_observed_message_cursor: str | None = None  # id of the newest observed message
    last_provider: str | None = None  # actor provider seen at the last turn (provider-change trigger)
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _dump(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ThreadMeta":
        kw = dict(d)
        for k in ("created_at", "updated_at", "last_observed_at"):
            kw[k] = parse_iso(kw.get(k))
        kw["extra"] = dict(kw.get("extra") or {})
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in kw.items() if k in names})


@dataclass(frozen=True)
class ActivationResult:
    """What `swap_buffered_to_active` did: the activated prefix and the record after the swap (when nothing
    was activated because the record is no longer the head: that record, or None if it is gone)."""

    record: OMRecord | None
    activated: bool
    cycle_ids: tuple[str, ...] = ()
    message_ids: tuple[str, ...] = ()
    chunk_count: int = 0
    message_tokens: int = 0
    observation_tokens: int = 0
    choice: str = "none"
    last_chunk: BufferedChunk | None = None


# ---- messages ---------------------------------------------------------------------------------


def message_to_dict(m: Message) -> dict[str, Any]:
    # the fields in declaration order, built by hand: `asdict` deep-copies the content (a hot path: every
    # stored message)
    return {"id": m.id, "role": m.role, "content": m.content, "created_at": iso(m.created_at),
            "thread_id": m.thread_id, "resource_id": m.resource_id,
            "tool_calls": [asdict(tc) for tc in m.tool_calls]}


def message_from_dict(d: Mapping[str, Any]) -> Message:
    return Message(
        id=d["id"], role=d["role"], content=d["content"], created_at=parse_iso(d["created_at"]),
        thread_id=d.get("thread_id"), resource_id=d.get("resource_id"),
        tool_calls=tuple(ToolCall(**tc) for tc in d.get("tool_calls") or ()),
    )


def lookup_key(scope: str, resource_id: str, thread_id: str | None) -> str:
    if scope == "resource":
        return f"resource:{resource_id}"
    if not thread_id:
        raise InputError("thread_id: thread scope needs a thread id")
    return f"thread:{thread_id}"
