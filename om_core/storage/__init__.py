"""Storage backends for Observational Memory: SQLite (embedded default), in-memory, PostgreSQL (optional)."""

from om_core.storage.base import Storage, StorageError
from om_core.storage.memory import InMemoryStorage
from om_core.storage.ops import BaseStorage
from om_core.storage.sqlite import SQLiteStorage


def __getattr__(name: str):  # PostgresStorage imports psycopg lazily, only when asked for
    if name == "PostgresStorage":
        from om_core.storage.postgres import PostgresStorage

        return PostgresStorage
    raise AttributeError(name)


__all__ = ["Storage", "StorageError", "BaseStorage", "InMemoryStorage", "SQLiteStorage", "PostgresStorage"]
