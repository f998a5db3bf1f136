"""`ombench perf` and `ombench run` replay through the same pipeline (bench.ingest.ingest_question): for the same
questions, strategy params and cache profiles they measure the same prompt tokens and the same simulated cache
results, turn by turn, for the question-time prompt and for every background call."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

import duckdb
import pytest

from bench.config import validate
from bench.assemble import cache_simulators, configured_strategy
from bench.perf import measure, offline_gateway, replay_one
from bench.runner.app import run_job
from bench.runner.experiment import load_data
from om_core.tokens import default_counter
from tests.helpers.runner import compose_cfg

PROFILES = ("ideal", "openai", "anthropic", "vllm")


def _rows(db, sql: str, *args: Any) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, list(args)).fetchall()
    finally:
        con.close()


def _run_side(db, run_key: str) -> dict[str, Any]:
    """What `ombench run` stored for one run, per question: turn tokens/caches, question cache, background calls."""
    out: dict[str, Any] = defaultdict(lambda: {"turns": {}, "question": {}, "background": []})
    for qid, turn, tokens in _rows(db, "SELECT question_id, turn, prompt_tokens FROM turns WHERE run_key = ?", run_key):
        out[qid]["turns"][turn] = {"tokens": tokens, "cache": {}}
    for qid, turn, prof, cached, prefill in _rows(
            db, "SELECT question_id, turn, profile, cached_tokens, prefill_tokens FROM turn_cache WHERE run_key = ?",
            run_key):
        out[qid]["turns"][turn]["cache"][prof] = (cached, prefill)
    calls = _rows(db, "SELECT c.question_id, c.call_idx, c.role, c.phase, c.simulated, cc.profile, cc.cached_tokens, "
                      "cc.prefill_tokens, cc.write_tokens FROM calls c JOIN call_cache cc "
                      "USING (run_key, question_id, call_idx) WHERE run_key = ? ORDER BY c.call_idx, cc.profile",
                  run_key)
    background: dict[tuple[str, int], dict[str, tuple[int, int, int]]] = defaultdict(dict)
    roles: dict[tuple[str, int], str] = {}
    for qid, idx, role, phase, simulated, prof, cached, prefill, write in calls:
        if phase == "answer":
            out[qid]["question"][prof] = (cached, prefill, write)
        elif phase == "ingest" and not simulated:
            background[(qid, idx)][prof] = (cached, prefill, write)
            roles[(qid, idx)] = role
    for (qid, idx), cache in sorted(background.items()):
        out[qid]["background"].append((roles[(qid, idx)], cache))
    return out


def _perf_side(res) -> dict[str, Any]:
    turns = {r["turn"]: {"tokens": r["prompt_tokens"],
                         "cache": {p: (int(c["cached"]), int(c["prefill"])) for p, c in r["cache"].items()}}
             for r in res.turns}
    question = {p: (int(c["cached"]), int(c["prefill"]), int(c["write"])) for p, c in res.question_cache.items()}
    background = [(c.role, {p: (int(v["cached"]), int(v["prefill"]), int(v["write"])) for p, v in c.cache.items()})
                  for c in res.calls if not c.simulated and c.cache]
    return {"turns": turns, "question": question, "background": background}


async def _perf_replay(root, instances) -> dict[str, dict[str, Any]]:
    gateway = offline_gateway()
    counter = default_counter()
    make_sims = cache_simulators(root.cachesim.profiles, root.cachesim.params)
    out: dict[str, dict[str, Any]] = {}
    for key in root.run_strategies:
        spec = configured_strategy(root, key)
        out[key] = {inst.question_id: _perf_side(await replay_one(inst, spec, gateway, counter, make_sims))
                    for inst in instances}
    return out


@pytest.mark.slow  # two full replays of every strategy
def test_perf_and_run_measure_the_same_tokens_and_caches(tmp_path) -> None:
    overrides = ("dataset.limit=2", "run.checkpoints=false", f"cachesim.profiles=[{','.join(PROFILES)}]")
    cfg = compose_cfg(tmp_path, *overrides)
    root = validate(cfg)
    assert set(root.run_strategies) == {"full_context", "rag", "compaction", "om", "oracle", "decay"}
    instances = load_data(root).instances
    perf = asyncio.run(_perf_replay(root, instances))

    outcomes = run_job(cfg)
    assert all(o.failed == 0 and o.computed == 2 for o in outcomes)
    db = tmp_path / "bench.duckdb"
    events = 0
    for o in outcomes:
        run = _run_side(db, o.run_key)
        assert set(run) == {i.question_id for i in instances}
        for qid, stored in run.items():
            mine = perf[o.strategy][qid]
            # per turn: the same prompt tokens and per profile the same cached / prefilled tokens
            assert {t: r["tokens"] for t, r in mine["turns"].items()} == {t: r["tokens"] for t, r in stored["turns"].items()}
            assert {t: r["cache"] for t, r in mine["turns"].items() if r["tokens"]} == \
                {t: r["cache"] for t, r in stored["turns"].items() if r["tokens"]}, (o.strategy, qid)
            assert set(mine["question"]) == set(PROFILES) and mine["question"] == stored["question"], (o.strategy, qid)
            assert mine["background"] == stored["background"], (o.strategy, qid)
            events += len(mine["background"])
    assert events > 0  # the memory strategies made background calls (observer, summariser), compared above

    # and what `ombench perf` prints adds up to what the run stored
    report = measure(instances, cfg=root)
    for o in outcomes:
        st = report.strategies[o.strategy]
        (turn_tokens,) = _rows(db, "SELECT sum(prompt_tokens) FROM turns WHERE run_key = ?", o.run_key)[0]
        (q_tokens,) = _rows(db, "SELECT sum(cc.cached_tokens + cc.prefill_tokens) FROM calls c JOIN call_cache cc "
                                "USING (run_key, question_id, call_idx) WHERE run_key = ? AND c.phase = 'answer' "
                                "AND cc.profile = 'ideal'", o.run_key)[0]
        assert st.prompt_tokens == turn_tokens + q_tokens
        for prof in PROFILES:
            (cached,) = _rows(db, "SELECT (SELECT sum(cached_tokens) FROM turn_cache WHERE run_key = ? AND profile = ?)"
                                  " + (SELECT sum(cc.cached_tokens) FROM calls c JOIN call_cache cc USING "
                                  "(run_key, question_id, call_idx) WHERE run_key = ? AND c.phase = 'answer' "
                                  "AND cc.profile = ?)", o.run_key, prof, o.run_key, prof)[0]
            assert st.cached[prof] == cached, (o.strategy, prof)
