"""Parquet shards for multi-process sweeps: each worker appends one file per table per question (atomic
rename), and `merge_shards` loads them into one DuckDB file idempotently.

Layout: <folder>/<table>/<run>__<question>.parquet. A question counts as written once its `samples`
file exists (written last), so a worker killed mid-question leaves nothing that merge would load.
"""

from __future__ import annotations

import glob as _glob
import hashlib
import os
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

import pyarrow.parquet as pq

from bench.errors import UserError
from bench.store.rows import question_rows, run_row
from bench.store.schema import QUESTION_TABLES, columns
from bench.store.writer import arrow_table, connect, ensure_schema, sql


def _safe(s: str) -> str:
    clean = re.sub(r"[^A-Za-z0-9._-]+", "_", s)[:80]
    return f"{clean}-{hashlib.blake2b(s.encode(), digest_size=4).hexdigest()}"


def _write_atomic(path: Path, table: str, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(arrow_table(table, rows), tmp)
    os.replace(tmp, path)


class ShardWriter:
    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)

    def _file(self, table: str, run_key: str, qid: str | None = None) -> Path:
        name = _safe(run_key) if qid is None else f"{_safe(run_key)}__{_safe(qid)}"
        return self.folder / table / f"{name}.parquet"

    def upsert_run(self, run_key: str, manifest: Mapping[str, Any]) -> None:
        _write_atomic(self._file("runs", run_key), "runs", [run_row(run_key, manifest)])

    def finish_run(self, run_key: str, status: str = "finished") -> None:
        from bench.store.rows import now

        f = self._file("runs", run_key)
        if not f.exists():
            return
        row = pq.read_table(f).to_pylist()[0]
        row.update(finished_at=now(), status=status)
        _write_atomic(f, "runs", [row])

    def done_question_ids(self, run_key: str) -> set[str]:
        d = self.folder / "samples"
        prefix = f"{_safe(run_key)}__"
        files = [p for p in d.glob("*.parquet") if p.name.startswith(prefix)] if d.exists() else []
        return {r["question_id"] for p in files for r in pq.read_table(p, columns=["question_id"]).to_pylist()}

    def write_question(
        self,
        run_key: str,
        sample: Mapping[str, Any],
        calls: Iterable[Any] = (),
        turns: Iterable[Any] = (),
        judgments: Iterable[Any] = (),
        *,
        replace: bool = False,
    ) -> bool:
        rows = question_rows(run_key, sample, calls, turns, judgments)
        qid = rows["samples"][0]["question_id"]
        marker = self._file("samples", run_key, qid)
        if marker.exists() and not replace:
            return False
        if marker.exists():
            marker.unlink()  # the question is "not written" until its new samples file lands
        for t in QUESTION_TABLES:
            if t == "samples":
                continue
            f = self._file(t, run_key, qid)
            if rows[t]:
                _write_atomic(f, t, rows[t])
            elif f.exists():
                f.unlink()
        _write_atomic(marker, "samples", rows["samples"])
        return True

    def close(self) -> None:  # same surface as Store
        pass


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
    """Load shard folders (a folder, or a glob of folders) into db_path; returns questions newly added.

    Questions already in the DB are left as they are; runs are upserted (the shard's status wins)."""
    pattern = str(glob_or_folder)
    folders = [Path(p) for p in sorted(_glob.glob(pattern, recursive=True)) if Path(p).is_dir()]
    folders = _shard_folders(folders)
    if not folders:
        raise UserError(f"no shard folder matches {pattern}; pass the folder the ShardWriter wrote to")
    files = {t: [f for d in folders for f in _files(d, t)] for t in ("runs", *QUESTION_TABLES)}
    if not files["samples"] and not files["runs"]:
        raise UserError(f"{pattern} holds no shards (expected samples/*.parquet); check the folder")
    con = connect(db_path)
    try:
        ensure_schema(con)
        sql(con, "BEGIN TRANSACTION")
        try:
            if files["runs"]:
                cols = columns("runs")
                sets = ", ".join(f"{c} = excluded.{c}" for c in cols if c not in ("run_key", "started_at"))
                sql(
                    con,
                    f"INSERT INTO runs BY NAME SELECT {', '.join(cols)} FROM read_parquet(?, union_by_name=true) "
                    f"ON CONFLICT (run_key) DO UPDATE SET {sets}", [files["runs"]])
            added = 0
            if files["samples"]:
                sql(
                    con,
                    "CREATE OR REPLACE TEMP TABLE _new_q AS SELECT DISTINCT s.run_key, s.question_id "
                    "FROM read_parquet(?, union_by_name=true) s ANTI JOIN samples USING (run_key, question_id)",
                    [files["samples"]])
                added = sql(con, "SELECT count(*) FROM _new_q")[0][0]
                for t in QUESTION_TABLES:
                    if not files[t]:
                        continue
                    cols = ", ".join(f"x.{c}" for c in columns(t))
                    sql(
                        con,
                        f"INSERT OR IGNORE INTO {t} BY NAME SELECT {cols} FROM read_parquet(?, union_by_name=true) x "
                        "SEMI JOIN _new_q USING (run_key, question_id)", [files[t]])
                sql(con, "DROP TABLE _new_q")
            sql(con, "COMMIT")
        except BaseException:
            sql(con, "ROLLBACK")
            raise
        return int(added)
    finally:
        con.close()
