"""OM on short haystacks: a question answered while memory held nothing is flagged per question in the results
(`question_memory_empty` on its last turn row) and the run summary warns about it; the `finalize` param observes
what is left before the question, and the warning goes away."""

from __future__ import annotations

import pytest

from bench.runner.app import run_job
from bench.runner.summary import empty_memory_warnings
from bench.store import Results
from tests.helpers.runner import compose_cfg


@pytest.mark.slow
def test_summary_warns_when_questions_were_answered_with_an_empty_memory(tmp_path, capsys) -> None:
    # the synthetic haystacks (~6k tokens) never reach Mastra's 30k threshold
    run_job(compose_cfg(tmp_path, "dataset.limit=2", "run_strategies=[om]", "experiment_name=plain",
                        "strategies.om.params.message_tokens=30000"))
    out = capsys.readouterr().out
    db = tmp_path / "bench.duckdb"
    [line] = empty_memory_warnings(db)
    assert line.startswith("warning: plain.om@synthetic") and line in out  # the run's stable name
    assert ": 2 of 2 questions were answered with an empty memory" in line
    assert all(len(x) <= 100 for x in line.splitlines())
    with Results(db) as res:
        turns = res.turns()
    last = turns.groupby("question_id").tail(1)
    assert all("question_memory_empty" in e.split(",") for e in last.events)

    run_job(compose_cfg(tmp_path, "dataset.limit=2", "run_strategies=[om]", "experiment_name=finalized",
                        "strategies.om.params.message_tokens=30000", "strategies.om.params.finalize=true"))
    # two runs of om, named by their experiments; only the plain one is flagged
    [flagged] = empty_memory_warnings(db)
    assert flagged.startswith("warning: plain.om@synthetic")
    with Results(db) as res:
        turns = res.turns()
    assert turns.events.str.contains("observe").any()
