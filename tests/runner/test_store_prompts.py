"""output.store_prompts: what of a question's calls the results file keeps as text."""

from __future__ import annotations

from bench.runner.app import run_job
from bench.store import Results
from tests.helpers.runner import compose_cfg


def test_store_prompts_knob(tmp_path):
    """Question-time prompts and replies are kept by default; every replay call's only with store_prompts=all."""
    common = ("dataset.limit=1", "run_strategies=[om]", "run.checkpoints=false")

    def kept(out):
        with Results(out / "bench.duckdb") as res:
            s = res.samples().iloc[0]
            calls = res.question_calls(s.run_key, s.question_id)
            texts = res.call_texts(s.run_key, s.question_id)
        return {(c.phase, bool(c.simulated)) for c in calls.itertuples() if int(c.call_idx) in texts}

    run_job(compose_cfg(tmp_path / "q", *common))
    assert kept(tmp_path / "q") == {("answer", False), ("judge", False)}
    run_job(compose_cfg(tmp_path / "a", *common, "output.store_prompts=all"))
    assert {("ingest", True), ("ingest", False), ("answer", False)} <= kept(tmp_path / "a")  # turns, observer
    run_job(compose_cfg(tmp_path / "n", *common, "output.store_prompts=none"))
    assert kept(tmp_path / "n") == set()
