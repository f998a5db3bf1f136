"""Embedded default storage: stdlib sqlite3, one file (or ":memory:"), WAL mode, one transaction per operation."""

from __future__ import annotations

import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

from om_core.storage.sql import SqlStorage, schema


class SQLiteStorage(SqlStorage):
    def __init__(self, path: str | Path = ":memory:", *, prefix: str = "om_") -> None:
        self.path = str(path)
        self.prefix = prefix
        if self.path != ":memory:":
            parent = Path(self.path).expanduser().resolve().parent
            if not parent.is_dir():
                raise ValueError(f"SQLiteStorage path: folder {parent} does not exist; create it first")
        # autocommit mode: transactions are opened explicitly with BEGIN IMMEDIATE (a writer lock up front)
        self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        self._lock = threading.RLock()
        self._depth = 0
        self._reading = False
        if self.path != ":memory:":
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
        with self._tx():
            for stmt in schema(prefix, "TEXT"):
                self._conn.execute(stmt)

    @contextmanager
    def _tx(self) -> Iterator[None]:
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self._conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                # another connection's commit changes data_version: cached reads are dropped then
                self._sync_cache(self._conn.execute("PRAGMA data_version").fetchone()[0])
                yield
            except BaseException:
                self._conn.execute("ROLLBACK")
                self._drop_cache()
                raise
            else:
                self._conn.execute("COMMIT")
            finally:
                self._depth = 0

    @contextmanager
    def _read(self) -> Iterator[None]:
        """Read-only operations skip BEGIN IMMEDIATE: a cached read needs only the data_version check, and
        an uncached one runs in SQLite's own read transaction per statement. Writes always use `_tx`."""
        with self._lock:
            if self._depth or self._reading:
                yield
                return
            self._sync_cache(self._conn.execute("PRAGMA data_version").fetchone()[0])
            self._reading = True
            try:
                yield
            finally:
                self._reading = False

    def _exec(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._conn.execute(sql, tuple(params)).fetchall()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __repr__(self) -> str:
        return f"SQLiteStorage({self.path!r})"
