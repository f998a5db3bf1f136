"""The storage operations of Mastra's in-memory adapter (mastra-ai/mastra,
packages/core/src/storage/domains/memory/inmemory.ts), written once over a handful of backend primitives.

A backend supplies a transaction context and load/save primitives; every public operation here runs inside
exactly one transaction, so it either happens completely or not at all.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, Callable, Iterable, Sequence

from om_core.activation import plan_activation
from om_core.errors import FormatVersionError, InputError
from om_core.records import (
    ActivationResult,
    BufferedChunk,
    OMRecord,
    Scope,
    ThreadMeta,
    iso,
    message_from_dict,
    message_to_dict,
)
from om_core.storage.base import Direction
from om_core.types import Message
from om_core.working_memory import WorkingMemory

MessageKey = tuple[str, int]  # (ISO created_at, insertion seq): the total order of stored messages
_KEEP: Any = ...  # "argument not given" marker for compare-and-set guards
EXPORT_VERSION = 2  # 2: snapshots carry the resource's working memory
READABLE_EXPORT_VERSIONS = (1, 2)  # a version-1 snapshot has no working memory
_PATCHABLE = {
    "is_observing", "is_reflecting", "is_buffering_observation", "is_buffering_reflection",
    "pending_message_tokens", "last_buffered_at_tokens", "last_buffered_at_time", "metadata", "config",
}


def _default_boundary(ts: datetime) -> str:
    from om_core.context import message_boundary  # late import: storage does not need the renderer otherwise

    return message_boundary(ts)


class BaseStorage(ABC):
    """Implements the `Storage` protocol on top of the abstract primitives below."""

    # ---- primitives ---------------------------------------------------------------------------
    @abstractmethod
    def _tx(self) -> AbstractContextManager[None]: ...

    @abstractmethod
    def _load_head(self, lookup_key: str) -> OMRecord | None: ...

    @abstractmethod
    def _load_record(self, record_id: str) -> OMRecord | None: ...

    @abstractmethod
    def _load_history(self, lookup_key: str) -> list[OMRecord]:
        """All generations, newest first."""

    @abstractmethod
    def _save_record(self, rec: OMRecord) -> None: ...

    @abstractmethod
    def _delete_records(self, lookup_key: str) -> None: ...

    @abstractmethod
    def _lookup_keys(self, resource_id: str) -> list[str]: ...

    @abstractmethod
    def _delete_resource(self, resource_id: str) -> None:
        """Delete the resource's records, threads, messages and working memory (inside a transaction)."""

    @abstractmethod
    def _load_thread(self, thread_id: str) -> ThreadMeta | None: ...

    @abstractmethod
    def _save_thread(self, meta: ThreadMeta) -> None: ...

    @abstractmethod
    def _load_threads(self, resource_id: str) -> list[ThreadMeta]: ...

    @abstractmethod
    def _load_working_memory(self, resource_id: str) -> WorkingMemory | None: ...

    @abstractmethod
    def _save_working_memory(self, resource_id: str, memory: WorkingMemory | None) -> None:
        """Store the resource's block (None: remove it)."""

    @abstractmethod
    def _save_messages(self, messages: Sequence[Message]) -> None:
        """Upsert by id; an existing message keeps its place (seq) in the order."""

    @abstractmethod
    def _message_key(self, message_id: str) -> tuple[MessageKey, Message] | None: ...

    @abstractmethod
    def _query_messages(self, resource_id: str, thread_id: str | None, lower: MessageKey | None,
                        upper: MessageKey | None, limit: int | None, descending: bool) -> list[Message]:
        """Messages with lower < key < upper (both exclusive), in key order (reversed if descending)."""

    def _read(self) -> AbstractContextManager[None]:
        """Context of a read-only operation; a backend may serve it without opening a write transaction."""
        return self._tx()

    def reading(self) -> AbstractContextManager[None]:
        """Group several read-only calls (e.g. one status check): the backend validates its read cache once."""
        return self._read()

    def close(self) -> None:
        return None

    # ---- records --------------------------------------------------------------------------------
    def get_record(self, lookup_key: str) -> OMRecord | None:
        with self._read():
            return self._load_head(lookup_key)

    def get_record_by_id(self, record_id: str) -> OMRecord | None:
        with self._read():
            return self._load_record(record_id)

    def history(self, lookup_key: str, limit: int | None = None) -> list[OMRecord]:
        with self._tx():
            recs = self._load_history(lookup_key)
        return recs if limit is None else recs[:limit]

    def initialize_record(self, *, lookup_key: str, scope: Scope, resource_id: str, thread_id: str | None,
                          now: datetime, config: dict[str, Any] | None = None, timezone: str = "UTC") -> OMRecord:
        """Return the head, creating generation 0 (nothing observed yet) when the key has none."""
        with self._tx():
            head = self._load_head(lookup_key)
            if head is not None:
                return head
            rec = OMRecord(id=f"om-{uuid.uuid4().hex}", lookup_key=lookup_key, scope=scope,
                           resource_id=resource_id, thread_id=thread_id if scope == "thread" else None,
                           created_at=now, updated_at=now, config=dict(config or {}), observed_timezone=timezone)
            self._save_record(rec)
            return rec

    def _current(self, record_id: str) -> OMRecord | None:
        """The record if it is still the head of its key; None when a newer generation exists."""
        rec = self._load_record(record_id)
        if rec is None:
            return None
        head = self._load_head(rec.lookup_key)
        return rec if head is not None and head.id == rec.id else None

    def update_active_observations(self, record_id: str, *, observations: str, token_count: int,
                                   last_observed_at: datetime | None, now: datetime,
                                   observed_message_ids: Sequence[str] = (),
                                   expected_last_observed_at: datetime | None | object = _KEEP,
                                   thread_metas: Sequence[ThreadMeta] = ()) -> OMRecord | None:
        """Replace the observation text after a synchronous observation; thread metadata (hints, per-thread
        cursors) is written in the same transaction. Returns None if the head moved on (compare-and-set).

        A synchronous observation covers what was pending, so the stored buffering boundary restarts from 0
        and a buffered chunk holding any of the observed messages is dropped (activating it later would
        observe those messages twice)."""
        with self._tx():
            rec = self._current(record_id)
            if rec is None:
                return None
            if expected_last_observed_at is not _KEEP and rec.last_observed_at != expected_last_observed_at:
                return None
            observed = set(observed_message_ids)
            chunks = tuple(c for c in rec.buffered_observation_chunks if not observed.intersection(c.message_ids))
            new = replace(rec, active_observations=observations, observation_token_count=token_count,
                          total_tokens_observed=rec.total_tokens_observed + token_count, pending_message_tokens=0,
                          last_observed_at=last_observed_at, observed_message_ids=tuple(observed_message_ids),
                          buffered_observation_chunks=chunks, last_buffered_at_tokens=0, updated_at=now)
            self._save_record(new)
            for meta in thread_metas:
                self._save_thread(meta)
            return new

    def append_buffered_chunk(self, lookup_key: str, chunk: BufferedChunk, *, last_buffered_at_tokens: int | None,
                              now: datetime) -> OMRecord | None:
        """Add a chunk to the head; idempotent by cycle id; refused if any of its messages is already
        buffered or observed (the head moved on while the Observer ran). `last_buffered_at_tokens` None keeps
        the stored buffering boundary (the caller's count is stale: an activation moved it meanwhile)."""
        with self._tx():
            rec = self._load_head(lookup_key)
            if rec is None:
                return None
            if any(c.cycle_id == chunk.cycle_id for c in rec.buffered_observation_chunks):
                return rec
            if rec.buffered_message_ids() & set(chunk.message_ids):
                return None
            if rec.last_observed_at and chunk.first_message_at and chunk.first_message_at <= rec.last_observed_at:
                return None
            new = replace(rec, buffered_observation_chunks=rec.buffered_observation_chunks + (chunk,),
                          last_buffered_at_tokens=rec.last_buffered_at_tokens if last_buffered_at_tokens is None
                          else last_buffered_at_tokens,
                          last_buffered_at_time=chunk.last_observed_at, updated_at=now)
            self._save_record(new)
            return new

    def swap_buffered_to_active(self, record_id: str, *, activation_ratio: float, threshold: int,
                                pending_tokens: int | None, force_max: bool, now: datetime,
                                thread_id: str | None = None,
                                boundary: Callable[[datetime], str] | None = None,
                                plan_pending: int | None = None) -> ActivationResult:
        """Activate a prefix of the buffered chunks (Mastra's `swapBufferedToActive`) and copy the last chunk's
        hints to the thread. `plan_pending`: the pending count the prefix is chosen from when it is not the
        current one (m31: the count stored at the end of the previous step, as Mastra 1.31.0 passes
        `record.pendingMessageTokens`); the current count (`pending_tokens`) still gives what remains pending."""
        boundary = boundary or _default_boundary
        with self._tx():
            rec = self._current(record_id)
            if rec is None:
                head = self._load_record(record_id)
                return ActivationResult(record=head, activated=False)
            chunks = rec.buffered_observation_chunks
            if not chunks:
                return ActivationResult(record=rec, activated=False)
            pending = pending_tokens or rec.pending_message_tokens or sum(c.message_tokens for c in chunks)
            plan = plan_activation([c.message_tokens for c in chunks], pending if plan_pending is None else plan_pending,
                                   threshold, activation_ratio, force_max)
            done, rest = chunks[: plan.count], chunks[plan.count:]
            text = "\n\n".join(c.observations for c in done if c.observations.strip())
            if rec.active_observations and text:  # stamped with the newest message the activated text covers
                merged = rec.active_observations + boundary(done[-1].last_observed_at) + text
            else:
                merged = rec.active_observations or text
            obs_tokens = sum(c.token_count for c in done)
            msg_tokens = sum(c.message_tokens for c in done)
            remaining = max(0, pending - msg_tokens)
            # The boundary counts pending tokens, which just dropped by the activated messages: shift it down
            # with them, so the next interval can be crossed (Mastra keeps it unless the pending count fell
            # below half of it, its stale-boundary reset, which still applies).
            shifted = max(0, rec.last_buffered_at_tokens - msg_tokens)
            boundary_tokens = 0 if remaining < 0.5 * rec.last_buffered_at_tokens else shifted
            new = replace(rec, active_observations=merged, observation_token_count=rec.observation_token_count + obs_tokens,
                          total_tokens_observed=rec.total_tokens_observed + obs_tokens,
                          pending_message_tokens=remaining, last_buffered_at_tokens=boundary_tokens,
                          last_observed_at=done[-1].last_observed_at, buffered_observation_chunks=rest, updated_at=now)
            self._save_record(new)
            last = done[-1]
            if thread_id:
                meta = self._load_thread(thread_id)
                if meta is not None:  # the last activated chunk's hints (or none), as Mastra 1.31.0 applies them
                    self._save_thread(replace(meta, current_task=last.current_task,
                                              suggested_response=last.suggested_continuation,
                                              thread_title=last.thread_title or meta.thread_title, updated_at=now))
            return ActivationResult(
                record=new, activated=True, cycle_ids=tuple(c.cycle_id for c in done),
                message_ids=tuple(m for c in done for m in c.message_ids), chunk_count=len(done),
                message_tokens=msg_tokens, observation_tokens=obs_tokens, choice=plan.choice, last_chunk=last)

    def create_reflection_generation(self, record_id: str, *, reflection: str, token_count: int,
                                     now: datetime) -> OMRecord | None:
        """Insert generation+1 holding the reflection; the old record stays as history."""
        with self._tx():
            rec = self._current(record_id)
            return None if rec is None else self._new_generation(rec, reflection, token_count, now)

    def _new_generation(self, rec: OMRecord, reflection: str, token_count: int, now: datetime) -> OMRecord:
        created = max(now, rec.created_at + timedelta(microseconds=1))
        new = OMRecord(
            id=f"om-{uuid.uuid4().hex}", lookup_key=rec.lookup_key, scope=rec.scope, resource_id=rec.resource_id,
            thread_id=rec.thread_id, created_at=created, updated_at=now, active_observations=reflection,
            origin_type="reflection", config=dict(rec.config), generation_count=rec.generation_count + 1,
            last_observed_at=rec.last_observed_at, last_reflection_at=now, pending_message_tokens=0,
            total_tokens_observed=rec.total_tokens_observed, observation_token_count=token_count,
            observed_timezone=rec.observed_timezone, metadata=dict(rec.metadata))
        self._save_record(new)
        return new

    def update_buffered_reflection(self, record_id: str, *, reflection: str, token_count: int,
                                   input_tokens: int, line_count: int, now: datetime) -> OMRecord | None:
        with self._tx():
            rec = self._current(record_id)
            if rec is None:
                return None
            text = f"{rec.buffered_reflection}\n\n{reflection}" if rec.buffered_reflection else reflection
            new = replace(rec, buffered_reflection=text,
                          buffered_reflection_tokens=rec.buffered_reflection_tokens + token_count,
                          buffered_reflection_input_tokens=rec.buffered_reflection_input_tokens + input_tokens,
                          reflected_observation_line_count=line_count, is_buffering_reflection=False, updated_at=now)
            self._save_record(new)
            return new

    def swap_buffered_reflection_to_active(self, record_id: str, *, count_tokens: Callable[[str], int],
                                           now: datetime) -> OMRecord | None:
        """New generation = buffered reflection + the observation lines added after it was computed."""
        with self._tx():
            rec = self._current(record_id)
            if rec is None or not rec.buffered_reflection:
                return None
            lines = rec.active_observations.split("\n")
            tail = "\n".join(lines[rec.reflected_observation_line_count:]).strip()
            text = rec.buffered_reflection + ("\n\n" + tail if tail else "")
            self._save_record(replace(rec, buffered_reflection=None, buffered_reflection_tokens=0,
                                      buffered_reflection_input_tokens=0, reflected_observation_line_count=0,
                                      updated_at=now))
            return self._new_generation(rec, text, count_tokens(text), now)

    def patch_record(self, record_id: str, *, now: datetime, **fields: Any) -> OMRecord | None:
        """Set flags and counters (is_* hints, pending tokens, buffering boundary) on the head."""
        bad = set(fields) - _PATCHABLE
        if bad:
            raise InputError(f"patch_record: fields {sorted(bad)} cannot be patched; use the dedicated operation")
        with self._tx():
            rec = self._current(record_id)
            if rec is None:
                return None
            new = replace(rec, updated_at=now, **fields)
            self._save_record(new)
            return new

    def clear(self, lookup_key: str) -> None:
        with self._tx():
            self._delete_records(lookup_key)

    # ---- threads -----------------------------------------------------------------------------------
    def get_thread(self, thread_id: str) -> ThreadMeta | None:
        with self._read():
            return self._load_thread(thread_id)

    def save_thread(self, meta: ThreadMeta) -> None:
        with self._tx():
            self._save_thread(meta)

    def list_threads(self, resource_id: str) -> list[ThreadMeta]:
        with self._read():
            return sorted(self._load_threads(resource_id), key=lambda t: (t.created_at, t.thread_id))

    # ---- working memory ----------------------------------------------------------------------------
    def get_working_memory(self, resource_id: str) -> WorkingMemory | None:
        """The resource's working memory, or None when it has none."""
        with self._read():
            return self._load_working_memory(resource_id)

    def save_working_memory(self, memory: WorkingMemory) -> None:
        """Replace the resource's working memory (one transaction)."""
        if not memory.resource_id:
            raise InputError("working memory: resource_id is required to store it")
        iso(memory.updated_at)  # rejects naive datetimes with a clear message
        with self._tx():
            self._save_working_memory(memory.resource_id, memory)

    # ---- messages ----------------------------------------------------------------------------------
    def add_messages(self, messages: Sequence[Message]) -> None:
        for m in messages:
            if not m.resource_id or not m.thread_id:
                raise InputError(f"message {m.id!r}: resource_id and thread_id are required to store it")
            if m.created_at.tzinfo is None:
                iso(m.created_at)  # rejects naive datetimes with a clear message (aware ones are stored as iso)
        with self._tx():
            self._save_messages(list(messages))

    def get_message(self, message_id: str) -> Message | None:
        with self._read():
            hit = self._message_key(message_id)
        return None if hit is None else hit[1]

    def list_unobserved(self, resource_id: str) -> list[tuple[ThreadMeta, Sequence[Message]]]:
        """Every thread of the resource that has stored messages after its `last_observed_at` (as
        `list_messages(after=...)` gives them), with those messages, in `list_threads` order: what a
        resource-scope status check reads at every step. The sequences are read-only; a backend with a read
        cache keeps the answer and re-reads only the threads written since."""
        with self._read():
            return self._load_unobserved(resource_id)

    def _load_unobserved(self, resource_id: str) -> list[tuple[ThreadMeta, Sequence[Message]]]:
        threads = sorted(self._load_threads(resource_id), key=lambda t: (t.created_at, t.thread_id))
        tails = ((t, self._query_messages(resource_id, t.thread_id, after_key(t.last_observed_at), None, None, False))
                 for t in threads)
        return [(t, ms) for t, ms in tails if ms]

    def list_messages(self, resource_id: str, thread_id: str | None = None, *, after: datetime | None = None,
                      before: datetime | None = None, limit: int | None = None, cursor: str | None = None,
                      direction: Direction = "forward") -> list[Message]:
        """Stored messages in chronological order. `after`/`before` are exclusive times; `cursor` is a message
        id: forward lists what follows it, backward the `limit` messages just before it."""
        lower = after_key(after)
        upper: MessageKey | None = (iso(before), -1) if before else None
        with self._read():
            if cursor is not None:
                hit = self._message_key(cursor)
                if hit is None:
                    raise InputError(f"cursor: message {cursor!r} not found; pass an id of a stored message")
                key = hit[0]
                if direction == "forward":
                    lower = key if lower is None or key > lower else lower
                else:
                    upper = key if upper is None or key < upper else upper
            rows = self._query_messages(resource_id, thread_id, lower, upper, limit, direction == "backward")
        return rows[::-1] if direction == "backward" else rows

    # ---- checkpoints -------------------------------------------------------------------------------
    def export_state(self, resource_id: str) -> dict[str, Any]:
        """Everything stored for one resource as JSON-safe data (records with history, threads, messages, its
        working memory)."""
        with self._tx():
            records = [r.to_dict() for key in self._lookup_keys(resource_id) for r in reversed(self._load_history(key))]
            threads = [t.to_dict() for t in self._load_threads(resource_id)]
            messages = [message_to_dict(m) for m in self._query_messages(resource_id, None, None, None, None, False)]
            working = self._load_working_memory(resource_id)
        return {"version": EXPORT_VERSION, "resource_id": resource_id, "records": records,
                "threads": threads, "messages": messages,
                "working_memory": working.to_dict() if working is not None else None}

    def forget_resource(self, resource_id: str) -> None:
        """Delete everything stored for one resource (records with their history, threads, messages, working
        memory) in one transaction: a store that is a cache of a replay starts that replay from nothing."""
        with self._tx():
            self._delete_resource(resource_id)

    def import_state(self, state: dict[str, Any]) -> None:
        """Load an `export_state` snapshot in one transaction, replacing everything stored for its resource
        (records, threads, messages, working memory): afterwards the store holds exactly the snapshot. Reads
        snapshot versions 1 (no working memory) and 2."""
        if state.get("version") not in READABLE_EXPORT_VERSIONS:
            raise FormatVersionError(
                f"import_state: snapshot version {state.get('version')!r}, this om_core reads versions "
                f"{', '.join(map(str, READABLE_EXPORT_VERSIONS))}; export it again with this om_core (or replay "
                "the conversation)",
                where="export_state snapshot", found=state.get("version"), expected=EXPORT_VERSION)
        resource_id = state["resource_id"]
        with self._tx():
            self._delete_resource(resource_id)
            for r in state.get("records", []):
                self._save_record(OMRecord.from_dict(r))
            for t in state.get("threads", []):
                self._save_thread(ThreadMeta.from_dict(t))
            self._save_messages([message_from_dict(m) for m in state.get("messages", [])])
            working = state.get("working_memory")
            self._save_working_memory(resource_id, WorkingMemory.from_dict(working) if working else None)


def after_key(t: datetime | None) -> MessageKey | None:
    """The exclusive lower message key of "created after t" (every seq at that instant is included in t)."""
    return (iso(t), 1 << 62) if t else None


def newest_first(records: Iterable[OMRecord]) -> list[OMRecord]:
    return sorted(records, key=lambda r: r.generation_count, reverse=True)
