"""Primitives shared by the SQL backends: four tables, rows keyed by id, the full record as JSON.

Records keep their queryable fields (lookup key, generation, resource, thread) as columns and the whole
`OMRecord` (the fields of Mastra's observational-memory record) as a JSON document, so both backends share
one schema and one code path; `<prefix>working_memory` holds one working-memory block per resource. A fifth
table, `<prefix>meta`, holds the schema's `format_version`: stamped when the tables are created, checked
every time they are opened, and migrated forward where a migration exists.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from typing import Any, Callable, Hashable, Sequence, TypeVar, cast

from om_core.errors import FormatVersionError
from om_core.records import OMRecord, ThreadMeta, iso, message_from_dict, message_to_dict
from om_core.storage.ops import BaseStorage, MessageKey, after_key
from om_core.types import Message
from om_core.working_memory import WorkingMemory


FORMAT_VERSION = 2
"""Layout version of the OM tables (records, threads, messages, working memory and the JSON documents in
them). Bump it with any change an older om_core could not read, and add a migration from the previous version
to MIGRATIONS where one is possible; `open_schema` refuses files of any other version.
Version 2 added the `working_memory` table."""

MIGRATIONS = {"1": "format 1 lacks only the working_memory table, which the schema creates"}
"""Stored versions this om_core upgrades in place when it opens them (to FORMAT_VERSION), with what changes."""


def schema(prefix: str, json_type: str) -> list[str]:
    """CREATE statements of the OM tables (idempotent); `json_type` is TEXT (SQLite) or JSONB (PostgreSQL)."""
    p = prefix
    return [
        f"""CREATE TABLE IF NOT EXISTS {p}records (
            id TEXT PRIMARY KEY, lookup_key TEXT NOT NULL, scope TEXT NOT NULL, resource_id TEXT NOT NULL,
            thread_id TEXT, generation_count INTEGER NOT NULL, origin_type TEXT NOT NULL,
            created_at TEXT NOT NULL, updated_at TEXT NOT NULL, data {json_type} NOT NULL,
            UNIQUE (lookup_key, generation_count))""",
        f"CREATE INDEX IF NOT EXISTS {p}records_resource ON {p}records (resource_id)",
        f"""CREATE TABLE IF NOT EXISTS {p}threads (
            thread_id TEXT PRIMARY KEY, resource_id TEXT NOT NULL, data {json_type} NOT NULL)""",
        f"CREATE INDEX IF NOT EXISTS {p}threads_resource ON {p}threads (resource_id)",
        f"""CREATE TABLE IF NOT EXISTS {p}messages (
            id TEXT PRIMARY KEY, resource_id TEXT NOT NULL, thread_id TEXT NOT NULL, created_at TEXT NOT NULL,
            seq BIGINT NOT NULL, data {json_type} NOT NULL)""",
        f"CREATE INDEX IF NOT EXISTS {p}messages_thread ON {p}messages (resource_id, thread_id, created_at, seq)",
        f"CREATE INDEX IF NOT EXISTS {p}messages_resource ON {p}messages (resource_id, created_at, seq)",
        f"""CREATE TABLE IF NOT EXISTS {p}working_memory (
            resource_id TEXT PRIMARY KEY, updated_at TEXT, data {json_type} NOT NULL)""",
    ]


def format_mismatch(where: str, found: str, expected: int = FORMAT_VERSION) -> FormatVersionError:
    """The one-line error for tables stamped with another `format_version` than this om_core's."""
    older_fix = ("open it with the om_core version that wrote it, or move it aside and start a new store "
                 "(memory is rebuilt by replaying the conversation)")
    try:
        newer = int(found) > expected
    except ValueError:
        text = f"OM storage format_version {found!r} is not one this om_core reads (format_version {expected})"
        fix = older_fix
    else:
        how = "newer" if newer else "older"
        text = f"OM storage format_version {found} is {how} than this om_core's format_version {expected}"
        fix = "upgrade om_core (pip install -U om-bench), or give this run a new storage path" if newer else older_fix
    return FormatVersionError(f"{where}: {text}; {fix}", where=where, found=found, expected=expected)


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""What `json.dumps(value, ensure_ascii=False, separators=(",", ":"))` uses, made once (not per stored row)."""
_MISS = object()
_T = TypeVar("_T")
MAX_CACHED_AREAS = 1024  # cached read areas (one per thread's message list, plus records/threads)


class SqlStorage(BaseStorage):
    """Backend-neutral SQL; subclasses provide `_exec` (with `?` placeholders) and `_tx`.

    Read cache: a backend that can tell when another connection committed (SQLite's `data_version`) calls
    `_sync_cache` at the start of every transaction; decoded reads are then served from memory until this
    connection writes the same area, another connection commits, or a transaction rolls back
    (`_drop_cache`). Without that signal (Postgres) every read goes to the database.
    """

    prefix = "om_"
    _caches: dict[Hashable, dict[Any, Any]] | None = None
    _cache_version: Any = None

    # ---- read cache ---------------------------------------------------------------------------
    def _sync_cache(self, version: Any) -> None:
        if version != self._cache_version or self._caches is None:
            self._caches = {}
            self._cache_version = version

    def _drop_cache(self) -> None:
        if self._caches is not None:
            self._caches = {}

    def _forget(self, *areas: Hashable) -> None:
        if self._caches is not None:
            for area in areas:
                self._caches.pop(area, None)

    def _bucket(self, area: Hashable) -> dict[Any, Any]:
        """The cached entries of one area (created empty; the read cache must be on)."""
        caches = self._caches
        assert caches is not None
        bucket = caches.get(area)
        if bucket is None:
            if len(caches) >= MAX_CACHED_AREAS:
                caches.clear()
            bucket = caches[area] = {}
        return bucket

    def _cached(self, area: Hashable, key: Any, load: Callable[[], _T]) -> _T:
        if self._caches is None:
            return load()
        bucket = self._bucket(area)
        hit = bucket.get(key, _MISS)
        if hit is _MISS:
            hit = bucket[key] = load()
        return cast(_T, hit)

    @abstractmethod
    def _exec(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    @property
    def format_version(self) -> int:
        """The layout version of the OM tables this backend reads and writes (checked when it opens)."""
        return FORMAT_VERSION

    def _open_schema(self, json_type: str, where: str) -> None:
        """Check the stored `format_version` and create the tables (stamping the version) when absent; call
        inside one transaction. Tables written before the version existed have format 1's layout; they and
        any version in MIGRATIONS are brought to FORMAT_VERSION and stamped. Raises FormatVersionError, before
        touching any table, when another version is stored."""
        p = self.prefix
        self._exec(f"CREATE TABLE IF NOT EXISTS {p}meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        rows = self._exec(f"SELECT value FROM {p}meta WHERE key = ?", ("format_version",))
        found = str(rows[0][0]) if rows else None
        if found is not None and found != str(FORMAT_VERSION) and found not in MIGRATIONS:
            raise format_mismatch(where, found)
        for stmt in schema(p, json_type):  # creates what is missing: the whole layout, or a migration's tables
            self._exec(stmt)
        if found is None:
            self._exec(f"INSERT INTO {p}meta (key, value) VALUES (?, ?)", ("format_version", str(FORMAT_VERSION)))
        elif found != str(FORMAT_VERSION):
            self._exec(f"UPDATE {p}meta SET value = ? WHERE key = ?", (str(FORMAT_VERSION), "format_version"))

    @staticmethod
    def _load(value: Any) -> Any:
        return json.loads(value) if isinstance(value, (str, bytes)) else value

    # Decoded rows memoised by their stored text: a row is decoded again only when its text changed, so
    # polling the head record and the unobserved tail every step stays cheap (and sees other writers).
    def _record_of(self, data: Any) -> OMRecord:
        key = data if isinstance(data, str) else self._dump(data)
        cache: dict[str, OMRecord] = self.__dict__.setdefault("_rec_cache", {})
        hit = cache.get(key)
        if hit is None:
            hit = OMRecord.from_dict(self._load(data))
            if len(cache) > 64:
                cache.clear()
            cache[key] = hit
        return hit

    def _message_of(self, mid: str, data: Any) -> Message:
        cache: dict[str, tuple[Any, Message]] = self.__dict__.setdefault("_msg_cache", {})
        hit = cache.get(mid)
        if hit is not None and hit[0] == data:
            return hit[1]
        m = message_from_dict(self._load(data))
        if len(cache) > 200_000:
            cache.clear()
        cache[mid] = (data, m)
        return m

    @staticmethod
    def _dump(value: Any) -> str:
        return _ENCODER.encode(value)

    # ---- records --------------------------------------------------------------------------------
    def _load_head(self, lookup_key: str) -> OMRecord | None:
        def load() -> OMRecord | None:
            rows = self._exec(f"SELECT data FROM {self.prefix}records WHERE lookup_key = ? "
                              "ORDER BY generation_count DESC LIMIT 1", (lookup_key,))
            return self._record_of(rows[0][0]) if rows else None

        return self._cached("records", ("head", lookup_key), load)

    def _load_record(self, record_id: str) -> OMRecord | None:
        def load() -> OMRecord | None:
            rows = self._exec(f"SELECT data FROM {self.prefix}records WHERE id = ?", (record_id,))
            return self._record_of(rows[0][0]) if rows else None

        return self._cached("records", ("id", record_id), load)

    def _load_history(self, lookup_key: str) -> list[OMRecord]:
        rows = self._exec(f"SELECT data FROM {self.prefix}records WHERE lookup_key = ? "
                          "ORDER BY generation_count DESC", (lookup_key,))
        return [OMRecord.from_dict(self._load(r[0])) for r in rows]

    def _save_record(self, rec: OMRecord) -> None:
        self._forget("records")
        self._exec(
            f"INSERT INTO {self.prefix}records (id, lookup_key, scope, resource_id, thread_id, generation_count, "
            "origin_type, created_at, updated_at, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at, data = excluded.data",
            (rec.id, rec.lookup_key, rec.scope, rec.resource_id, rec.thread_id, rec.generation_count,
             rec.origin_type, iso(rec.created_at), iso(rec.updated_at), self._dump(rec.to_dict())))

    def _delete_records(self, lookup_key: str) -> None:
        self._forget("records")
        self._exec(f"DELETE FROM {self.prefix}records WHERE lookup_key = ?", (lookup_key,))

    def _delete_resource(self, resource_id: str) -> None:
        self._drop_cache()  # every cached area of this resource goes stale
        for table in ("records", "threads", "messages", "working_memory"):
            self._exec(f"DELETE FROM {self.prefix}{table} WHERE resource_id = ?", (resource_id,))

    def _lookup_keys(self, resource_id: str) -> list[str]:
        rows = self._exec(f"SELECT DISTINCT lookup_key FROM {self.prefix}records WHERE resource_id = ? "
                          "ORDER BY lookup_key", (resource_id,))
        return [r[0] for r in rows]

    # ---- threads --------------------------------------------------------------------------------
    def _load_thread(self, thread_id: str) -> ThreadMeta | None:
        def load() -> ThreadMeta | None:
            rows = self._exec(f"SELECT data FROM {self.prefix}threads WHERE thread_id = ?", (thread_id,))
            return ThreadMeta.from_dict(self._load(rows[0][0])) if rows else None

        return self._cached("threads", ("id", thread_id), load)

    def _save_thread(self, meta: ThreadMeta) -> None:
        self._forget("threads")
        self._mark_unobserved(meta.resource_id, meta.thread_id)
        self._exec(f"INSERT INTO {self.prefix}threads (thread_id, resource_id, data) VALUES (?, ?, ?) "
                   "ON CONFLICT (thread_id) DO UPDATE SET resource_id = excluded.resource_id, data = excluded.data",
                   (meta.thread_id, meta.resource_id, self._dump(meta.to_dict())))

    def _load_threads(self, resource_id: str) -> list[ThreadMeta]:
        def load() -> tuple[ThreadMeta, ...]:
            rows = self._exec(f"SELECT data FROM {self.prefix}threads WHERE resource_id = ?", (resource_id,))
            return tuple(self._thread_of(r[0]) for r in rows)

        return list(self._cached("threads", ("resource", resource_id), load))

    def _thread_of(self, data: Any) -> ThreadMeta:
        # decoded thread rows memoised by their stored text: a resource's list is read again after any thread
        # write, and most of its rows are unchanged
        key = data if isinstance(data, str) else self._dump(data)
        cache: dict[str, ThreadMeta] = self.__dict__.setdefault("_thread_cache", {})
        hit = cache.get(key)
        if hit is None:
            hit = ThreadMeta.from_dict(self._load(data))
            if len(cache) > 100_000:
                cache.clear()
            cache[key] = hit
        return hit

    # ---- working memory -------------------------------------------------------------------------
    def _load_working_memory(self, resource_id: str) -> WorkingMemory | None:
        def load() -> WorkingMemory | None:
            rows = self._exec(f"SELECT data FROM {self.prefix}working_memory WHERE resource_id = ?", (resource_id,))
            return WorkingMemory.from_dict(self._load(rows[0][0])) if rows else None

        return self._cached("working_memory", resource_id, load)

    def _save_working_memory(self, resource_id: str, memory: WorkingMemory | None) -> None:
        self._forget("working_memory")
        if memory is None:
            self._exec(f"DELETE FROM {self.prefix}working_memory WHERE resource_id = ?", (resource_id,))
            return
        self._exec(f"INSERT INTO {self.prefix}working_memory (resource_id, updated_at, data) VALUES (?, ?, ?) "
                   "ON CONFLICT (resource_id) DO UPDATE SET updated_at = excluded.updated_at, data = excluded.data",
                   (resource_id, iso(memory.updated_at), self._dump(memory.to_dict())))

    # ---- messages -------------------------------------------------------------------------------
    def _save_messages(self, messages: Sequence[Message]) -> None:
        """Upsert by id, one INSERT per message (each `RETURNING` the seq the row holds). With the read cache on,
        the largest stored seq is kept (no `MAX(seq)` scan per call) and each new message is decoded once and
        appended to the kept unobserved view (no SELECT after INSERT); an upsert of an existing id, or a
        message that sorts before a thread's kept tail, marks that thread to be read again instead."""
        if not messages:
            return
        seq = self._max_seq()
        top = seq
        for m in messages:
            self._forget(_message_area(m.resource_id or "", m.thread_id), _message_area(m.resource_id or "", None))
            seq += 1
            fields = message_to_dict(m)
            data = self._dump(fields)
            # an existing id keeps its seq (its place among messages created at the same instant)
            rows = self._exec(
                f"INSERT INTO {self.prefix}messages (id, resource_id, thread_id, created_at, seq, data) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET resource_id = excluded.resource_id, "
                "thread_id = excluded.thread_id, created_at = excluded.created_at, data = excluded.data "
                "RETURNING seq",
                (m.id, m.resource_id, m.thread_id, fields["created_at"], seq, data))
            stored = int(rows[0][0]) if rows else None
            if stored is not None:
                top = max(top, stored)
            if stored == seq:  # a new row: the kept view follows it directly
                if self._caches is not None:
                    self._append_unobserved(self._remember_message(m, fields, data))
            else:  # an upsert may move a stored message out of another thread or resource: read them all again
                self._forget_messages()
        if self._caches is not None:
            self._bucket("seq")["max"] = top

    def _forget_messages(self) -> None:
        """Drop every cached message list and the kept unobserved views (records and threads stay)."""
        if self._caches is not None:
            self._forget("unobserved", *[a for a in self._caches if isinstance(a, tuple) and a[0] == "messages"])

    def _max_seq(self) -> int:
        """The largest seq stored (0 when none): kept while the read cache is valid (this connection alone
        wrote since it was read: another's commit or a rollback drops it), read otherwise."""
        kept = self._bucket("seq").get("max") if self._caches is not None else None
        if kept is not None:
            return int(kept)
        rows = self._exec(f"SELECT COALESCE(MAX(seq), 0) FROM {self.prefix}messages")
        return int(rows[0][0])

    def _remember_message(self, m: Message, fields: dict[str, Any], data: str) -> Message:
        """The message as a read of its row `data` decodes it, put in the decoded-row memo: without tool calls
        the JSON text round trip is the identity on `message_to_dict`'s `fields` (strings and None), so they
        are decoded without parsing the text."""
        if m.tool_calls or type(m.content) is not str:
            return self._message_of(m.id, data)
        decoded = message_from_dict(fields)
        cache: dict[str, tuple[Any, Message]] = self.__dict__.setdefault("_msg_cache", {})
        if len(cache) > 200_000:
            cache.clear()
        cache[m.id] = (data, decoded)
        return decoded

    def _append_unobserved(self, m: Message) -> None:
        """A new message row `m` (as decoded; its seq above every stored one's) written: the kept unobserved
        view of its resource gains it at the end of its thread's tail when it sorts there, exactly what reading
        the thread again would give; otherwise the thread is marked to be read again."""
        views = self._caches.get("unobserved") if self._caches is not None else None
        if not views or m.thread_id is None:
            return
        rid, tid = m.resource_id, m.thread_id
        for other, state in views.items():  # a view that holds the thread under another resource: read again
            if other != rid and "dirty" in state and tid in state["tails"]:
                state["dirty"].add(tid)
        state = views.get(rid)
        if state is None or "dirty" not in state or tid in state["dirty"]:
            return
        # aware datetimes compare as their fixed-width UTC ISO texts (`iso`) do in SQL
        created = m.created_at
        entry = state["tails"].get(tid)
        if entry is not None:
            meta, tail = entry
            if created >= tail[-1].created_at:  # equal instants: the larger seq sorts after
                state["tails"][tid] = (meta, tail + (m,))  # the same thread: its place in the order stays
                return
            state["dirty"].add(tid)
            return
        meta = self._load_thread(tid)
        if meta is None or meta.resource_id != rid:
            return  # not a thread of this resource: the view has no entry for it, as a read would find
        if meta.last_observed_at is None or created > meta.last_observed_at:
            state["tails"][tid] = (meta, (m,))
            state["order"] = None

    def _message_key(self, message_id: str) -> tuple[MessageKey, Message] | None:
        rows = self._exec(f"SELECT created_at, seq, data FROM {self.prefix}messages WHERE id = ?", (message_id,))
        if not rows:
            return None
        created, seq, data = rows[0]
        return (created, int(seq)), self._message_of(message_id, data)

    def _query_messages(self, resource_id: str, thread_id: str | None, lower: MessageKey | None,
                        upper: MessageKey | None, limit: int | None, descending: bool) -> list[Message]:
        def load() -> tuple[Message, ...]:
            return tuple(self._select_messages(resource_id, thread_id, lower, upper, limit, descending))

        key = (lower, upper, limit, descending)
        return list(self._cached(_message_area(resource_id, thread_id), key, load))

    def _load_unobserved(self, resource_id: str) -> list[tuple[ThreadMeta, Sequence[Message]]]:
        # Kept per resource: the threads with unobserved messages (usually a few, however long the history),
        # and the threads written since (`_mark_unobserved`), which alone are read again. A dropped cache
        # (another connection's commit, a rollback) starts from a full read.
        if self._caches is None:
            return super()._load_unobserved(resource_id)
        state = self._bucket("unobserved").setdefault(resource_id, {})
        tails: dict[str, tuple[ThreadMeta, tuple[Message, ...]]] | None = state.get("tails")
        if tails is None:
            tails = {t.thread_id: (t, tuple(ms)) for t, ms in super()._load_unobserved(resource_id)}
        else:
            for tid in state["dirty"]:
                t = self._load_thread(tid)
                ms = () if t is None or t.resource_id != resource_id else tuple(
                    self._query_messages(resource_id, tid, after_key(t.last_observed_at), None, None, False))
                if t is not None and ms:
                    tails[tid] = (t, ms)
                else:
                    tails.pop(tid, None)
        if state.get("tails") is not tails or state["dirty"]:
            state["order"] = None
        state["tails"], state["dirty"] = tails, set()
        order: list[str] | None = state.get("order")
        if order is None:  # the threads in list_threads order, kept until a thread enters, leaves or is re-read
            order = state["order"] = [t.thread_id for t, _ in sorted(
                tails.values(), key=lambda e: (e[0].created_at, e[0].thread_id))]
        return [tails[tid] for tid in order]

    def _mark_unobserved(self, resource_id: str | None, thread_id: str | None) -> None:
        """A thread's messages or cursor were written: its entry in the kept unobserved view is read again
        (in its resource's view, and in any other view that holds it: a thread that changed resource)."""
        views = self._caches.get("unobserved") if self._caches is not None and thread_id is not None else None
        for rid, state in (views or {}).items():  # one per resource read since the cache was last dropped
            if "dirty" in state and (rid == resource_id or thread_id in state["tails"]):
                state["dirty"].add(thread_id)

    def _select_messages(self, resource_id: str, thread_id: str | None, lower: MessageKey | None,
                         upper: MessageKey | None, limit: int | None, descending: bool) -> list[Message]:
        sql = [f"SELECT id, data FROM {self.prefix}messages WHERE resource_id = ?"]
        params: list[Any] = [resource_id]
        if thread_id is not None:
            sql.append("AND thread_id = ?")
            params.append(thread_id)
        if lower is not None:
            sql.append("AND (created_at > ? OR (created_at = ? AND seq > ?))")
            params += [lower[0], lower[0], lower[1]]
        if upper is not None:
            sql.append("AND (created_at < ? OR (created_at = ? AND seq < ?))")
            params += [upper[0], upper[0], upper[1]]
        order = "DESC" if descending else "ASC"
        sql.append(f"ORDER BY created_at {order}, seq {order}")
        if limit is not None:
            sql.append("LIMIT ?")
            params.append(int(limit))
        return [self._message_of(r[0], r[1]) for r in self._exec(" ".join(sql), params)]


def _message_area(resource_id: str, thread_id: str | None) -> tuple[str, str, str | None]:
    """Cache area of one thread's messages (thread_id None: the whole resource's)."""
    return ("messages", resource_id, thread_id)
