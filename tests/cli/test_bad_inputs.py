"""Every bad input of the fault trial stops `ombench run` before the first question: exit 2, one line naming the
config key and the fix, no traceback, and nothing written (no results file, no report, no checkpoint, no
response cache; Hydra's own run folder keeps the line in its run log)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.cli import main


@pytest.fixture
def keys(monkeypatch):
    for var in ("OPENAI_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(var, "sk-test-not-a-real-key-000000")
    monkeypatch.delenv("OMBENCH_TEST_UNSET_KEY_VAR", raising=False)


BAD = [
    (["run_strategies=[om]", "strategies.om.params.message_tokens=-5"],
     "strategies.om.params.message_tokens=-5: must be > 0 tokens"),
    (["run_strategies=[om]", "strategies.om.params.message_tokens=0"],
     "strategies.om.params.message_tokens=0: must be > 0 tokens"),
    (["run_strategies=[om]", "strategies.om.params.observation_tokens=0"],
     "strategies.om.params.observation_tokens=0: must be > 0 tokens"),
    (["run_strategies=[compaction]", "strategies.compaction.params.threshold=-1"],
     "strategies.compaction.params.threshold=-1.0: must be > 0"),
    (["run_strategies=[compaction]", "strategies.compaction.params.keep_recent_tokens=5000"],
     "strategies.compaction.params.keep_recent_tokens=5000: must be below the threshold (2000 tokens)"),
    (["run_strategies=[rag]", "strategies.rag.params.top_k=0"], "strategies.rag.params.top_k=0: must be >= 1"),
    (["run_strategies=[decay]", "strategies.decay.params.decay_factor=1.5"],
     "strategies.decay.params.decay_factor=1.5: must be in (0, 1]"),
    (["run_strategies=[full_context]", "model.actor_max_input_tokens=0"],
     "model.actor_max_input_tokens=0: must be more than answer.max_tokens (800)"),
    (["run_strategies=[full_context]", "strategies.full_context.params.reserve_tokens=130000"],
     "strategies.full_context.params.reserve_tokens=130000: leaves no room for history"),
    (["run_strategies=[full_context]", "gateway.api_key_env.actor=OMBENCH_TEST_UNSET_KEY_VAR"],
     "gateway.api_key_env.actor=OMBENCH_TEST_UNSET_KEY_VAR names an unset environment variable (actor): "
     "export OMBENCH_TEST_UNSET_KEY_VAR=<key>"),
    # thresholds against the Actor's window: the configured one, and the model's own (the preflight)
    (["run_strategies=[om]", "model=gpt-4o", "strategies.om.params.message_tokens=500000"],
     "strategies.om.params: message_tokens + observation_tokens = 502,700 tokens can reach the Actor, more than its "
     "window (model.actor_max_input_tokens=128,000)"),
    (["run_strategies=[full_context]", "model=gpt-4o", "model.actor_max_input_tokens=200000"],
     "model.actor_max_input_tokens=200,000 exceeds the context window of actor openai/gpt-4o-2024-08-06 (128,000 "
     "tokens); set model.actor_max_input_tokens=128000"),
    (["dataset.limit=-1"], "dataset.limit=-1: must be >= 0 questions (0 = all)"),
    (["answer.max_tokens=0"], "answer.max_tokens=0: must be >= 1 tokens"),
    (["output.response_cache_policy=ro"], "does not exist but output.response_cache_policy=ro"),
    (["gateway.max_attempts=0"], "gateway.max_attempts=0: must be >= 1"),
    (["model.actor.model="], "model.actor.model is empty"),
    (["answer.temperature=-1"], "answer.temperature=-1.0: must be >= 0"),
    (["+gateway.api_base.actor=not-a-url"], "gateway.api_base.actor='not-a-url' is not an http(s) URL"),
    (["output.report_profile=azure"], "output.report_profile='azure': use a cache profile (ideal, openai, "),
    (["judge.audit=-3"], "judge.audit=-3: must be >= 0 questions to audit the judge on (0 = off)"),
]


@pytest.mark.parametrize(("argv", "line"), BAD, ids=[" ".join(a[-1:]) for a, _ in BAD])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(tmp_path: Path, capsys, keys, argv, line) -> None:
    rc = main(["run", f"output.dir={tmp_path}", "dataset.limit=1", "run.progress=off", *argv])
    out, err = capsys.readouterr()
    assert rc == 2, err
    assert err.count("\n") == 1 and err.startswith("ombench: error: "), err
    assert line in err and "Traceback" not in err + out
    written = sorted(p.relative_to(tmp_path).parts[0] for p in tmp_path.rglob("*") if p.is_file())
    assert set(written) <= {"hydra"}, written  # Hydra's run folder (its run log says why nothing ran)
    logs = list(tmp_path.glob("hydra/*/*/run.log"))
    assert logs and line.split(":")[0] in logs[0].read_text()


@pytest.mark.parametrize(("make", "argv", "line"), [
    ("file", ["run_strategies=[om]", "output.checkpoint_dir={p}"], "is a file, not a folder"),
    ("dir", ["output.response_cache={p}"], "output.response_cache="),
    ("dir", ["run_strategies=[om]", "+strategies.om.params.storage_path={p}"], "is a folder; give a file path"),
    ("text", ["run_strategies=[om]", "+strategies.om.params.storage_path={p}"], "is not an SQLite file"),
    ("text", ["output.response_cache={p}"], "is not an SQLite file"),
    ("damaged", ["run_strategies=[om]", "+strategies.om.params.storage_path={p}"], "is a damaged SQLite file"),
    ("damaged", ["output.response_cache={p}"], "is a damaged SQLite file"),
], ids=["checkpoint_dir-file", "response_cache-folder", "storage_path-folder", "storage_path-text", "cache-text",
        "storage_path-damaged", "cache-damaged"])
def test_a_path_of_the_wrong_kind_is_refused_before_anything_is_written(tmp_path: Path, capsys, keys, make, argv,
                                                                         line) -> None:
    """Found by scripts/fault_trial.py: these ended with one line, but after the results file and the response
    cache had been made."""
    given = tmp_path / "given" / "thing"
    given.parent.mkdir()
    if make == "dir":
        given.mkdir()
    elif make == "damaged":  # SQLite's header, then noise where its schema and pages were
        import sqlite3

        con = sqlite3.connect(given)
        con.execute("CREATE TABLE t (a TEXT)")
        con.executemany("INSERT INTO t VALUES (?)", [("x" * 500,)] * 50)
        con.commit()
        con.close()
        raw = bytearray(given.read_bytes())
        raw[100:] = bytes((i * 7 + 3) % 251 for i in range(len(raw) - 100))
        given.write_bytes(bytes(raw))
    else:
        given.write_text("not sqlite\n" * 20)
    rc = main(["run", f"output.dir={tmp_path}", "dataset.limit=1", "run.progress=off",
               *[a.format(p=given) for a in argv]])
    out, err = capsys.readouterr()
    assert rc == 2 and err.count("\n") == 1 and err.startswith("ombench: error: ") and line in err, err
    written = sorted(p.relative_to(tmp_path).parts[0] for p in tmp_path.rglob("*") if p.is_file())
    assert set(written) <= {"hydra", "given"}, written


def test_import_of_a_missing_file_makes_no_results_file(tmp_path: Path, capsys) -> None:
    """Found by scripts/fault_trial.py: the results file was made before the files to import were read."""
    db = tmp_path / "i.duckdb"
    rc = main(["import", str(tmp_path / "none.jsonl"), "--ref", str(tmp_path / "ref.json"), "--name", "x",
               "--db", str(db)])
    err = capsys.readouterr().err
    assert rc != 0 and err.count("\n") == 1 and err.startswith("ombench: error: ") and "not found" in err, err
    assert not db.exists()


@pytest.mark.parametrize("command", [["runs"], ["report", "--out", "{d}/rep"], ["view", "--out", "{d}/site"]])
def test_reading_a_file_of_another_kind_names_it_not_a_read_only_file_system(tmp_path: Path, capsys, command) -> None:
    """Found by scripts/fault_trial.py: `ombench runs --db results.json` said "the file system is read-only"."""
    other = tmp_path / "results.json"
    other.write_text("{}")
    rc = main([command[0], "--db", str(other), *[a.format(d=tmp_path) for a in command[1:]]])
    err = capsys.readouterr().err
    assert rc != 0 and err.count("\n") == 1 and "is not a DuckDB results file" in err and "read-only" not in err, err
    assert other.read_text() == "{}"
