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

from bench.store.contract import FORMAT_VERSION, MemoryRow, RunManifest, SampleRow
from bench.store.db import Connection, connect, sql
from bench.store.texts import unpack, unpack_messages


class Results:
    """Read access to one DuckDB results file. Raises UserError when it is missing, locked or of another format."""

    def __init__(self, path: str | Path, *, read_only: bool = True, snapshot: bool = False) -> None:
        """`snapshot`: while a run writes the file, read a copy taken now (report, view, runs, export)."""
        self.path = Path(path)
        self.con: Connection = connect(self.path, read_only=read_only, snapshot=snapshot)

    # --- resumption -------------------------------------------------------------------------------------

    def done_ids(self, run_key: str) -> set[str]:
        return {r[0] for r in sql(self.con, "SELECT question_id FROM samples WHERE run_key = ?", [run_key])}

    def errored_ids(self, run_key: str) -> set[str]:
        return set(self.errors(run_key))

    def errors(self, run_key: str) -> dict[str, str]:
        return {r[0]: r[1] for r in sql(
            self.con, "SELECT question_id, error FROM samples WHERE run_key = ? AND error IS NOT NULL", [run_key])}

    def unjudged_ids(self, run_key: str) -> set[str]:
        return {r[0] for r in sql(self.con, "SELECT question_id FROM samples WHERE run_key = ? AND error IS NULL "
                                            "AND label_second IS NULL", [run_key])}

    # --- runs -------------------------------------------------------------------------------------------

    def runs(self) -> pd.DataFrame:
        """Every `runs` column, oldest run first."""
        return self._df("SELECT * FROM runs ORDER BY started_at, run_key")

    def run_keys(self) -> list[str]:
        return [r[0] for r in sql(self.con, "SELECT run_key FROM runs ORDER BY run_key")]

    def names(self) -> dict[str, str]:
        """run name (bench.store.run_names) -> run_key, for every run."""
        from bench.store.run_names import name_of

        return {name_of(r): str(r["run_key"]) for r in self.runs().to_dict("records")}

    def resolve_run(self, ref: str) -> str:
        """The run_key of `ref` (a run name from `ombench runs`, or a run_key). Raises UserError naming the
        known runs when neither matches."""
        from bench.errors import UserError

        if ref in self.run_keys():
            return ref
        names = self.names()
        if ref in names:
            return names[ref]
        raise UserError(f"run {ref!r} not in {self.path}; known runs (see `ombench runs --db {self.path}`): "
                        f"{', '.join(sorted(names)) or 'none'}")

    def run(self, run_key: str) -> RunManifest | None:
        """The run's manifest as stored (config, package_versions and extra decoded), or None if unknown."""
        df = self._df("SELECT * FROM runs WHERE run_key = ?", [run_key])
        if df.empty:
            return None
        r: dict[str, Any] = {str(k): (None if is_missing(v) else v) for k, v in df.iloc[0].to_dict().items()}
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

    def turns(self, run_key: str | None = None, question_id: str | None = None) -> pd.DataFrame:
        """Per replayed turn: Actor prompt tokens, its memory/raw split and generation (when the strategy
        reports them), and the memory events (comma-separated)."""
        where, params = _where(run_key=run_key, question_id=question_id)
        return self._df("SELECT run_key, question_id, turn, prompt_tokens, memory_tokens, raw_tokens, generation, "
                        f"events FROM turns {where} ORDER BY run_key, question_id, turn", params)

    def event_counts(self) -> pd.DataFrame:
        """Memory events per run: how many turns recorded each event (observe, reflect, buffer, activate,
        compact, retrieve, ... whatever the strategies report) and over how many questions."""
        return self._df("SELECT run_key, event, count(*) AS n_turns, count(DISTINCT question_id) AS n_questions "
                        "FROM (SELECT run_key, question_id, unnest(string_split(events, ',')) AS event FROM turns "
                        "WHERE events IS NOT NULL AND events <> '') GROUP BY ALL ORDER BY run_key, event")

    # --- calls per role ---------------------------------------------------------------------------------

    def latency_by_role(self) -> pd.DataFrame:
        """Per run and role: real calls answered by the provider (no response-cache hit, no error) and their
        latency p50/p95 in seconds."""
        return self._df(
            "SELECT run_key, role, count(*) AS n_calls, quantile_cont(latency_s, 0.5) AS p50_s, "
            "quantile_cont(latency_s, 0.95) AS p95_s FROM calls WHERE NOT coalesce(simulated, false) "
            "AND NOT coalesce(response_cache_hit, false) AND error IS NULL GROUP BY ALL ORDER BY run_key, role")

    def cost_by_role(self) -> pd.DataFrame:
        """Per run and role: real calls, their tokens and list cost in USD (response-cache hits count at the
        original call's price), and retries."""
        return self._df(
            "SELECT run_key, role, count(*) AS n_calls, sum(prompt_tokens)::BIGINT AS prompt_tokens, "
            "sum(completion_tokens)::BIGINT AS completion_tokens, sum(cost_usd) AS cost_usd, "
            "sum(retries)::BIGINT AS retries, count(*) FILTER (WHERE response_cache_hit) AS response_cache_hits "
            "FROM calls WHERE NOT coalesce(simulated, false) GROUP BY ALL ORDER BY run_key, role")

    # --- judges and retrieval ---------------------------------------------------------------------------

    def judge_labels(self) -> pd.DataFrame:
        """Per judged question: the primary verdict, the second judge's (NULL without one) and its model."""
        return self._df("SELECT run_key, question_id, label, label_second, judge_model, judge_second_model "
                        "FROM samples WHERE label IS NOT NULL ORDER BY run_key, question_id")

    def judgment_repeats(self) -> pd.DataFrame:
        """Every judge call's verdict (judge.repeats > 1 gives several per question; a panel, judge.panel, one or
        more per member, told apart by judge_model)."""
        return self._df("SELECT run_key, question_id, repeat_idx, judge_model, label FROM judgments "
                        "ORDER BY run_key, question_id, repeat_idx")

    def retrieval(self) -> pd.DataFrame:
        """Per run, level and k: LongMemEval's retrieval metrics averaged over the questions that have them."""
        return self._df("SELECT run_key, level, k, count(*) AS n_questions, avg(recall_any) AS recall_any, "
                        "avg(recall_all) AS recall_all, avg(ndcg_any) AS ndcg_any FROM retrieval "
                        "GROUP BY ALL ORDER BY run_key, level, k")

    # --- one question (the viewer) ----------------------------------------------------------------------

    def question_calls(self, run_key: str, question_id: str) -> pd.DataFrame:
        """The question's calls in issue order, with per-profile cache numbers as columns `<profile>_cached`,
        `<profile>_prefill`."""
        calls = self._df("SELECT * EXCLUDE (run_key, question_id) FROM calls WHERE run_key = ? AND question_id = ? "
                         "ORDER BY call_idx", [run_key, question_id])
        cache = self._df("SELECT call_idx, profile, cached_tokens, prefill_tokens FROM call_cache "
                         "WHERE run_key = ? AND question_id = ?", [run_key, question_id])
        for prof, g in cache.groupby("profile"):
            calls = calls.merge(g.drop(columns="profile").rename(columns={
                "cached_tokens": f"{prof}_cached", "prefill_tokens": f"{prof}_prefill"}), on="call_idx", how="left")
        return calls

    def call_texts(self, run_key: str, question_id: str) -> dict[int, tuple[list[dict[str, Any]] | None, str | None]]:
        """call_idx -> (request messages, reply) of the question's calls that kept their texts."""
        rows = sql(self.con, "SELECT call_idx, prompt, response FROM call_texts WHERE run_key = ? AND question_id = ? "
                             "ORDER BY call_idx", [run_key, question_id])
        return {int(i): (unpack_messages(p), unpack(r)) for i, p, r in rows}

    def memory(self, run_key: str, question_id: str) -> list[MemoryRow]:
        """The memory the question was answered from (as the strategy's memory_view read it), in order."""
        rows = sql(self.con, "SELECT item_idx, kind, text, generation, tokens FROM memory WHERE run_key = ? "
                             "AND question_id = ? ORDER BY item_idx", [run_key, question_id])
        return [MemoryRow(int(i), k, unpack(t) or "", g, n) for i, k, t, g, n in rows]

    def answer_prompts(self) -> dict[tuple[str, str], str]:
        """(run_key, question_id) -> the Actor's question-time prompt as one text (its messages' contents joined),
        for the questions that kept it (the last answer call of each)."""
        rows = sql(self.con, "SELECT t.run_key, t.question_id, t.prompt FROM call_texts t JOIN calls c USING "
                             "(run_key, question_id, call_idx) WHERE c.role = 'actor' AND c.phase = 'answer' AND "
                             "t.prompt IS NOT NULL ORDER BY t.run_key, t.question_id, t.call_idx")
        out = {}
        for rk, qid, blob in rows:
            msgs = unpack_messages(blob) or []
            out[(str(rk), str(qid))] = "\n".join(str(m.get("content", "")) for m in msgs)
        return out

    def memory_rows(self) -> pd.DataFrame:
        """Every memory view row (run_key, question_id, item_idx, kind, text decoded), in order."""
        df = self._df("SELECT run_key, question_id, item_idx, kind, text FROM memory ORDER BY run_key, question_id, "
                      "item_idx")
        df["text"] = [unpack(t) or "" for t in df.text]
        return df

    def memory_summary(self) -> pd.DataFrame:
        """Per run and question: memory items kept and the highest generation (OM: reflections so far)."""
        return self._df("SELECT run_key, question_id, count(*) AS n_items, max(generation) AS generation, "
                        "sum(tokens) FILTER (WHERE kind = 'observations') AS observation_tokens FROM memory "
                        "GROUP BY ALL ORDER BY run_key, question_id")

    def memory_outputs(self, run_key: str | None = None, question_id: str | None = None) -> pd.DataFrame:
        """Observer/Reflector calls per run, question, role, outcome (clean, fallback, rejected, truncated) and
        guard reason, with their input and output tokens (table `memory_outputs`)."""
        where, params = _where(run_key=run_key, question_id=question_id)
        return self._df("SELECT run_key, question_id, role, outcome, reason, calls, input_tokens, output_tokens "
                        f"FROM memory_outputs {where} ORDER BY run_key, question_id, role, outcome, reason", params)

    def retried_labels(self) -> pd.DataFrame:
        """Per run and question: the single-try `label`, `label_retried` (Mastra runner's count: the first try or
        any retry passed; None when the first try was not judged), `n_tries` (retries made) and question_type,
        is_abstention. Empty for a file written before `answer_tries` existed (opened read-only)."""
        have = sql(self.con, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'answer_tries'")
        if not have or not have[0][0]:
            return pd.DataFrame(columns=["run_key", "question_id", "question_type", "is_abstention", "label",
                                         "label_retried", "n_tries"])
        return self._df(
            "WITH t AS (SELECT run_key, question_id, bool_or(coalesce(label, false)) AS any_pass, count(*) AS n_tries "
            "FROM answer_tries GROUP BY ALL) "
            "SELECT s.run_key, s.question_id, s.question_type, s.is_abstention, s.label, "
            "CASE WHEN s.label IS NULL THEN NULL ELSE s.label OR coalesce(t.any_pass, false) END AS label_retried, "
            "coalesce(t.n_tries, 0) AS n_tries FROM samples s LEFT JOIN t USING (run_key, question_id) "
            "ORDER BY s.run_key, s.question_id")

    def judge_audits(self) -> pd.DataFrame:
        """Every stored `ombench judge-audit` result (`judge_audits` columns), newest first. Empty for a file
        written before the table existed (opened read-only)."""
        from bench.store.schema import columns

        have = sql(self.con, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'judge_audits'")
        if not have or not have[0][0]:
            return pd.DataFrame(columns=columns("judge_audits"))
        return self._df("SELECT * FROM judge_audits ORDER BY audited_at DESC")

    def unpriced_calls(self) -> pd.DataFrame:
        """Per run and model: real calls whose model has no known price (their cost counts as 0, not as free)."""
        return self._df("SELECT run_key, model, count(*) AS n_calls FROM calls WHERE NOT coalesce(simulated, false) "
                        "AND cost_known = false GROUP BY ALL ORDER BY run_key, model")

    def question_judgments(self, run_key: str, question_id: str) -> pd.DataFrame:
        """The question's judge repeats (repeat_idx, judge_model, raw, label)."""
        return self._df("SELECT repeat_idx, judge_model, raw, label FROM judgments WHERE run_key = ? AND "
                        "question_id = ? ORDER BY repeat_idx", [run_key, question_id])

    def question_tries(self, run_key: str, question_id: str) -> pd.DataFrame:
        """The question's retries of a wrong answer (answer_tries: try_idx, hypothesis, label, judge_raw, error,
        label_second, judge_second_raw), in order; empty for a file without the table, the second judge's columns
        null in a file written before they existed."""
        cols = {r[0] for r in sql(self.con, "SELECT column_name FROM information_schema.columns WHERE table_name = "
                                            "'answer_tries'")}
        want = ["try_idx", "hypothesis", "label", "judge_raw", "error", "label_second", "judge_second_raw"]
        if not cols:
            return pd.DataFrame(columns=want)
        select = ", ".join(c if c in cols else f"NULL AS {c}" for c in want)
        return self._df(f"SELECT {select} FROM answer_tries WHERE run_key = ? AND question_id = ? ORDER BY try_idx",
                        [run_key, question_id])

    def question_retrieval(self, run_key: str, question_id: str) -> pd.DataFrame:
        return self._df("SELECT level, k, recall_any, recall_all, ndcg_any, n_gold, n_retrieved FROM retrieval "
                        "WHERE run_key = ? AND question_id = ? ORDER BY level, k", [run_key, question_id])

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


def _where(**eq: Any) -> tuple[str, list[Any]]:
    """A WHERE clause of the given column = value pairs that are not None."""
    used = [(k, v) for k, v in eq.items() if v is not None]
    if not used:
        return "", []
    return "WHERE " + " AND ".join(f"{k} = ?" for k, _ in used), [v for _, v in used]


def is_missing(v: Any) -> bool:
    """A cell read back from a results file that holds nothing: None, NaN, pandas' NA or NaT (a column with no
    value, such as no second judge, or one added after the row was written). Scalars only."""
    if v is None or v is pd.NA or v is pd.NaT:
        return True
    if isinstance(v, float):  # numpy's float64 too
        return v != v
    if isinstance(v, (str, bytes, int, list, tuple, dict)):  # a value, even when it holds NaN
        return False
    got = pd.isna(v)  # numpy scalars (a float32 NaN, a datetime64 NaT); an array is a value
    return bool(got) if getattr(got, "ndim", 0) == 0 else False
