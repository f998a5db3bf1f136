"""The DuckDB store: one transaction per question, idempotent on (run_key, question_id), resumable.

Crash safety comes from DuckDB's write-ahead log: a question's rows commit together or not at all, so a
process killed mid-run loses at most the question in flight, and a rerun skips the ids already done.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Iterable, Mapping

import pyarrow as pa

from bench.errors import UserError
from bench.store.rows import now, question_rows, run_row
from bench.store.schema import QUESTION_TABLES, arrow_schema, columns, ddl, view_ddl


def connect(path: str | Path, read_only: bool = False):
    import duckdb

    p = Path(path)
    if read_only and not p.exists():
        raise UserError(f"DuckDB file {p} not found; run `ombench run` first or pass the right --db")
    if not read_only:
        p.parent.mkdir(parents=True, exist_ok=True)
    try:
        return duckdb.connect(str(p), read_only=read_only)
    except duckdb.IOException as exc:
        msg = str(exc).splitlines()[0]
        raise UserError(f"cannot open {p}: {msg}; close the other process using it or write to shards") from exc


def sql(con, statement: str, params: list | None = None) -> list[tuple]:
    """Execute and fetch everything (DuckDB 2 refuses new work while a result is unfinished)."""
    return con.execute(statement, params or []).fetchall()


def ensure_schema(con) -> None:
    for stmt in ddl():
        sql(con, stmt)
    for stmt in view_ddl():
        sql(con, stmt)


def arrow_table(table: str, rows: list[dict]) -> pa.Table:
    schema = arrow_schema(table)
    return pa.Table.from_pylist([{c: r.get(c) for c in schema.names} for r in rows], schema=schema)


def insert_rows(con, table: str, rows: list[dict]) -> None:
    if not rows:
        return
    tbl = arrow_table(table, rows)
    con.register("_ombench_rows", tbl)
    try:
        sql(con, f"INSERT INTO {table} BY NAME SELECT * FROM _ombench_rows")
    finally:
        con.unregister("_ombench_rows")


class Store:
    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self.con = connect(self.path, read_only)
        self._lock = threading.Lock()
        if not read_only:
            ensure_schema(self.con)

    # --- runs -------------------------------------------------------------------------------------------

    def upsert_run(self, run_key: str, manifest: Mapping[str, Any]) -> None:
        """Insert the run, or update its manifest fields (started_at of an existing run is kept).

        Manifest keys: name, strategy, config (dict; secrets scrubbed), git_commit, git_dirty,
        package_versions (dict), dataset_name, dataset_sha256, dataset_split, n_questions_planned,
        tokenizer, price_map_version, actor_model, judge_model, status; anything else goes to `extra`.
        """
        row = run_row(run_key, manifest)
        cols = columns("runs")
        keep = {"run_key", "started_at"}
        sets = ", ".join(f"{c} = excluded.{c}" for c in cols if c not in keep)
        with self._lock:
            sql(
                self.con,
                f"INSERT INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))}) "
                f"ON CONFLICT (run_key) DO UPDATE SET {sets}",
                [row[c] for c in cols],
            )

    def finish_run(self, run_key: str, status: str = "finished") -> None:
        with self._lock:
            sql(self.con, "UPDATE runs SET finished_at = ?, status = ? WHERE run_key = ?", [now(), status, run_key])

    # --- questions --------------------------------------------------------------------------------------

    def done_question_ids(self, run_key: str) -> set[str]:
        with self._lock:
            rows = sql(self.con, "SELECT question_id FROM samples WHERE run_key = ?", [run_key])
        return {r[0] for r in rows}

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
        """Write one question's rows in one transaction. Returns False (and writes nothing) when the
        question is already stored and replace is False; with replace=True its old rows are swapped out."""
        rows = question_rows(run_key, sample, calls, turns, judgments)
        qid = rows["samples"][0]["question_id"]
        with self._lock:
            con = self.con
            sql(con, "BEGIN TRANSACTION")
            try:
                present = sql(
                    con, "SELECT count(*) FROM samples WHERE run_key = ? AND question_id = ?", [run_key, qid]
                )[0][0]
                if present and not replace:
                    sql(con, "ROLLBACK")
                    return False
                if present or replace:
                    for t in QUESTION_TABLES:
                        sql(con, f"DELETE FROM {t} WHERE run_key = ? AND question_id = ?", [run_key, qid])
                for t in QUESTION_TABLES:
                    insert_rows(con, t, rows[t])
                sql(con, "COMMIT")
            except BaseException:
                sql(con, "ROLLBACK")
                raise
        return True

    def write_questions(self, run_key: str, items: Iterable[Any], *, replace: bool = False) -> int:
        """Bulk form for imports: items are samples or (sample, calls, turns, judgments) tuples, written in
        one transaction (all or nothing). Returns how many were written; stored ids are skipped unless replace."""
        batch: dict[str, list[dict]] = {t: [] for t in QUESTION_TABLES}
        qids: list[str] = []
        for it in items:
            sample, *rest = it if isinstance(it, tuple) else (it,)
            rows = question_rows(run_key, sample, *(list(rest) + [()] * (3 - len(rest))))
            qids.append(rows["samples"][0]["question_id"])
            for t in QUESTION_TABLES:
                batch[t] += rows[t]
        with self._lock:
            con = self.con
            sql(con, "BEGIN TRANSACTION")
            try:
                done = {r[0] for r in sql(con, "SELECT question_id FROM samples WHERE run_key = ?", [run_key])}
                if replace:
                    for t in QUESTION_TABLES:
                        sql(con, f"DELETE FROM {t} WHERE run_key = ? AND list_contains(?, question_id)", [run_key, qids])
                    done = set()
                for t in QUESTION_TABLES:
                    insert_rows(con, t, [r for r in batch[t] if r["question_id"] not in done])
                sql(con, "COMMIT")
            except BaseException:
                sql(con, "ROLLBACK")
                raise
        return len(set(qids) - done)

    # --- reading ----------------------------------------------------------------------------------------

    def query(self, statement: str, params: list | None = None):
        """A pandas DataFrame of the result."""
        with self._lock:
            return self.con.execute(statement, params or []).df()

    def close(self) -> None:
        with self._lock:
            self.con.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
