"""`ombench export --format inspect`: a real run (LongMemEval oracle, offline engine) read back with Inspect AI's
own reader: one sample per question, the judge's verdicts as scores, the question's facts and OM's memory as
metadata."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cli import main
from bench.runner.app import run_job
from bench.store import Results
from tests.helpers.runner import compose_cfg

pytest.importorskip("inspect_ai", reason="inspect_ai not installed (pip install 'om-bench[inspect]')")


@pytest.mark.realdata
@pytest.mark.slow  # a real OM replay of 6 oracle questions
def test_exported_run_reads_back_with_inspect(tmp_path: Path, real_data_dir: Path, capsys) -> None:
    from inspect_ai.log import list_eval_logs, read_eval_log

    run_job(compose_cfg(tmp_path, "dataset=longmemeval_oracle", f"dataset.data_dir={real_data_dir}",
                        "dataset.stratified=6", "run_strategies=[om]", "strategies.om.params.finalize=true",
                        "judge.second_model=offline/judge"))
    db = tmp_path / "bench.duckdb"
    capsys.readouterr()
    assert main(["runs", "--db", str(db), "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)
    with Results(db) as res:
        samples = res.samples(run["run_key"]).set_index("question_id")
        memory = {q: res.memory(run["run_key"], q) for q in samples.index}
    out = tmp_path / "logs"
    assert main(["export", "--db", str(db), "--run", run["name"], "--format", "inspect", "--out", str(out)]) == 0
    assert "wrote 6 samples" in capsys.readouterr().out
    (info,) = list_eval_logs(str(out))
    log = read_eval_log(info.name)
    assert log.status == "success" and log.eval.task == run["name"] and log.eval.model == "offline/reader"
    assert log.eval.dataset.samples == 6 and len(log.samples) == 6
    assert {s.id for s in log.samples} == set(samples.index)
    metrics = log.results.scores[0].metrics
    assert metrics["accuracy"].value == pytest.approx(samples.label.astype(bool).mean())
    assert [sc.name for sc in log.results.scores] == ["judge", "judge_second"]
    for s in log.samples:
        row = samples.loc[s.id]
        assert s.scores["judge"].value == ("C" if row.label else "I")
        assert s.scores["judge"].answer == row.hypothesis and s.scores["judge"].explanation == row.judge_raw
        assert s.scores["judge_second"].value == ("C" if row.label_second else "I")
        assert s.target == row.gold_answer and s.input == row.question
        assert s.messages[-1].role == "assistant" and s.messages[-1].text == row.hypothesis
        assert any(m.role == "user" and row.question in m.text for m in s.messages)  # the Actor's stored prompt
        md = s.metadata
        assert md["question_type"] == row.question_type and md["strategy"] == "om" and md["run_name"] == run["name"]
        assert md["actor_prompt_tokens"] == row.prompt_tokens and set(md["prefill_tokens"]) >= {"ideal", "openai"}
        assert md["cost_usd"] == 0.0  # offline engine
        assert [m["text"] for m in md["memory"]] == [m.text for m in memory[s.id]]
        assert "cause" in md["answer_location"]
        assert s.model_usage["offline/reader"].input_tokens == row.prompt_tokens
        roles = [(e.role, e.model) for e in s.events if e.event == "model"]  # Inspect's transcript: the stored calls
        assert roles == [("actor", "offline/reader"), ("judge", "offline/judge"), ("second_judge", "offline/judge")]
        assert s.events[0].output.completion == row.hypothesis
    assert any(md_obs for s in log.samples for md_obs in s.metadata["memory"] if md_obs["kind"] == "observations")

    # a question that failed: no score, its error on the sample, counted as unscored (a .json log this time)
    import duckdb

    failed = samples.index[0]
    con = duckdb.connect(str(db))
    con.execute("UPDATE samples SET error = 'context_window: prompt too long', label = NULL, label_second = NULL "
                "WHERE run_key = ? AND question_id = ?", [run["run_key"], failed])
    con.close()
    assert main(["export", "--db", str(db), "--run", run["name"], "--format", "inspect",
                 "--out", str(tmp_path / "one.json")]) == 0
    log = read_eval_log(str(tmp_path / "one.json"))
    s = next(s for s in log.samples if s.id == failed)
    assert s.scores is None and s.error.message == "context_window: prompt too long"
    judge = log.results.scores[0]
    assert (judge.scored_samples, judge.unscored_samples) == (5, 1)
    assert judge.metrics["accuracy"].value == pytest.approx(samples.drop(failed).label.astype(bool).mean())


def test_inspect_format_refuses_eval_results(tmp_path: Path, capsys) -> None:
    assert main(["export", "--db", str(tmp_path / "none.duckdb"), "--run", "x", "--format", "inspect",
                 "--out", str(tmp_path), "--eval-results"]) == 2
    assert "--eval-results" in capsys.readouterr().err


def test_log_path_refuses_a_file_name_it_would_make_a_folder_and_says_what_inspect_lists(tmp_path: Path) -> None:
    from bench.errors import UserError
    from bench.report.inspect_log import listed_by_inspect, log_path

    with pytest.raises(UserError, match="a .eval or .json file, or a folder"):
        log_path(tmp_path / "x.txt", None)  # type: ignore[arg-type]  # refused before the log is looked at
    assert not (tmp_path / "x.txt").exists()
    assert listed_by_inspect(Path("logs/run.eval")) and listed_by_inspect(Path("2026-12-03T10-00-00_t_id.json"))
    assert not listed_by_inspect(Path("logs/fc.json"))  # inspect view would not list it: the CLI says so
