"""The DuckDB store: one transaction per question, idempotent on (run_key, question_id), resumable.

Crash safety comes from DuckDB's write-ahead log: a question's rows commit together or not at all, so a
process killed mid-run loses at most the question in flight, and a rerun skips the ids already done.
"""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import duckdb

from bench.errors import storage_failure
from bench.store.contract import QuestionResult, RunManifest
from bench.store.db import insert_rows, is_io_failure, rollback, sql
from bench.store.reader import Results
from bench.store.rows import Row, now, question_rows, run_row, to_json
from bench.store.schema import QUESTION_TABLES, columns


class Store(Results):
    """A `ResultSink` on one DuckDB file, plus everything `Results` reads. Raises UserError when the file is
    locked by another process or holds another format version."""

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        super().__init__(path, read_only=read_only)
        self._lock = threading.Lock()

    # --- runs -------------------------------------------------------------------------------------------

    def upsert_run(self, run: RunManifest) -> None:
        """Insert the run, or update its fields (started_at and the stable name of an existing run are kept)."""
        from bench.store.run_names import keep_name, stored_run

        row = run_row(run)
        cols = columns("runs")
        sets = ", ".join(f"{c} = excluded.{c}" for c in cols if c not in ("run_key", "started_at"))
        with self._lock, self._failing("writing the run's manifest to"):
            row["extra"] = keep_name(row["extra"], stored_run(self.con, run.run_key))
            sql(self.con, f"INSERT INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))}) "
                          f"ON CONFLICT (run_key) DO UPDATE SET {sets}", [row[c] for c in cols])

    def finish_run(self, run_key: str, status: str = "finished", notes: Mapping[str, Any] | None = None) -> None:
        with self._lock, self._failing("marking the run finished in"):
            sql(self.con, "UPDATE runs SET finished_at = ?, status = ? WHERE run_key = ?", [now(), status, run_key])
            if notes:
                got = self.con.execute("SELECT extra FROM runs WHERE run_key = ?", [run_key]).fetchone()
                extra = {**(json.loads(got[0]) if got and got[0] else {}), **notes}
                sql(self.con, "UPDATE runs SET extra = ? WHERE run_key = ?", [to_json(extra), run_key])

    def record_judge_audit(self, row: Mapping[str, Any]) -> None:
        """Store one `ombench judge-audit` result (a `judge_audits` row; `result` a mapping, `audited_at` None for
        now), replacing an earlier audit of the same judge configuration, dataset and probe pick."""
        from bench.store.schema import PRIMARY_KEYS

        full = {c: row.get(c) for c in columns("judge_audits")}
        full["result"] = to_json(full["result"] or {})
        full["audited_at"] = full["audited_at"] or now()
        keys = PRIMARY_KEYS["judge_audits"]
        with self._lock, self._failing("writing the judge audit to"):
            sql(self.con, "DELETE FROM judge_audits WHERE " + " AND ".join(f"{k} IS NOT DISTINCT FROM ?" for k in keys),
                [full[k] for k in keys])
            insert_rows(self.con, "judge_audits", [full])

    def close(self) -> None:
        """Checkpoint the write-ahead log into the file, then close it. DuckDB's own checkpoint at close swallows
        its errors (a full disk or a file-size limit left the results in the `.wal` and the command exited 0), so
        it is asked for explicitly: a failure is a StorageFailure (the WAL keeps every committed question: the
        next open replays it, so a re-run recovers them). The connection is closed either way."""
        with self._lock, self._failing("closing"):
            try:
                self.con.execute("CHECKPOINT")
            finally:
                super().close()

    @contextmanager
    def _failing(self, doing: str) -> Iterator[None]:
        """DuckDB's I/O errors (disk full, read-only) as one StorageFailure line naming the file."""
        try:
            yield
        except (OSError, duckdb.Error) as exc:
            if not is_io_failure(exc):  # a defect, not the disk: keep its traceback
                raise
            raise storage_failure(exc, f"{doing} {self.path}") from exc

    # --- questions --------------------------------------------------------------------------------------

    def write_question(self, run_key: str, result: QuestionResult, *, replace: bool = False) -> bool:
        """Write one question's rows in one transaction. Returns False (and writes nothing) when the
        question is already stored and replace is False; with replace=True its old rows are swapped out."""
        return self.write_questions(run_key, [result], replace=replace) == 1

    def write_questions(self, run_key: str, results: Iterable[QuestionResult], *, replace: bool = False) -> int:
        """Write many questions in one transaction (all or nothing); returns how many were written. Stored
        ids are skipped unless replace, which swaps their old rows out."""
        batch: dict[str, list[Row]] = {t: [] for t in QUESTION_TABLES}
        qids: list[str] = []
        for res in results:
            rows = question_rows(run_key, res)
            qids.append(res.question_id)
            for t in QUESTION_TABLES:
                batch[t] += rows[t]
        what = f"question {qids[0]}" if len(qids) == 1 else f"{len(qids)} questions"
        with self._lock, self._failing(f"writing {what} to"):
            con = self.con
            sql(con, "BEGIN TRANSACTION")
            try:
                if replace:
                    for t in QUESTION_TABLES:
                        sql(con, f"DELETE FROM {t} WHERE run_key = ? AND list_contains(?, question_id)", [run_key, qids])
                    done: set[str] = set()
                else:
                    done = {r[0] for r in sql(con, "SELECT question_id FROM samples WHERE run_key = ? "
                                                   "AND list_contains(?, question_id)", [run_key, qids])}
                for t in QUESTION_TABLES:
                    insert_rows(con, t, [r for r in batch[t] if r["question_id"] not in done])
                sql(con, "COMMIT")
            except BaseException:
                rollback(con)
                raise
        return len(set(qids) - done)

