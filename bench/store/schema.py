"""DuckDB tables (long/tidy, one row per grain) and the views everything else reads.

Column lists are the single definition: DDL, Parquet shard schemas and row builders all derive from them.
"""

from __future__ import annotations

import pyarrow as pa

# (column, DuckDB type, Arrow type)
Col = tuple[str, str, pa.DataType]

_S, _I, _F, _B, _T, _Z = pa.string(), pa.int64(), pa.float64(), pa.bool_(), pa.timestamp("us"), pa.binary()

TABLES: dict[str, list[Col]] = {
    "runs": [
        ("run_key", "VARCHAR", _S), ("name", "VARCHAR", _S), ("strategy", "VARCHAR", _S),
        ("config", "JSON", _S), ("git_commit", "VARCHAR", _S), ("git_dirty", "BOOLEAN", _B),
        ("package_versions", "JSON", _S), ("dataset_name", "VARCHAR", _S), ("dataset_sha256", "VARCHAR", _S),
        ("dataset_split", "VARCHAR", _S), ("n_questions_planned", "BIGINT", _I), ("tokenizer", "VARCHAR", _S),
        ("price_map_version", "VARCHAR", _S), ("actor_model", "VARCHAR", _S), ("judge_model", "VARCHAR", _S),
        ("extra", "JSON", _S), ("started_at", "TIMESTAMP", _T), ("finished_at", "TIMESTAMP", _T),
        ("status", "VARCHAR", _S), ("format_version", "BIGINT", _I),
    ],
    "samples": [
        ("run_key", "VARCHAR", _S), ("question_id", "VARCHAR", _S), ("question_type", "VARCHAR", _S),
        ("is_abstention", "BOOLEAN", _B), ("hypothesis", "VARCHAR", _S), ("label", "BOOLEAN", _B),
        ("label_strict", "BOOLEAN", _B), ("judge_raw", "VARCHAR", _S), ("judge_model", "VARCHAR", _S),
        ("prompt_tokens", "BIGINT", _I), ("completion_tokens", "BIGINT", _I), ("cost_usd", "DOUBLE", _F),
        ("error", "VARCHAR", _S), ("checkpoint_restored", "BOOLEAN", _B), ("answered_at", "TIMESTAMP", _T),
        ("question", "VARCHAR", _S), ("gold_answer", "VARCHAR", _S), ("question_date", "VARCHAR", _S),
        ("label_second", "BOOLEAN", _B), ("judge_second_raw", "VARCHAR", _S), ("judge_second_model", "VARCHAR", _S),
    ],
    "calls": [
        ("run_key", "VARCHAR", _S), ("question_id", "VARCHAR", _S), ("call_idx", "BIGINT", _I),
        ("role", "VARCHAR", _S), ("model", "VARCHAR", _S), ("phase", "VARCHAR", _S), ("simulated", "BOOLEAN", _B),
        ("prompt_tokens", "BIGINT", _I), ("completion_tokens", "BIGINT", _I), ("cached_reported", "BIGINT", _I),
        ("cache_write_reported", "BIGINT", _I), ("cost_usd", "DOUBLE", _F), ("latency_s", "DOUBLE", _F),
        ("response_cache_hit", "BOOLEAN", _B), ("retries", "BIGINT", _I), ("error", "VARCHAR", _S),
        ("sim_time", "TIMESTAMP", _T), ("cost_known", "BOOLEAN", _B), ("finish_reason", "VARCHAR", _S),
    ],
    "call_cache": [
        ("run_key", "VARCHAR", _S), ("question_id", "VARCHAR", _S), ("call_idx", "BIGINT", _I),
        ("profile", "VARCHAR", _S), ("cached_tokens", "BIGINT", _I), ("prefill_tokens", "BIGINT", _I),
        ("write_tokens", "BIGINT", _I), ("cost_usd", "DOUBLE", _F),
    ],
    "turns": [
        ("run_key", "VARCHAR", _S), ("question_id", "VARCHAR", _S), ("turn", "BIGINT", _I),
        ("sim_time", "TIMESTAMP", _T), ("prompt_tokens", "BIGINT", _I), ("events", "VARCHAR", _S),
        ("memory_tokens", "BIGINT", _I), ("raw_tokens", "BIGINT", _I), ("generation", "BIGINT", _I),
    ],
    "turn_cache": [
        ("run_key", "VARCHAR", _S), ("question_id", "VARCHAR", _S), ("turn", "BIGINT", _I),
        ("profile", "VARCHAR", _S), ("cached_tokens", "BIGINT", _I), ("prefill_tokens", "BIGINT", _I),
    ],
    "judgments": [
        ("run_key", "VARCHAR", _S), ("question_id", "VARCHAR", _S), ("repeat_idx", "BIGINT", _I),
        ("judge_model", "VARCHAR", _S), ("raw", "VARCHAR", _S), ("label", "BOOLEAN", _B),
    ],
    # a call's request messages (JSON) and reply, each zlib-compressed UTF-8 (bench.store.texts)
    "call_texts": [
        ("run_key", "VARCHAR", _S), ("question_id", "VARCHAR", _S), ("call_idx", "BIGINT", _I),
        ("prompt", "BLOB", _Z), ("response", "BLOB", _Z),
    ],
    "memory": [
        ("run_key", "VARCHAR", _S), ("question_id", "VARCHAR", _S), ("item_idx", "BIGINT", _I),
        ("kind", "VARCHAR", _S), ("text", "BLOB", _Z), ("generation", "BIGINT", _I), ("tokens", "BIGINT", _I),
    ],
    # Observer/Reflector calls of a question grouped by how the output guards judged them (om_core.diagnostics)
    "memory_outputs": [
        ("run_key", "VARCHAR", _S), ("question_id", "VARCHAR", _S), ("role", "VARCHAR", _S),
        ("outcome", "VARCHAR", _S), ("reason", "VARCHAR", _S), ("calls", "BIGINT", _I),
        ("input_tokens", "BIGINT", _I), ("output_tokens", "BIGINT", _I),
    ],
    # retries of a wrong answer (answer.retries): try 1.. after the sample's first try
    "answer_tries": [
        ("run_key", "VARCHAR", _S), ("question_id", "VARCHAR", _S), ("try_idx", "BIGINT", _I),
        ("hypothesis", "VARCHAR", _S), ("label", "BOOLEAN", _B), ("judge_raw", "VARCHAR", _S),
        ("error", "VARCHAR", _S), ("label_second", "BOOLEAN", _B), ("judge_second_raw", "VARCHAR", _S),
    ],
    # `ombench judge-audit` results, keyed by the judge configuration they qualify (model, template text, parse rule),
    # the audited dataset and the probe pick; runs judged by that configuration show its false-positive rate
    "judge_audits": [
        ("judge_model", "VARCHAR", _S), ("judge_source", "VARCHAR", _S), ("judge_parse", "VARCHAR", _S),
        ("templates_sha256", "VARCHAR", _S), ("dataset_name", "VARCHAR", _S), ("n_requested", "BIGINT", _I),
        ("seed", "BIGINT", _I), ("n_questions", "BIGINT", _I), ("fp_hits", "BIGINT", _I), ("fp_n", "BIGINT", _I),
        ("fn_hits", "BIGINT", _I), ("fn_n", "BIGINT", _I), ("verdict", "VARCHAR", _S), ("result", "JSON", _S),
        ("offline_engine", "BOOLEAN", _B), ("audited_at", "TIMESTAMP", _T),
    ],
    "retrieval": [
        ("run_key", "VARCHAR", _S), ("question_id", "VARCHAR", _S), ("level", "VARCHAR", _S), ("k", "BIGINT", _I),
        ("recall_any", "DOUBLE", _F), ("recall_all", "DOUBLE", _F), ("ndcg_any", "DOUBLE", _F),
        ("n_gold", "BIGINT", _I), ("n_retrieved", "BIGINT", _I),
    ],
}

