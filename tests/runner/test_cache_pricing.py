"""A second Actor answering from the first one's ingestion checkpoint sees its own prices: simulated cache costs
are priced when a run writes its rows, at the list price of the model each call went to (real HTTP to the fake
OpenAI server, litellm's local price map)."""

from __future__ import annotations

import os

import duckdb
import pytest

import bench.runner.question as question_mod
from bench.runner.app import run_job
from tests.helpers.fakeserver import FakeOpenAIServer
from tests.helpers.runner import compose_cfg

ACTORS = ("openai/gpt-4o", "openai/gpt-4o-mini")


def _list_price(model: str) -> float:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    return float(litellm.model_cost[model.split("/", 1)[1]]["input_cost_per_token"])


@pytest.mark.slow  # two runs through litellm HTTP
def test_a_new_actor_prices_the_shared_ingestion_at_its_own_price(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000000")
    ingests = {"n": 0}
    real = question_mod.ingest

    async def counting(inst, env):
        ingests["n"] += 1
        return await real(inst, env)

    monkeypatch.setattr(question_mod, "ingest", counting)
    with FakeOpenAIServer(lambda body: "blue") as server:
        keys = []
        for actor in ACTORS:
            out = run_job(compose_cfg(tmp_path, "dataset.limit=2", "run_strategies=[full_context]",
                                      f"model.actor.model={actor}", f"+gateway.api_base.openai={server.base_url}"))
            assert out[0].computed == 2 and out[0].failed == 0
            keys.append(out[0].run_key)
    assert ingests["n"] == 2  # the second Actor answered from the first one's checkpoints

    con = duckdb.connect(str(tmp_path / "bench.duckdb"), read_only=True)
    try:
        rows = {k: con.execute(
            "SELECT c.model, c.phase, cc.cached_tokens, cc.prefill_tokens, cc.write_tokens, cc.cost_usd "
            "FROM calls c JOIN call_cache cc USING (run_key, question_id, call_idx) "
            "WHERE c.run_key = ? AND c.role = 'actor' AND cc.profile = 'openai' ORDER BY c.question_id, c.call_idx",
            [k]).fetchall() for k in keys}
    finally:
        con.close()
    first, second = ([r[2:5] for r in rows[k]] for k in keys)
    assert first == second and any(c for c, _, _ in first)  # the same measured tokens, some of them cached
    total = [sum(r[5] for r in rows[k]) for k in keys]
    assert total[1] / total[0] == pytest.approx(_list_price(ACTORS[1]) / _list_price(ACTORS[0]), rel=1e-9)
    for actor, key in zip(ACTORS, keys):
        assert {m for m, *_ in rows[key]} == {actor}  # simulated turns and answers alike are this run's Actor's
        assert {p for _, p, *_ in rows[key]} == {"ingest", "answer"}
        price = _list_price(actor)
        for _, _, cached, prefill, write, cost in rows[key]:
            # the openai profile: uncached at the list price, cached at half of it (gpt-4o family), no writes
            assert write == 0 and cost == pytest.approx(price * (prefill + 0.5 * cached), rel=1e-9)
