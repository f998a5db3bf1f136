"""The offline engine's direct route (gateway.direct_providers, on by default) skips litellm's call machinery
and changes nothing a run stores: the same run through litellm's custom-provider path stores the same calls
(role, model, phase, tokens, usage, cost, cache hits, retries, errors, finish reasons, simulated times), the
same per-profile cache results, request texts and replies, and the same answers and judgments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from bench.runner.app import run_job
from tests.helpers.runner import compose_cfg

# every column but the run key and the wall-clock latency, which are the things that may differ
CALL_COLUMNS = ("question_id, call_idx, role, model, phase, simulated, prompt_tokens, completion_tokens, "
                "cached_reported, cache_write_reported, cost_usd, response_cache_hit, retries, error, sim_time, "
                "cost_known, finish_reason")


def _stored(out: Path, direct: bool) -> dict[str, dict[str, list[tuple[Any, ...]]]]:
    # rag with dense retrieval: its embedder calls take the route too
    cfg = compose_cfg(out, "dataset.limit=2", "run.checkpoints=false", "output.store_prompts=all",
                      "strategies.rag.params.retriever=dense", f"gateway.direct_providers={str(direct).lower()}")
    outcomes = run_job(cfg)
    assert outcomes and all(o.failed == 0 and o.computed == 2 for o in outcomes)
    con = duckdb.connect(str(out / "bench.duckdb"), read_only=True)
    try:
        got: dict[str, dict[str, list[tuple[Any, ...]]]] = {}
        for o in outcomes:
            def rows(sql: str, key: str = o.run_key) -> list[tuple[Any, ...]]:
                return con.execute(sql + " WHERE run_key = ? ORDER BY ALL", [key]).fetchall()

            got[o.strategy] = {
                "calls": rows(f"SELECT {CALL_COLUMNS} FROM calls"),
                "call_cache": rows("SELECT question_id, call_idx, profile, cached_tokens, prefill_tokens, write_tokens,"
                                   " cost_usd FROM call_cache"),
                "call_texts": rows("SELECT question_id, call_idx, prompt, response FROM call_texts"),
                "samples": rows("SELECT question_id, hypothesis, label, judge_raw, prompt_tokens, completion_tokens,"
                                " cost_usd, error FROM samples"),
            }
        return got
    finally:
        con.close()


@pytest.mark.slow  # two runs of every strategy
def test_the_direct_route_stores_the_same_calls_as_litellms_path(tmp_path) -> None:
    direct = _stored(tmp_path / "direct", True)
    via_litellm = _stored(tmp_path / "litellm", False)
    assert set(direct) == set(via_litellm) and {"rag", "om", "decay", "compaction"} <= set(direct)
    roles = {row[2] for parts in direct.values() for row in parts["calls"]}
    assert {"actor", "judge", "observer", "summarizer", "evaluator", "embedder"} <= roles, roles
    for strategy, parts in direct.items():
        for table, rows in parts.items():
            assert rows, (strategy, table)
            assert rows == via_litellm[strategy][table], f"{strategy}: {table} differs between the routes"