PRIMARY_KEYS: dict[str, tuple[str, ...]] = {
    "runs": ("run_key",),
    "samples": ("run_key", "question_id"),
    "calls": ("run_key", "question_id", "call_idx"),
    "call_cache": ("run_key", "question_id", "call_idx", "profile"),
    "turns": ("run_key", "question_id", "turn"),
    "turn_cache": ("run_key", "question_id", "turn", "profile"),
    "judgments": ("run_key", "question_id", "repeat_idx"),
    "call_texts": ("run_key", "question_id", "call_idx"),
    "memory": ("run_key", "question_id", "item_idx"),
    "retrieval": ("run_key", "question_id", "level", "k"),
    "memory_outputs": ("run_key", "question_id", "role", "outcome", "reason"),
    "answer_tries": ("run_key", "question_id", "try_idx"),
    "judge_audits": ("judge_model", "judge_source", "judge_parse", "templates_sha256", "dataset_name", "n_requested",
                     "seed"),
}

# Tables whose rows belong to one question (written, replaced and merged together).
QUESTION_TABLES = ("samples", "calls", "call_cache", "turns", "turn_cache", "judgments", "call_texts", "memory",
                   "retrieval", "memory_outputs", "answer_tries")


def columns(table: str) -> list[str]:
    return [c for c, _, _ in TABLES[table]]


