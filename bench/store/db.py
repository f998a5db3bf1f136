"""Opening a DuckDB results file: connection, schema, and the format-version check every opener goes through."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import duckdb
import pyarrow as pa

from bench.errors import StorageFailure, UserError, io_kind, storage_failure
from bench.store.contract import FORMAT_VERSION
from bench.store.schema import arrow_schema, ddl, view_ddl

Connection = duckdb.DuckDBPyConnection


class FileLocked(StorageFailure):
    """Another process holds the results file open for writing."""


LOCKED_FIX = "wait for that process to finish (or stop it), or write to another output.db=..., then re-run"
# readers (report, view, runs, export) take the file as --db
LOCKED_READ_FIX = "wait for the run writing it to finish (or stop it), then re-run; or pass another --db"


def connect(path: str | Path, read_only: bool = False, *, snapshot: bool = False) -> Connection:
    """A connection to the results file (created unless read_only). `snapshot` (read_only only): when a run holds
    the file for writing, read a copy taken now instead (`snapshot_of`; a note on stderr says so). Raises UserError
    when the file is missing (read_only) or of another format version; StorageFailure when it cannot be opened
    (FileLocked: another process holds it; read-only, permission, disk full: what failed and what to do, in one
    line)."""
    p = Path(path)
    if read_only and not p.exists():
        raise UserError(f"DuckDB file {p} not found; run `ombench run` first or pass the right --db")
    if read_only and not_a_results_file(p, "--db"):  # DuckDB's own reading: "the file system is read-only"
        raise UserError(f"--db {p} is not a DuckDB results file; pass the file `ombench run` wrote (its output.db, "
                        "by default results/bench.duckdb)")
    action = f"opening the results file {p}" + ("" if read_only else " for writing")
    try:
        if not read_only:
            p.parent.mkdir(parents=True, exist_ok=True)
        con = duckdb.connect(str(p), read_only=read_only)
    except (OSError, duckdb.Error) as exc:
        if not is_io_failure(exc):
            raise
        failure = storage_failure(exc, action)
        if failure.kind == "locked" and read_only and snapshot:
            return snapshot_of(p, action)
        if failure.kind == "locked":
            raise FileLocked(action, failure.why, "locked", fix=LOCKED_READ_FIX if read_only else LOCKED_FIX) from exc
        raise failure from exc
    try:
        check_format(con, p)
        if not read_only:
            ensure_schema(con)
    except BaseException:
        con.close()
        raise
    return con


_NOTED: set[Path] = set()


def snapshot_of(p: Path, action: str) -> Connection:
    """A read-only connection to a copy of `p` (and its write-ahead log) taken now, in a temporary folder removed
    at exit: what a run had committed when the copy was taken. Raises FileLocked (naming --db) when the copy
    cannot be opened (the writer was mid-checkpoint: retry)."""
    import atexit
    import shutil
    import sys
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="ombench-snapshot-"))
    atexit.register(shutil.rmtree, folder, True)
    copy = folder / p.name
    try:
        shutil.copyfile(p, copy)
        wal = p.with_name(p.name + ".wal")
        if wal.exists():
            shutil.copyfile(wal, copy.with_name(copy.name + ".wal"))
        duckdb.connect(str(copy)).close()  # replays the copied log into the copy (never into the run's file)
        con = duckdb.connect(str(copy), read_only=True)
    except (OSError, duckdb.Error) as exc:
        raise FileLocked(action, f"a run holds it for writing and a snapshot could not be read ({exc})", "locked",
                         fix=LOCKED_READ_FIX) from exc
    if p not in _NOTED:  # once per file and process (the viewer opens it twice)
        _NOTED.add(p)
        print(f"ombench: note: {p} is being written by a run: reading a snapshot taken now (later results not "
              "shown)", file=sys.stderr)
    try:
        check_format(con, p)
    except BaseException:
        con.close()
        raise
    return con


DUCKDB_MAGIC = b"DUCK"  # bytes 8..12 of every DuckDB database file (DuckDB's storage header)


def not_a_results_file(path: str | Path, key: str = "output.db") -> str | None:
    """Why `path` cannot be a results file, or None when it is absent, empty or a DuckDB file. Reads 12 bytes;
    an existing file of another kind (JSON, CSV, garbage) would otherwise be opened by DuckDB as an in-memory
    database and every result written to it lost (read, it failed as "the file system is read-only"). `key`: how the
    path was given (`output.db`, `--db`)."""
    p = Path(path)
    if not p.exists():
        return None
    if p.is_dir():
        return f"{key}={p} is a folder, not a DuckDB file; give a file path (e.g. {p / 'bench.duckdb'})"
    try:
        with p.open("rb") as fh:
            head = fh.read(12)
    except OSError as exc:
        return f"{key}={p} cannot be read ({exc.strerror or exc}); fix its permissions or pass another {key}=..."
    if not head or head[8:12] == DUCKDB_MAGIC:
        return None
    fresh = p.with_name(p.stem + ".duckdb") if p.suffix != ".duckdb" else p.with_name(p.stem + "-new.duckdb")
    return (f"{key}={p} exists and is not a DuckDB results file; results would be lost: "
            f"move it aside or pass a new file, e.g. {key}={fresh}")


def is_io_failure(exc: BaseException) -> bool:
    """Whether a DuckDB or OS error comes from the file or the disk (not from a query's own defect)."""
    return isinstance(exc, (OSError, duckdb.IOException, duckdb.FatalException)) or io_kind(exc) is not None


def sql(con: Connection, statement: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    """Execute and fetch everything (DuckDB refuses new work while a result is unfinished)."""
    return con.execute(statement, params or []).fetchall()


def ensure_schema(con: Connection) -> None:
    for stmt in ddl() + view_ddl():
        sql(con, stmt)


def rollback(con: Connection) -> None:
    """Undo the open transaction, if any: a failed COMMIT (disk full) has already ended it, and DuckDB's "no
    transaction is active" must not take the place of the error that matters."""
    try:
        sql(con, "ROLLBACK")
    except duckdb.Error:
        pass


def format_error(what: str, found: Iterable[int | None]) -> UserError | None:
    """The one-line error for results of another format version, or None when all are current."""
    versions = sorted({0 if v is None else int(v) for v in found})
    other = [v for v in versions if v != FORMAT_VERSION]
    if not other:
        return None
    v = other[-1]
    if v > FORMAT_VERSION:
        fix = "upgrade om-bench (git pull && make bench) or write to another file (output.db=...)"
    else:
        fix = "move it aside or pass a new output.db=... (older files are not migrated)"
    age = "newer" if v > FORMAT_VERSION else "older"
    label = "format 0 (written before format versions)" if v == 0 else f"format {v}"
    return UserError(f"{what} holds results of {label}, {age} than this om-bench's format {FORMAT_VERSION}: {fix}")


def check_format(con: Connection, path: Path) -> None:
    """Refuse a results file written by another format version (a file without tables is new: fine)."""
    cols = {r[0] for r in sql(con, "SELECT column_name FROM information_schema.columns WHERE table_name = 'runs'")}
    if not cols:
        return
    found = [r[0] for r in sql(con, "SELECT DISTINCT format_version FROM runs")] if "format_version" in cols else [None]
    err = format_error(str(path), found)
    if err:
        raise err


def arrow_table(table: str, rows: list[dict[str, Any]]) -> pa.Table:
    schema = arrow_schema(table)
    return pa.Table.from_pylist([{c: r.get(c) for c in schema.names} for r in rows], schema=schema)


def insert_rows(con: Connection, table: str, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    con.register("_ombench_rows", arrow_table(table, rows))
    try:
        sql(con, f"INSERT INTO {table} BY NAME SELECT * FROM _ombench_rows")
    finally:
        con.unregister("_ombench_rows")
