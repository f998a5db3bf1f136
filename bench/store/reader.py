"""Reading a results file: every query the summary, the report, export and resumption need, in one place.

`Results(path)` opens the file read-only (after the format-version check) and answers with pandas frames or
typed records; `Store` extends it with the writes. Ad-hoc analysis (notebooks, tests) may use `query`.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Self

import pandas as pd

from bench.store.contract import FORMAT_VERSION, RunManifest, SampleRow
from bench.store.db import Connection, connect, sql


class Results:
    """Read access to one DuckDB results file. Raises UserError when it is missing, locked or of another format."""

    def __init__(self, path: str | Path, *, read_only: bool = True) -> None:
        self.path = Path(path)
        self.con: Connection = connect(self.path, read_only=read_only)

    # --- resumption -------------------------------------------------------------------------------------

    def done_ids(self, run_key: str) -> set[str]:
        return {r[0] for r in sql(self.con, "SELECT question_id FROM samples WHERE run_key = ?", [run_key])}

    def errored_ids(self, run_key: str) -> set[str]:
        return {r[0] for r in sql(
            self.con, "SELECT question_id FROM samples WHERE run_key = ? AND error IS NOT NULL", [run_key])}

    # --- runs -------------------------------------------------------------------------------------------

    def runs(self) -> pd.DataFrame:
        """Every `runs` column, oldest run first."""
        return self._df("SELECT * FROM runs ORDER BY started_at, run_key")

    def run_keys(self) -> list[str]:
        return [r[0] for r in sql(self.con, "SELECT run_key FROM runs ORDER BY run_key")]

    def run(self, run_key: str) -> RunManifest | None:
        """The run's manifest as stored (config, package_versions and extra decoded), or None if unknown."""
        df = self._df("SELECT * FROM runs WHERE run_key = ?", [run_key])
        if df.empty:
            return None
        r: dict[str, Any] = {str(k): (None if _isna(v) else v) for k, v in df.iloc[0].to_dict().items()}
        for k in ("config", "package_versions", "extra"):
            r[k] = json.loads(r[k]) if r[k] else {}
        r["n_questions_planned"] = None if r["n_questions_planned"] is None else int(r["n_questions_planned"])
        r["format_version"] = int(r["format_version"] or FORMAT_VERSION)
        for k in ("started_at", "finished_at"):
            r[k] = None if r[k] is None else pd.Timestamp(r[k]).to_pydatetime()
        return RunManifest(**r)

    def headline(self, run_keys: list[str] | None = None) -> pd.DataFrame:
        """`v_headline` (one row per run: accuracy, counts, dataset, models), ordered by name, strategy, dataset."""
        df = self._df("SELECT * FROM v_headline ORDER BY name, strategy, dataset_name, run_key")
        return df[df.run_key.isin(run_keys)].reset_index(drop=True) if run_keys else df

    def actor_models(self) -> dict[str, str]:
        """run_key -> the model its real Actor calls used most (for runs whose manifest names none)."""
        return dict(sql(self.con, "SELECT run_key, mode(model) FROM calls WHERE role = 'actor' "
                                  "AND NOT coalesce(simulated, false) GROUP BY run_key"))

    # --- per question -----------------------------------------------------------------------------------

    def samples(self, run_key: str | None = None) -> pd.DataFrame:
        """`samples` rows (every column), ordered by run and question id."""
        where, params = ("WHERE run_key = ?", [run_key]) if run_key else ("", [])
        return self._df(f"SELECT * FROM samples {where} ORDER BY run_key, question_id", params)

    def sample_rows(self, run_key: str) -> list[SampleRow]:
        """The run's samples as records, ordered by question id."""
        names = [f.name for f in dataclasses.fields(SampleRow)]
        rows = sql(self.con, f"SELECT {', '.join(names)} FROM samples WHERE run_key = ? ORDER BY question_id", [run_key])
        return [SampleRow(**dict(zip(names, r))) for r in rows]

    def accuracy_by_type(self) -> pd.DataFrame:
        """`v_accuracy_by_type` with each run's name, strategy and dataset."""
        return self._df("SELECT r.name, r.strategy, r.dataset_name, r.dataset_sha256, a.* FROM v_accuracy_by_type a "
                        "JOIN runs r USING (run_key) ORDER BY r.name, r.strategy, r.dataset_name, a.question_type")

    def turns(self) -> pd.DataFrame:
        return self._df("SELECT run_key, question_id, turn, prompt_tokens, events FROM turns "
                        "ORDER BY run_key, question_id, turn")

    # --- caches and cost --------------------------------------------------------------------------------

    def profiles(self) -> list[str]:
        """Cache profiles with any simulated numbers."""
        return [r[0] for r in sql(self.con, "SELECT DISTINCT profile FROM v_cache ORDER BY profile")]

    def cache(self) -> pd.DataFrame:
        """`v_cache`: per run and profile, Actor prompts, prompt/cached/prefill tokens and hit rate."""
        return self._df("SELECT * FROM v_cache ORDER BY run_key, profile")

    def prefill(self) -> pd.DataFrame:
        """Per run and profile: questions, mean prefill tokens per question (all calls, and the Actor's alone)."""
        return self._df("SELECT run_key, profile, count(*) AS n_questions, avg(prefill_tokens) AS prefill_per_question,"
                        " avg(actor_prefill_tokens) AS actor_prefill_per_question FROM v_prefill "
                        "GROUP BY run_key, profile ORDER BY run_key, profile")

    def cost(self) -> pd.DataFrame:
        """`v_cost`: per run, USD total, per question, per correct answer, and the judge's share."""
        return self._df("SELECT * FROM v_cost ORDER BY run_key")

    # --- plumbing ---------------------------------------------------------------------------------------

    def query(self, statement: str, params: list[Any] | None = None) -> pd.DataFrame:
        """Ad-hoc SQL for analysis (notebooks, tests); the package itself reads through the methods above."""
        return self._df(statement, params)

    def _df(self, statement: str, params: list[Any] | None = None) -> pd.DataFrame:
        return self.con.execute(statement, params or []).df()

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _isna(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v) or v is pd.NaT