def arrow_schema(table: str) -> pa.Schema:
    return pa.schema([(c, t) for c, _, t in TABLES[table]])


# columns added to a table without a format bump (last in the table): a file that has the table without them gains
# them, empty, when opened for writing (answer_tries: the second judge's verdict on each retry)
ADDED_COLUMNS: dict[str, tuple[str, ...]] = {"answer_tries": ("label_second", "judge_second_raw")}


def ddl() -> list[str]:
    out = []
    for name, cols in TABLES.items():
        body = ",\n  ".join(f"{c} {t}" for c, t, _ in cols)
        out.append(f"CREATE TABLE IF NOT EXISTS {name} (\n  {body},\n  PRIMARY KEY ({', '.join(PRIMARY_KEYS[name])})\n)")
        types = {c: t for c, t, _ in cols}
        out += [f"ALTER TABLE {name} ADD COLUMN IF NOT EXISTS {c} {types[c]}" for c in ADDED_COLUMNS.get(name, ())]
    return out


# Actor prompts with per-profile cache numbers: real/simulated actor calls; for a question that recorded
# no actor call cache rows, its turn-level numbers stand in (so nothing is counted twice).
_ACTOR_CACHE = """
SELECT c.run_key, c.question_id, cc.profile, c.prompt_tokens, cc.cached_tokens, cc.prefill_tokens,
       cc.write_tokens, cc.cost_usd
FROM calls c JOIN call_cache cc USING (run_key, question_id, call_idx)
WHERE c.role = 'actor'
UNION ALL
SELECT t.run_key, t.question_id, tc.profile, t.prompt_tokens, tc.cached_tokens, tc.prefill_tokens,
       0 AS write_tokens, 0.0 AS cost_usd
FROM turns t JOIN turn_cache tc USING (run_key, question_id, turn)
WHERE NOT EXISTS (
  SELECT 1 FROM calls c2 JOIN call_cache cc2 USING (run_key, question_id, call_idx)
  WHERE c2.role = 'actor' AND c2.run_key = t.run_key AND c2.question_id = t.question_id)
"""

