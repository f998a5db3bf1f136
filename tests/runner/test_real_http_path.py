"""The whole pipeline through litellm's real HTTP path: actor and judge are `openai/...` models served by the
local fake OpenAI-compatible server, with injected faults; usage and cost flow into DuckDB."""

from __future__ import annotations

import duckdb
import pytest

from bench.runner.app import run_job
from tests.helpers.fakeserver import FakeOpenAIServer, last_user_text
from tests.helpers.runner import compose_cfg


def _responder(body: dict) -> str:
    text = last_user_text(body)
    if "Model Response:" in text:  # the judge prompt
        return "yes" if "blue" in text.split("Model Response:", 1)[1].lower() else "no"
    return "I believe the answer is blue."


@pytest.mark.slow  # a whole run through litellm HTTP with injected faults and retries
def test_actor_and_judge_over_http_with_faults(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000000")
    with FakeOpenAIServer(_responder, fault_rate=0.2, fault_kinds=("429", "500"), seed=3, retry_after_s=0.01,
                          cached_tokens=64) as server:
        cfg = compose_cfg(
            tmp_path, "dataset.limit=4", "run_strategies=[full_context]",
            "model.actor.model=openai/gpt-4o-2024-08-06", "model.judge.model=openai/gpt-4o-2024-08-06",
            f"+gateway.api_base.openai={server.base_url}", "gateway.max_attempts=8",
        )
        out = run_job(cfg)
        requests = server.stats.requests
    assert out[0].computed == 4 and out[0].failed == 0
    assert requests >= 8  # 4 answers + 4 judgments, plus retried faults
    con = duckdb.connect(str(tmp_path / "bench.duckdb"), read_only=True)
    try:
        samples = con.execute("SELECT hypothesis, label, error FROM samples").fetchall()
        answer = con.execute(
            "SELECT count(*), sum(prompt_tokens), sum(cached_reported), sum(cost_usd), sum(retries) "
            "FROM calls WHERE phase = 'answer'").fetchone()
        config_json = con.execute("SELECT config FROM runs").fetchone()[0]
    finally:
        con.close()
    assert all(h == "I believe the answer is blue." and lab is True and err is None for h, lab, err in samples)
    n, prompt, cached, cost, retries = answer
    assert n == 4 and prompt > 0 and cached == 4 * 64 and cost > 0
    assert "sk-test" not in config_json  # no secret ever reaches the database
