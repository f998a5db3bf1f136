"""A wrong key (401) is not retried and stops the run at the first question: every later call would fail the
same way. The end of the run names the first error of each kind with its count and the judge protocol."""

from __future__ import annotations

import duckdb
import pytest

from tests.helpers.fakeserver import FakeOpenAIServer
from bench.runner.app import NothingAnswered, run_job
from bench.runner.digest import error_lines
from tests.helpers.runner import compose_cfg


def test_a_rejected_key_stops_the_run_with_one_request(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-wrong-key-0000000000")
    with FakeOpenAIServer(schedule=lambda i, body: "401") as server:
        cfg = compose_cfg(tmp_path, "run_strategies=[oracle,full_context]", "run.concurrency=1",
                          "model.actor.model=openai/gpt-4o-2024-08-06", f"+gateway.api_base.openai={server.base_url}")
        with pytest.raises(NothingAnswered) as nothing:  # every question failed: the command exits 1
            run_job(cfg)
        (outcome,) = nothing.value.outcomes  # full_context is not started either: it would call the same actor
        requests = server.stats.requests
    assert requests == 1  # no retry, no second question
    assert outcome.computed == 1 and outcome.planned == 16 and outcome.stopped.startswith("answer: auth: ")
    out = capsys.readouterr().out
    assert "errors: 1 questions failed in this run" in out
    assert "  auth (answer) x1: litellm.AuthenticationError" in out and "Incorrect API key provided" in out
    assert "[oracle] stopped early:" in out and "15 questions were not attempted" in out
    assert "judge: offline/judge; templates: om-bench builtin wording" in out
    con = duckdb.connect(str(tmp_path / "bench.duckdb"), read_only=True)
    try:  # the failed question is stored with its error: the same command retries it
        assert con.execute("SELECT count(*), count(error) FROM samples").fetchone() == (1, 1)
    finally:
        con.close()
    assert "sk-test-wrong-key" not in out


def test_error_lines_count_each_kind_and_show_its_first_message() -> None:
    lines = error_lines(["answer: rate_limit: gave up after 6 attempts: slow down",
                         "answer: context_window: prompt of 200000 tokens",
                         "judge: rate_limit: gave up after 6 attempts: later"],
                        ["q9: GatewayError: auth: bad key", "q8: ValueError: broken"])
    assert lines[0].startswith("errors: 5 questions failed")
    assert lines[1] == "  rate_limit (answer) x1: gave up after 6 attempts: slow down"
    assert "  auth (ingest) x1: bad key" in lines and "  ValueError (run) x1: broken" in lines
    assert "  rate_limit (judge) x1: gave up after 6 attempts: later" in lines
