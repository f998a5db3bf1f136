"""In-process storage: dictionaries plus an undo log, so a failing operation leaves nothing half-written."""

from __future__ import annotations

import bisect
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

from om_core.records import OMRecord, ThreadMeta, iso
from om_core.storage.ops import BaseStorage, MessageKey, newest_first
from om_core.types import Message
from om_core.working_memory import WorkingMemory


class InMemoryStorage(BaseStorage):
    def __init__(self) -> None:
        self._records: dict[str, OMRecord] = {}
        self._by_key: dict[str, set[str]] = {}
        self._threads: dict[str, ThreadMeta] = {}
        self._messages: dict[str, tuple[MessageKey, Message]] = {}
        self._working: dict[str, WorkingMemory] = {}
        # sorted (key, id) lists per resource and per (resource, thread)
        self._index: dict[tuple[str, str | None], list[tuple[MessageKey, str]]] = {}
        self._seq = 0
        self._lock = threading.RLock()
        self._undo: list[Callable[[], None]] | None = None

    @contextmanager
    def _tx(self) -> Iterator[None]:
        with self._lock:
            if self._undo is not None:  # nested: the outer transaction owns the undo log
                yield
                return
            self._undo = []
            try:
                yield
            except BaseException:
                for undo in reversed(self._undo):
                    undo()
                raise
            finally:
                self._undo = None

    def _log(self, fn: Callable[[], None]) -> None:
        if self._undo is not None:
            self._undo.append(fn)

    # ---- records --------------------------------------------------------------------------------
    def _load_head(self, lookup_key: str) -> OMRecord | None:
        recs = self._load_history(lookup_key)
        return recs[0] if recs else None

    def _load_record(self, record_id: str) -> OMRecord | None:
        return self._records.get(record_id)

    def _load_history(self, lookup_key: str) -> list[OMRecord]:
        return newest_first(self._records[i] for i in self._by_key.get(lookup_key, ()))

    def _save_record(self, rec: OMRecord) -> None:
        old = self._records.get(rec.id)
        ids = self._by_key.setdefault(rec.lookup_key, set())
        was_member = rec.id in ids

        def undo() -> None:
            if old is None:
                self._records.pop(rec.id, None)
            else:
                self._records[rec.id] = old
            if not was_member:
                ids.discard(rec.id)

        self._log(undo)
        self._records[rec.id] = rec
        ids.add(rec.id)

    def _delete_records(self, lookup_key: str) -> None:
        ids = self._by_key.pop(lookup_key, set())
        removed = {i: self._records.pop(i) for i in ids if i in self._records}

        def undo() -> None:
            self._by_key[lookup_key] = ids
            self._records.update(removed)

        self._log(undo)

    def _delete_resource(self, resource_id: str) -> None:
        for lookup_key in self._lookup_keys(resource_id):
            self._delete_records(lookup_key)
        for t in self._load_threads(resource_id):
            self._threads.pop(t.thread_id)

            def undo_thread(t: ThreadMeta = t) -> None:
                self._threads[t.thread_id] = t

            self._log(undo_thread)
        for _, mid in list(self._index.get((resource_id, None), [])):
            key, m = self._messages.pop(mid)
            self._unindex(key, m)

            def undo(key: MessageKey = key, m: Message = m) -> None:
                self._messages[m.id] = (key, m)
                self._reindex(key, m)

            self._log(undo)
        self._save_working_memory(resource_id, None)

    def _lookup_keys(self, resource_id: str) -> list[str]:
        return sorted({r.lookup_key for r in self._records.values() if r.resource_id == resource_id})

    # ---- threads --------------------------------------------------------------------------------
    def _load_thread(self, thread_id: str) -> ThreadMeta | None:
        return self._threads.get(thread_id)

    def _save_thread(self, meta: ThreadMeta) -> None:
        old = self._threads.get(meta.thread_id)
        def undo() -> None:
            if old:
                self._threads[meta.thread_id] = old
            else:
                self._threads.pop(meta.thread_id, None)

        self._log(undo)
        self._threads[meta.thread_id] = meta

    def _load_threads(self, resource_id: str) -> list[ThreadMeta]:
        return [t for t in self._threads.values() if t.resource_id == resource_id]

    # ---- working memory -------------------------------------------------------------------------
    def _load_working_memory(self, resource_id: str) -> WorkingMemory | None:
        return self._working.get(resource_id)

    def _save_working_memory(self, resource_id: str, memory: WorkingMemory | None) -> None:
        old = self._working.get(resource_id)

        def undo() -> None:
            if old is None:
                self._working.pop(resource_id, None)
            else:
                self._working[resource_id] = old

        self._log(undo)
        if memory is None:
            self._working.pop(resource_id, None)
        else:
            self._working[resource_id] = memory

    # ---- messages -------------------------------------------------------------------------------
    def _save_messages(self, messages: Sequence[Message]) -> None:
        for m in messages:
            old = self._messages.get(m.id)
            if old is not None and iso(old[1].created_at) == iso(m.created_at) and old[1].thread_id == m.thread_id:
                key = old[0]  # same place in the order: only the content changes
            else:
                if old is not None:
                    self._unindex(old[0], old[1])
                self._seq += 1
                key = (iso(m.created_at), self._seq)
                self._reindex(key, m)
            self._messages[m.id] = (key, m)
            self._log(self._restore_message(m, old, key))

    def _restore_message(self, m: Message, old: tuple[MessageKey, Message] | None, key: MessageKey) -> Callable[[], None]:
        def undo() -> None:
            if old is None or old[0] != key:
                self._unindex(key, m)
            if old is None:
                self._messages.pop(m.id, None)
            else:
                if old[0] != key:
                    self._reindex(*old)
                self._messages[m.id] = old
        return undo

    def _reindex(self, key: MessageKey, m: Message) -> None:
        for k in ((m.resource_id or "", None), (m.resource_id or "", m.thread_id)):
            bisect.insort(self._index.setdefault(k, []), (key, m.id))

    def _unindex(self, key: MessageKey, m: Message) -> None:
        for k in ((m.resource_id or "", None), (m.resource_id or "", m.thread_id)):
            lst = self._index.get(k, [])
            i = bisect.bisect_left(lst, (key, m.id))
            if i < len(lst) and lst[i] == (key, m.id):
                lst.pop(i)

    def _message_key(self, message_id: str) -> tuple[MessageKey, Message] | None:
        return self._messages.get(message_id)

    def _query_messages(self, resource_id: str, thread_id: str | None, lower: MessageKey | None,
                        upper: MessageKey | None, limit: int | None, descending: bool) -> list[Message]:
        lst = self._index.get((resource_id, thread_id), [])
        lo = 0 if lower is None else bisect.bisect_right(lst, (lower, "\U0010ffff"))
        hi = len(lst) if upper is None else bisect.bisect_left(lst, (upper, ""))
        window = lst[lo:hi]
        if descending:
            window = window[::-1]
        if limit is not None:
            window = window[:limit]
        return [self._messages[i][1] for _, i in window]

    def stats(self) -> dict[str, Any]:
        return {"records": len(self._records), "threads": len(self._threads), "messages": len(self._messages)}