VIEWS: dict[str, str] = {
    "v_accuracy_by_type": """
SELECT run_key, question_type, count(label) AS n, count(*) FILTER (WHERE label) AS correct,
       avg(label::INT) AS accuracy
FROM samples GROUP BY run_key, question_type""",
    "v_headline": """
WITH t AS (SELECT run_key, avg(accuracy) AS macro, count(*) AS n_types FROM v_accuracy_by_type
           WHERE n > 0 GROUP BY run_key),
     s AS (SELECT run_key, count(label) AS n_judged, count(*) AS n_rows,
                  count(*) FILTER (WHERE label) AS n_correct, avg(label::INT) AS micro,
                  avg(label::INT) FILTER (WHERE is_abstention) AS abstention,
                  count(label) FILTER (WHERE is_abstention) AS n_abstention,
                  count(*) FILTER (WHERE error IS NOT NULL) AS n_errors
           FROM samples GROUP BY run_key)
SELECT r.run_key, r.name, r.strategy, r.actor_model, r.judge_model, r.dataset_name, r.dataset_sha256, r.dataset_split,
       r.n_questions_planned,
       s.n_rows, s.n_judged, s.n_correct, s.micro, t.macro, t.n_types, s.abstention, s.n_abstention, s.n_errors,
       r.status
FROM runs r LEFT JOIN s USING (run_key) LEFT JOIN t USING (run_key)""",
    "v_actor_cache": _ACTOR_CACHE,
    "v_cache": """
SELECT run_key, profile, count(*) AS n_prompts, sum(prompt_tokens)::BIGINT AS prompt_tokens,
       sum(cached_tokens)::BIGINT AS cached_tokens, sum(prefill_tokens)::BIGINT AS prefill_tokens,
       sum(cached_tokens) / nullif(sum(prompt_tokens), 0) AS hit_rate
FROM v_actor_cache GROUP BY run_key, profile""",
    "v_prefill": """
WITH a AS (SELECT run_key, question_id, profile, sum(prompt_tokens) AS actor_prompt_tokens,
                  sum(prefill_tokens) AS actor_prefill_tokens
           FROM v_actor_cache GROUP BY ALL),
     b AS (SELECT c.run_key, c.question_id, cc.profile, sum(cc.prefill_tokens) AS background_prefill_tokens
           FROM calls c JOIN call_cache cc USING (run_key, question_id, call_idx)
           WHERE c.role NOT IN ('actor', 'judge') GROUP BY ALL)
SELECT run_key, question_id, profile, coalesce(a.actor_prompt_tokens, 0) AS actor_prompt_tokens,
       coalesce(a.actor_prefill_tokens, 0) AS actor_prefill_tokens,
       coalesce(b.background_prefill_tokens, 0) AS background_prefill_tokens,
       coalesce(a.actor_prefill_tokens, 0) + coalesce(b.background_prefill_tokens, 0) AS prefill_tokens
FROM a FULL JOIN b USING (run_key, question_id, profile)""",
    "v_cost": """
WITH c AS (SELECT run_key, question_id,
                  sum(cost_usd) FILTER (WHERE phase <> 'judge' AND NOT coalesce(simulated, false)) AS system_cost,
                  sum(cost_usd) FILTER (WHERE phase = 'judge') AS judge_cost
           FROM calls GROUP BY ALL),
     q AS (SELECT s.run_key, s.question_id, s.label,
                  coalesce(c.system_cost, s.cost_usd) AS cost_usd, coalesce(c.judge_cost, 0) AS judge_cost_usd
           FROM samples s LEFT JOIN c USING (run_key, question_id))
SELECT run_key, count(*) AS n_questions, count(*) FILTER (WHERE label) AS n_correct,
       count(cost_usd) AS n_costed, sum(cost_usd) AS total_cost_usd, avg(cost_usd) AS cost_per_question,
       sum(cost_usd) / nullif(count(*) FILTER (WHERE label), 0) AS cost_per_correct,
       sum(judge_cost_usd) AS judge_cost_usd
FROM q GROUP BY run_key""",
    "v_cost_by_profile": """
SELECT c.run_key, cc.profile, count(DISTINCT c.question_id) AS n_questions, sum(cc.cost_usd) AS input_cost_usd,
       sum(cc.cost_usd) / count(DISTINCT c.question_id) AS input_cost_per_question
FROM calls c JOIN call_cache cc USING (run_key, question_id, call_idx)
WHERE c.role <> 'judge' GROUP BY ALL""",
}


def view_ddl() -> list[str]:
    return [f"CREATE OR REPLACE VIEW {n} AS {sql}" for n, sql in VIEWS.items()]
