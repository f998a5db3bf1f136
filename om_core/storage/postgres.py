"""Optional PostgreSQL storage (extra `postgres`: psycopg 3). Same schema as SQLite, JSONB documents."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from om_core.errors import ConfigError, StorageError
from om_core.storage.sql import SqlStorage


class PostgresStorage(SqlStorage):
    """OM storage in PostgreSQL through psycopg 3 (`pip install 'om-bench[postgres]'`).

    `dsn` is a libpq connection string or URL (keep passwords in the environment, e.g. PGPASSWORD: error
    messages name host, port and database only). `prefix` names the tables as in `SQLiteStorage`. Opening
    checks the schema's `format_version` (`FormatVersionError` when it was written in another one; format 1
    is upgraded in place); database
    failures raise `StorageError`. Raises ConfigError when psycopg is missing or the prefix is not an identifier.
    """

    def __init__(self, dsn: str, *, prefix: str = "om_") -> None:
        try:
            import psycopg
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ConfigError("PostgresStorage: psycopg is not installed; pip install 'om-bench[postgres]'") from exc
        if not prefix.replace("_", "").isalnum():
            raise ConfigError(f"PostgresStorage prefix: {prefix!r} must be letters, digits and underscores")
        self.prefix = prefix
        self._db_error: type[Exception] = psycopg.Error
        self._lock = threading.RLock()
        self._depth = 0
        self._where = "PostgreSQL"
        try:
            self._conn = psycopg.connect(dsn, autocommit=True)
        except psycopg.Error as exc:
            raise StorageError(f"PostgresStorage: cannot connect ({exc})".replace("\n", " ")) from exc
        info = self._conn.info
        self._where = f"PostgreSQL database {info.dbname!r} at {info.host}:{info.port}"
        with self._tx():
            # serialise concurrent schema creation (CREATE IF NOT EXISTS is not race-free in Postgres)
            self._conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (prefix + "schema",))
            self._open_schema("JSONB", f"{self._where} (tables {prefix}*)")

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
            self._depth = 1
            try:
                with self._conn.transaction():
                    yield
            except self._db_error as exc:  # the transaction was rolled back
                raise StorageError(f"PostgresStorage({self._where}): {exc}".replace("\n", " ")) from exc
            finally:
                self._depth = 0

    def _exec(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cur = self._conn.execute(sql.replace("?", "%s"), tuple(params))
        return cur.fetchall() if cur.description else []

    def drop_tables(self) -> None:
        """Remove this prefix's tables (tests and throwaway schemas)."""
        with self._tx():
            for t in ("records", "threads", "messages", "working_memory", "meta"):
                self._conn.execute(f"DROP TABLE IF EXISTS {self.prefix}{t}")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __repr__(self) -> str:
        return f"PostgresStorage({self._where}, prefix={self.prefix!r})"
