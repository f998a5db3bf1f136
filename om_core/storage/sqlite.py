"""Embedded default storage: stdlib sqlite3, one file (or ":memory:"), WAL mode, one transaction per operation."""

from __future__ import annotations

import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

from om_core.errors import ConfigError, StorageError
from om_core.storage.sql import SqlStorage


class SQLiteStorage(SqlStorage):
    """OM storage in one SQLite file (stdlib `sqlite3`), or in memory with `path=":memory:"`.

    `prefix` names the tables (`<prefix>records`, `<prefix>threads`, `<prefix>messages`,
    `<prefix>working_memory`, `<prefix>meta`), so
    several stores can share a file. Opening checks the file's `format_version` (`FormatVersionError` when it
    was written in another one; format 1 is upgraded in place); database failures raise `StorageError` naming the file.
    Raises ConfigError when the file's folder does not exist.
    """

    def __init__(self, path: str | Path = ":memory:", *, prefix: str = "om_") -> None:
        self.path = str(path)
        self.prefix = prefix
        if self.path != ":memory:":
            parent = Path(self.path).expanduser().resolve().parent
            if not parent.is_dir():
                raise ConfigError(f"SQLiteStorage path: folder {parent} does not exist; create it first")
        self._lock = threading.RLock()
        # a ":memory:" database belongs to this connection alone: no other writer can commit to it, so its
        # read cache never needs the data_version check (a statement per operation saved)
        self._private = self.path == ":memory:"
        self._depth = 0
        self._reading = False
        try:
            # autocommit mode: transactions are opened explicitly with BEGIN IMMEDIATE (a writer lock up front)
            self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.Error as exc:
            raise self._failed(exc) from exc
        with self._tx():
            self._open_schema("TEXT", f"SQLite file {self.path}")

    def _failed(self, exc: sqlite3.Error) -> StorageError:
        return StorageError(f"SQLiteStorage({self.path!r}): {exc}")

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
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise self._failed(exc) from exc
            self._depth = 1
            try:
                # another connection's commit changes data_version: cached reads are dropped then
                self._sync_cache(self._data_version())
                yield
            except BaseException:
                self._conn.execute("ROLLBACK")
                self._drop_cache()
                raise
            else:
                try:
                    self._conn.execute("COMMIT")
                except sqlite3.Error as exc:  # e.g. busy: the transaction is still open, undo it
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    self._drop_cache()
                    raise self._failed(exc) from exc
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
            self._sync_cache(self._data_version())
            self._reading = True
            try:
                yield
            finally:
                self._reading = False

    def _data_version(self) -> int:
        """SQLite's `data_version` (changes when another connection commits); 0 for a private in-memory db."""
        return 0 if self._private else int(self._exec("PRAGMA data_version")[0][0])

    def _exec(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(sql, tuple(params)).fetchall()
        except sqlite3.Error as exc:
            raise self._failed(exc) from exc

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __repr__(self) -> str:
        return f"SQLiteStorage({self.path!r})"
