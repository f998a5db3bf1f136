"""Parquet shards for multi-process sweeps: each worker appends one file per table per question (atomic
rename), and `merge_shards` loads them into one DuckDB file idempotently.

Layout: <folder>/<table>/<run>__<question>.parquet. A question counts as written once its `samples`
file exists (written last), so a worker killed mid-question leaves nothing that merge would load.
"""

from __future__ import annotations

import glob as _glob
import hashlib
import json
import os
import re
import shlex
from pathlib import Path
from typing import IO, Any, Mapping

import duckdb
import pyarrow.parquet as pq

from bench.errors import StorageFailure, UserError, storage_failure
from bench.fsio import atomic_write, remove_orphans
from bench.store.contract import QuestionResult, RunManifest
from bench.store.db import arrow_table, connect, format_error, is_io_failure, rollback, sql
from bench.store.rows import now, question_rows, run_row, to_json
from bench.store.schema import QUESTION_TABLES, columns
from bench.store.run_names import keep_name, stored_run
from bench.store.shard_runs import combine


def _safe(s: str) -> str:
    clean = re.sub(r"[^A-Za-z0-9._-]+", "_", s)[:80]
    return f"{clean}-{hashlib.blake2b(s.encode(), digest_size=4).hexdigest()}"


def _write_atomic(path: Path, table: str, rows: list[dict[str, Any]]) -> None:
    """One shard file, atomically and durably (bench.fsio); StorageFailure when the disk refuses it."""
    data = arrow_table(table, rows)

    def write(fh: IO[bytes]) -> None:
        pq.write_table(data, fh)

    try:
        atomic_write(path, write)
    except OSError as exc:
        raise storage_failure(exc, f"writing the shard {path}") from exc


_LEGACY_TMP = re.compile(r"^\..+\.(\d+)\.tmp$")  # `.<name>.<pid>.tmp`, as earlier versions named temporaries


def remove_shard_orphans(folder: Path) -> int:
    """Temporaries below a shard folder left by killed writers (bench.fsio's, and earlier versions' names)."""
    n = remove_orphans(folder, recursive=True)
    for p in folder.rglob(".*.tmp") if folder.is_dir() else ():
        m = _LEGACY_TMP.match(p.name)
        if m is None or int(m.group(1)) == os.getpid():
            continue
        try:
            os.kill(int(m.group(1)), 0)
        except ProcessLookupError:
            p.unlink(missing_ok=True)
            n += 1
        except PermissionError:
            pass
    return n


def merge_command(pattern: str | Path, db: str | Path) -> str:
    """The command that merges these shards by hand."""
    return f"ombench merge {shlex.quote(str(pattern))} --db {shlex.quote(str(db))}"


def _check_run_files(files: list[str], where: str) -> None:
    """Refuse shards of another format version (run files without the column are format 0)."""
    found: list[int | None] = []
    for f in files:
        t = pq.read_table(f)
        found += t.column("format_version").to_pylist() if "format_version" in t.column_names else [None]
    err = format_error(where, found)
    if err:
        raise err


