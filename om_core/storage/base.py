"""The `Storage` protocol: the single source of truth of Observational Memory (modelled on Mastra's memory
storage domain, mastra-ai/mastra packages/core/src/storage/domains/memory/inmemory.ts).

Every state change is one transaction, so a crash between two calls never loses an observation or applies
one twice: mutating calls that would act on a stale head (another writer moved on) return None instead.
All calls are synchronous and short (local SQLite / one Postgres round trip per statement).
What is durable when, and what may be batched: the storage contract in docs/om-engine.md.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Callable, Literal, Protocol, Sequence, runtime_checkable

from om_core.records import ActivationResult, BufferedChunk, OMRecord, Scope, ThreadMeta
from om_core.types import Message
from om_core.working_memory import WorkingMemory

Direction = Literal["forward", "backward"]


@runtime_checkable
class Storage(Protocol):
    # ---- records (one per generation; the newest is the head) ----------------------------------
    def get_record(self, lookup_key: str) -> OMRecord | None: ...

    def get_record_by_id(self, record_id: str) -> OMRecord | None: ...

    def initialize_record(self, *, lookup_key: str, scope: Scope, resource_id: str, thread_id: str | None,
                          now: datetime, config: dict[str, Any] | None = None,
                          timezone: str = "UTC") -> OMRecord: ...

    def history(self, lookup_key: str, limit: int | None = None) -> list[OMRecord]: ...

    def update_active_observations(self, record_id: str, *, observations: str, token_count: int,
                                   last_observed_at: datetime | None, now: datetime,
                                   observed_message_ids: Sequence[str] = (),
                                   expected_last_observed_at: datetime | None | object = ...,
                                   thread_metas: Sequence[ThreadMeta] = ()) -> OMRecord | None: ...

    def append_buffered_chunk(self, lookup_key: str, chunk: BufferedChunk, *, last_buffered_at_tokens: int | None,
                              now: datetime) -> OMRecord | None: ...

    def swap_buffered_to_active(self, record_id: str, *, activation_ratio: float, threshold: int,
                                pending_tokens: int | None, force_max: bool, now: datetime,
                                thread_id: str | None = None,
                                boundary: Callable[[datetime], str] | None = None,
                                plan_pending: int | None = None) -> ActivationResult: ...

    def create_reflection_generation(self, record_id: str, *, reflection: str, token_count: int,
                                     now: datetime) -> OMRecord | None: ...

    def update_buffered_reflection(self, record_id: str, *, reflection: str, token_count: int,
                                   input_tokens: int, line_count: int, now: datetime) -> OMRecord | None: ...

    def swap_buffered_reflection_to_active(self, record_id: str, *, count_tokens: Callable[[str], int],
                                           now: datetime) -> OMRecord | None: ...

    def patch_record(self, record_id: str, *, now: datetime, **fields: Any) -> OMRecord | None: ...

    def clear(self, lookup_key: str) -> None: ...

    # ---- threads ----------------------------------------------------------------------------------
    def get_thread(self, thread_id: str) -> ThreadMeta | None: ...

    def save_thread(self, meta: ThreadMeta) -> None: ...

    def list_threads(self, resource_id: str) -> list[ThreadMeta]: ...

    # ---- working memory (one block per resource; om_core.working_memory) --------------------------
    def get_working_memory(self, resource_id: str) -> WorkingMemory | None: ...

    def save_working_memory(self, memory: WorkingMemory) -> None: ...

    # ---- raw messages (kept for recall and for unobserved selection) -----------------------------
    def add_messages(self, messages: Sequence[Message]) -> None: ...

    def get_message(self, message_id: str) -> Message | None: ...

    def list_messages(self, resource_id: str, thread_id: str | None = None, *, after: datetime | None = None,
                      before: datetime | None = None, limit: int | None = None, cursor: str | None = None,
                      direction: Direction = "forward") -> list[Message]: ...

    def list_unobserved(self, resource_id: str) -> list[tuple[ThreadMeta, Sequence[Message]]]:
        """Each thread of the resource with messages after its `last_observed_at`, with them (`list_threads` order)."""
        ...

    def reading(self) -> AbstractContextManager[None]:
        """Context grouping several read-only calls; writes must not happen inside it."""
        ...

    # ---- checkpoints ------------------------------------------------------------------------------
    def export_state(self, resource_id: str) -> dict[str, Any]: ...

    def import_state(self, state: dict[str, Any]) -> None: ...

    def forget_resource(self, resource_id: str) -> None:
        """Delete everything stored for one resource (records with their history, threads, messages, working
        memory) in one transaction."""
        ...

    def close(self) -> None: ...
