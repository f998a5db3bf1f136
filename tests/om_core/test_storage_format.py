"""The OM schema's `format_version`: stamped when the tables are created, checked when they are opened, on
SQLite files and PostgreSQL schemas; database failures surface as one-line `StorageError`s."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any

import pytest

from om_core import FormatVersionError, OMError, SQLiteStorage, StorageError
from om_core.storage import FORMAT_VERSION
from om_core.types import Message

T0 = datetime(2026, 3, 3, 9, 0, tzinfo=timezone.utc)


class Backend:
    """Opens a store and reads/writes its tables behind its back, as another program (or version) would."""

    def __init__(self, open_store: Callable[[], Any], execute: Callable[[str], list[tuple[Any, ...]]],
                 where: str, prefix: str) -> None:
        self.open = open_store
        self.execute = execute
        self.where = where
        self.prefix = prefix

    def stored_version(self) -> str:
        return str(self.execute(f"SELECT value FROM {self.prefix}meta WHERE key = 'format_version'")[0][0])

    def set_version(self, value: str) -> None:
        self.execute(f"UPDATE {self.prefix}meta SET value = '{value}' WHERE key = 'format_version'")


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Backend]:
    if request.param == "sqlite":
        path = tmp_path / "om.db"

        def run_sqlite(sql: str) -> list[tuple[Any, ...]]:
            with sqlite3.connect(path) as conn:
                return conn.execute(sql).fetchall()

        yield Backend(lambda: SQLiteStorage(path), run_sqlite, str(path), "om_")
        return
    import psycopg

    from om_core.storage.postgres import PostgresStorage

    dsn = request.getfixturevalue("pg_dsn")
    prefix = f"f{uuid.uuid4().hex[:8]}_"

    def run_pg(sql: str) -> list[tuple[Any, ...]]:
        with psycopg.connect(dsn, autocommit=True) as conn:
            cur = conn.execute(sql.encode())
            return cur.fetchall() if cur.description else []

    yield Backend(lambda: PostgresStorage(dsn, prefix=prefix), run_pg, "PostgreSQL database", prefix)
    for table in ("records", "threads", "messages", "working_memory", "meta"):
        run_pg(f"DROP TABLE IF EXISTS {prefix}{table}")


def _fill(store: Any) -> None:
    rec = store.initialize_record(lookup_key="thread:t1", scope="thread", resource_id="r1", thread_id="t1", now=T0)
    store.update_active_observations(rec.id, observations="* kept", token_count=2, last_observed_at=T0, now=T0)
    store.add_messages([Message("m1", "user", "hello", T0, thread_id="t1", resource_id="r1")])


def test_new_store_is_stamped_and_reopens(backend: Backend) -> None:
    store = backend.open()
    assert store.format_version == FORMAT_VERSION == 2
    _fill(store)
    store.close()
    assert backend.stored_version() == str(FORMAT_VERSION)
    again = backend.open()  # same version: opens, data intact, stamp unchanged
    assert again.get_record("thread:t1").active_observations == "* kept"
    again.close()
    assert backend.execute(f"SELECT COUNT(*) FROM {backend.prefix}meta")[0][0] == 1


@pytest.mark.parametrize("found, advice", [("0", "open it with the om_core version that wrote it"),
                                           ("3", "upgrade om_core"),
                                           ("two", "open it with the om_core version that wrote it")])
def test_other_version_is_refused_with_one_line(backend: Backend, found: str, advice: str) -> None:
    store = backend.open()
    _fill(store)
    store.close()
    backend.set_version(found)
    with pytest.raises(FormatVersionError) as info:
        backend.open()
    err = info.value
    message = str(err)
    assert "\n" not in message
    assert backend.where in message and advice in message
    assert found in message and f"format_version {FORMAT_VERSION}" in message
    assert (err.found, err.expected) == (found, FORMAT_VERSION)
    assert isinstance(err, StorageError) and isinstance(err, OMError)
    # refused before touching anything: the data and the foreign stamp are still there
    assert backend.stored_version() == found
    assert backend.execute(f"SELECT COUNT(*) FROM {backend.prefix}records")[0][0] == 1


def test_tables_from_before_the_stamp_are_adopted(backend: Backend) -> None:
    store = backend.open()
    _fill(store)
    store.close()
    backend.execute(f"DROP TABLE {backend.prefix}meta")  # as written before format_version existed
    again = backend.open()
    assert again.get_record("thread:t1").active_observations == "* kept"
    again.close()
    assert backend.stored_version() == str(FORMAT_VERSION)


def test_format_1_is_migrated_in_place(backend: Backend) -> None:
    from om_core.working_memory import WorkingMemory

    store = backend.open()
    _fill(store)
    store.close()
    backend.execute(f"DROP TABLE {backend.prefix}working_memory")  # the layout format 1 had
    backend.set_version("1")
    again = backend.open()
    assert again.get_record("thread:t1").active_observations == "* kept"
    again.save_working_memory(WorkingMemory("r1", (("name", "Ana"),), 4, T0))
    assert again.get_working_memory("r1").entries == (("name", "Ana"),)
    again.close()
    assert backend.stored_version() == str(FORMAT_VERSION)
    assert backend.execute(f"SELECT COUNT(*) FROM {backend.prefix}meta")[0][0] == 1


def test_sqlite_file_that_is_not_a_database(tmp_path: Any) -> None:
    path = tmp_path / "notes.db"
    path.write_text("not a database, just text " * 200)
    with pytest.raises(StorageError) as info:
        SQLiteStorage(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
    assert not isinstance(info.value, FormatVersionError)


def test_sqlite_error_after_close_is_a_storage_error(tmp_path: Any) -> None:
    store = SQLiteStorage(tmp_path / "om.db")
    store.close()
    with pytest.raises(StorageError, match="om.db"):
        store.get_record("thread:t1")


def test_import_state_refuses_another_snapshot_version(tmp_path: Any) -> None:
    store = SQLiteStorage(tmp_path / "om.db")
    _fill(store)
    snapshot = store.export_state("r1")
    with pytest.raises(FormatVersionError, match="snapshot version 99") as info:
        store.import_state({**snapshot, "version": 99})
    assert info.value.found == 99 and isinstance(info.value, ValueError)
    store.close()
