"""The exit status says whether a run answered anything: a run in which every question failed exits 1 with one
line saying so (the reasons are in the digest above it, the run log and the results file); a run in which only
some failed exits 0 as before, its failures listed (docs/reliability.md, "Exit status")."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from bench.cli import main
from tests.helpers.fakeserver import FakeOpenAIServer

ALL_FAILED = "ombench: error: every question of this run failed (2 failed, none answered)"


def _run(tmp_path: Path, base: str) -> int:
    return main(["run", f"output.dir={tmp_path}", "output.report=false", "run.progress=off", "dataset.limit=2",
                 "run_strategies=[full_context]", "model.actor.model=openai/fake-reader",
                 f"+gateway.api_base.actor={base}"])


def _stored(tmp_path: Path) -> tuple[int, int]:
    con = duckdb.connect(str(tmp_path / "bench.duckdb"), read_only=True)
    try:
        return con.execute("SELECT count(*), count(error) FROM samples").fetchone()  # type: ignore[return-value]
    finally:
        con.close()


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000000")


def test_a_run_in_which_every_question_failed_exits_1_with_one_line(tmp_path: Path, capsys) -> None:
    with FakeOpenAIServer(schedule=lambda i, body: "400") as srv:
        rc = _run(tmp_path, srv.base_url)
    out, err = capsys.readouterr()
    assert rc == 1, err
    errors = [ln for ln in err.splitlines() if ln.startswith("ombench: error:")]
    assert len(errors) == 1 and errors[0].startswith(ALL_FAILED), err
    assert "errors: 2 questions failed in this run" in out  # the reasons, printed before the line
    assert _stored(tmp_path) == (2, 2)  # stored with their errors: the same command retries them
    log = next((tmp_path / "hydra").rglob("run.log")).read_text()
    assert ALL_FAILED.removeprefix("ombench: error: ") in log


def test_a_run_in_which_some_questions_failed_exits_0(tmp_path: Path, capsys) -> None:
    with FakeOpenAIServer(schedule=lambda i, body: "400" if i == 0 else None) as srv:
        rc = _run(tmp_path, srv.base_url)
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "ombench: error:" not in err and "errors: 1 questions failed in this run" in out
    assert _stored(tmp_path) == (2, 1)