class ShardWriter:
    """A `ResultSink` writing Parquet shards into one folder (one sweep job)."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise storage_failure(exc, f"creating the shard folder {self.folder}") from exc
        self.orphans_removed = remove_shard_orphans(self.folder)
        _check_run_files(_files(self.folder, "runs"), f"shard folder {self.folder}")

    def _file(self, table: str, run_key: str, qid: str | None = None) -> Path:
        name = _safe(run_key) if qid is None else f"{_safe(run_key)}__{_safe(qid)}"
        return self.folder / table / f"{name}.parquet"

    def upsert_run(self, run: RunManifest) -> None:
        f = self._file("runs", run.run_key)
        row = run_row(run)
        if f.exists():  # an existing run keeps its start, as in the DuckDB store
            row["started_at"] = pq.read_table(f).to_pylist()[0]["started_at"]
        _write_atomic(f, "runs", [row])

    def finish_run(self, run_key: str, status: str = "finished", notes: Mapping[str, Any] | None = None) -> None:
        f = self._file("runs", run_key)
        if not f.exists():
            return
        row = pq.read_table(f).to_pylist()[0]
        row.update(finished_at=now(), status=status)
        if notes:
            row["extra"] = to_json({**(json.loads(row["extra"]) if row.get("extra") else {}), **notes})
        _write_atomic(f, "runs", [row])

    def _samples(self, run_key: str) -> list[dict[str, Any]]:
        prefix = f"{_safe(run_key)}__"
        files = [p for p in (self.folder / "samples").glob(f"{prefix}*.parquet") if p.name.startswith(prefix)]
        return [r for p in files
                for r in pq.read_table(p, columns=["question_id", "error", "label_second"]).to_pylist()]

    def done_ids(self, run_key: str) -> set[str]:
        return {r["question_id"] for r in self._samples(run_key)}

    def errored_ids(self, run_key: str) -> set[str]:
        return set(self.errors(run_key))

    def errors(self, run_key: str) -> dict[str, str]:
        return {r["question_id"]: r["error"] for r in self._samples(run_key) if r["error"] is not None}

    def unjudged_ids(self, run_key: str) -> set[str]:
        return {r["question_id"] for r in self._samples(run_key) if r["error"] is None and r["label_second"] is None}

    def write_question(self, run_key: str, result: QuestionResult, *, replace: bool = False) -> bool:
        rows = question_rows(run_key, result)
        marker = self._file("samples", run_key, result.question_id)
        if marker.exists() and not replace:
            return False
        if marker.exists():
            marker.unlink()  # the question is "not written" until its new samples file lands
        for t in QUESTION_TABLES:
            if t == "samples":
                continue
            f = self._file(t, run_key, result.question_id)
            if rows[t]:
                _write_atomic(f, t, rows[t])
            elif f.exists():
                f.unlink()
        _write_atomic(marker, "samples", rows["samples"])
        return True

    def close(self) -> None:
        pass


class SweepSink(ShardWriter):
    """The sink of one sweep job: writes shards, and counts as done (or errored) what its shards hold plus what
    earlier sweeps already merged into the results file, so a re-run sweep computes nothing twice even after
    its shards were cleaned up. A shard copy of a question stands for it over the merged copy (it is newer)."""

    def __init__(self, folder: str | Path, db_path: str | Path) -> None:
        super().__init__(folder)
        self.db_path = Path(db_path)

    def _merged(self, run_key: str) -> tuple[set[str], dict[str, str], set[str]]:
        from bench.store.db import FileLocked
        from bench.store.reader import Results

        if not self.db_path.exists():
            return set(), {}, set()
        try:
            with Results(self.db_path) as r:
                return r.done_ids(run_key), r.errors(run_key), r.unjudged_ids(run_key)
        except FileLocked:  # a writer holds the file: the shards alone decide
            return set(), {}, set()

    def done_ids(self, run_key: str) -> set[str]:
        return super().done_ids(run_key) | self._merged(run_key)[0]

    def unjudged_ids(self, run_key: str) -> set[str]:
        in_shards = super().done_ids(run_key)
        return (self._merged(run_key)[2] - in_shards) | super().unjudged_ids(run_key)

    def errored_ids(self, run_key: str) -> set[str]:
        return set(self.errors(run_key))

    def errors(self, run_key: str) -> dict[str, str]:
        in_shards = super().done_ids(run_key)
        merged = {q: e for q, e in self._merged(run_key)[1].items() if q not in in_shards}
        return {**merged, **super().errors(run_key)}


def _files(folder: Path, table: str) -> list[str]:
    return sorted(str(p) for p in (folder / table).glob("*.parquet"))


def _is_shard_folder(d: Path) -> bool:
    return (d / "samples").is_dir() or (d / "runs").is_dir()


def _shard_folders(folders: list[Path]) -> list[Path]:
    """Shard folders as given, or found below a given folder (a whole sweep directory works too)."""
    out: list[Path] = []
    for d in folders:
        if _is_shard_folder(d):
            out.append(d)
        else:
            out.extend(sorted({p.parent for p in d.rglob("samples") if p.is_dir()} |
                              {p.parent for p in d.rglob("runs") if p.is_dir()}))
    return list(dict.fromkeys(out))


def merge_shards(glob_or_folder: str | Path, db_path: str | Path) -> int:
    """Load shard folders (a folder, or a glob of folders) into db_path; returns the questions added or replaced.

    A question missing from the DB is added; one whose shard copy is newer (answered_at) than the DB's replaces
    it (a retried question); anything else is left as it is, so merging twice changes nothing. Runs are
    upserted (the shard's status wins). Raises UserError for no shards or shards of another format version."""
    pattern = str(glob_or_folder)
    folders = _shard_folders([Path(p) for p in sorted(_glob.glob(pattern, recursive=True)) if Path(p).is_dir()])
    if not folders:
        raise UserError(f"no shard folder matches {pattern}; pass the folder the ShardWriter wrote to")
    files = {t: [f for d in folders for f in _files(d, t)] for t in ("runs", *QUESTION_TABLES)}
    if not files["samples"] and not files["runs"]:
        raise UserError(f"{pattern} holds no shards (expected samples/*.parquet); check the folder")
    _check_run_files(files["runs"], f"shards under {pattern}")
    try:
        return _merge(files, db_path)
    except (OSError, duckdb.Error, StorageFailure) as exc:
        if not isinstance(exc, StorageFailure) and not is_io_failure(exc):
            raise  # a defect, not the disk or a lock: keep its traceback
        failure = storage_failure(exc, f"merging shards into {db_path}")
        raise failure.with_safe(f"nothing was merged and the shards under {pattern} are intact",
                                f"{_FIXES.get(failure.kind, _FIXES['io'])} finish with: {merge_command(pattern, db_path)}") from exc


_FIXES = {"full": "free disk space, then", "readonly": "make the results file writable (or pass another --db), then",
          "denied": "make the results file writable (or pass another --db), then",
          "locked": "when that process has finished (or is stopped),", "io": "check the disk, then",
          "too_large": "raise the file-size limit (ulimit -f), then",
          "damaged": "move the results file aside (a fresh one is made), then"}


def _merge_runs(con: duckdb.DuckDBPyConnection, run_files: list[str]) -> None:
    """Upsert one row per run key: the shards of one run (`dataset.shard`) combined (bench.store.shard_runs), with
    the row an earlier merge left for shards not merged now; an existing run keeps its start."""
    by_key: dict[str, list[dict[str, Any]]] = {}
    for f in run_files:
        for r in pq.read_table(f).to_pylist():
            by_key.setdefault(r["run_key"], []).append(r)
    rows = []
    for key, got in by_key.items():
        old = stored_run(con, key)
        row = combine(got, old["extra"] if old else None)
        rows.append({**row, "extra": keep_name(row["extra"], old)})  # a stored run keeps its name
    cols = columns("runs")
    sets = ", ".join([f"{c} = excluded.{c}" for c in cols if c not in ("run_key", "started_at")] +
                     ["started_at = least(runs.started_at, excluded.started_at)"])
    con.register("_ombench_runs", arrow_table("runs", rows))
    try:
        sql(con, f"INSERT INTO runs BY NAME SELECT {', '.join(cols)} FROM _ombench_runs "
                 f"ON CONFLICT (run_key) DO UPDATE SET {sets}")
    finally:
        con.unregister("_ombench_runs")


def _merge(files: dict[str, list[str]], db_path: str | Path) -> int:
    con = connect(db_path)
    try:
        sql(con, "BEGIN TRANSACTION")
        try:
            if files["runs"]:
                _merge_runs(con, files["runs"])
            added = 0
            if files["samples"]:
                sql(con, "CREATE OR REPLACE TEMP TABLE _new_q AS SELECT s.run_key, s.question_id "
                         "FROM read_parquet(?, union_by_name=true) s LEFT JOIN samples d USING (run_key, question_id) "
                         "WHERE d.question_id IS NULL OR s.answered_at > d.answered_at "
                         "QUALIFY row_number() OVER (PARTITION BY s.run_key, s.question_id "
                         "ORDER BY s.answered_at DESC) = 1", [files["samples"]])
                added = sql(con, "SELECT count(*) FROM _new_q")[0][0]
                for t in QUESTION_TABLES:
                    sql(con, f"DELETE FROM {t} USING _new_q n WHERE {t}.run_key = n.run_key "
                             f"AND {t}.question_id = n.question_id")
                    if files[t]:
                        cols_t = ", ".join(f"x.{c}" for c in columns(t))
                        sql(con, f"INSERT OR IGNORE INTO {t} BY NAME SELECT {cols_t} FROM "
                                 "read_parquet(?, union_by_name=true) x SEMI JOIN _new_q USING (run_key, question_id)",
                            [files[t]])
                sql(con, "DROP TABLE _new_q")
            sql(con, "COMMIT")
        except BaseException:
            rollback(con)
            raise
        return int(added)
    finally:
        con.close()
