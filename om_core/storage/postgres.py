"""Optional PostgreSQL storage (extra `postgres`: psycopg 3). Same schema as SQLite, JSONB documents."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from om_core.storage.sql import SqlStorage, schema


class PostgresStorage(SqlStorage):
    def __init__(self, dsn: str, *, prefix: str = "om_") -> None:
        try:
            import psycopg
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ValueError("PostgresStorage: psycopg is not installed; pip install 'om-bench[postgres]'") from exc
        if not prefix.replace("_", "").isalnum():
            raise ValueError(f"PostgresStorage prefix: {prefix!r} must be letters, digits and underscores")
        self.prefix = prefix
        self._conn = psycopg.connect(dsn, autocommit=True)
        self._lock = threading.RLock()
        self._depth = 0
        self._tx_ctx: Any = None
        with self._tx():
            # serialise concurrent schema creation (CREATE IF NOT EXISTS is not race-free in Postgres)
            self._conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (prefix + "schema",))
            for stmt in schema(prefix, "JSONB"):
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
            self._depth = 1
            try:
                with self._conn.transaction():
                    yield
            finally:
                self._depth = 0

    def _exec(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cur = self._conn.execute(sql.replace("?", "%s"), tuple(params))  # type: ignore[arg-type]
        return cur.fetchall() if cur.description else []

    def drop_tables(self) -> None:
        """Remove this prefix's tables (tests and throwaway schemas)."""
        with self._tx():
            for t in ("records", "threads", "messages"):
                self._conn.execute(f"DROP TABLE IF EXISTS {self.prefix}{t}")

    def close(self) -> None:
        with self._lock:
            self._conn.close()
