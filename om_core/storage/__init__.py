"""Storage backends for Observational Memory: SQLite (embedded default), in-memory, PostgreSQL (optional).

`PostgresStorage` is imported on first use, so psycopg stays optional.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from om_core.errors import FormatVersionError, StorageError
from om_core.storage.base import Direction, Storage
from om_core.storage.memory import InMemoryStorage
from om_core.storage.ops import EXPORT_VERSION, BaseStorage
from om_core.storage.sql import FORMAT_VERSION
from om_core.storage.sqlite import SQLiteStorage

if TYPE_CHECKING:
    from om_core.storage.postgres import PostgresStorage


def __getattr__(name: str) -> Any:
    if name == "PostgresStorage":
        from om_core.storage.postgres import PostgresStorage

        return PostgresStorage
    raise AttributeError(f"module 'om_core.storage' has no attribute {name!r}")


__all__ = [
    "EXPORT_VERSION",
    "FORMAT_VERSION",
    "BaseStorage",
    "Direction",
    "FormatVersionError",
    "InMemoryStorage",
    "PostgresStorage",
    "SQLiteStorage",
    "Storage",
    "StorageError",
]
