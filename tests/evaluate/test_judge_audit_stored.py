"""`ombench judge-audit` results are stored with the runs (issue 26, item 5): a real DuckDB file holds the audit
keyed to the judge configuration, and the summary and report print the judge's false-positive rate beside the
accuracy of runs judged by that configuration, and only those."""

from __future__ import annotations

import json

import pytest

from bench.cli import main
from bench.report.data import load
from bench.report.tables import headline
from bench.runner.summary import format_summary, summary_rows
from bench.store import Results
from tests.helpers.fakeserver import FakeOpenAIServer
from tests.helpers.runner import compose_cfg


def _audit(capsys: pytest.CaptureFixture[str], db, *overrides: str) -> dict:
    assert main(["judge-audit", "--n", "6", "--json", "dataset=synthetic", f"output.db={db}", *overrides]) == 0
    return json.loads(capsys.readouterr().out)


def test_audits_are_stored_per_judge_configuration_and_shown_beside_accuracy(
        tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from bench.runner.app import run_job

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000000")
    db = tmp_path / "bench.duckdb"
    outcomes = run_job(compose_cfg(tmp_path, "dataset=synthetic", "dataset.limit=4", "run_strategies=[oracle]"))
    key = outcomes[0].run_key
    capsys.readouterr()

    # nothing audited yet: no column, no note
    rows, prof = summary_rows(db)
    assert "jFP" not in format_summary(rows, prof)

    # an always-yes judge of another model: stored, but it does not qualify the offline-judged run
    with FakeOpenAIServer(lambda body: "yes") as server:
        yes = _audit(capsys, db, "model.judge.model=openai/gpt-4o-2024-08-06",
                     f"gateway.api_base.openai={server.base_url}")  # typed as for `ombench run` (no '+')
    assert yes["stored"] == str(db) and yes["false_positive"]["rate"] == 1.0
    rows, prof = summary_rows(db)
    assert rows[0]["judge_audit"] is None

    # the run's own judge (offline engine, builtin templates, official parse): now beside the accuracy
    off = _audit(capsys, db)
    _audit(capsys, db)  # the same audit again replaces, never duplicates
    with Results(db) as res:
        audits = res.judge_audits()
    assert len(audits) == 2 and set(audits.judge_model) == {"openai/gpt-4o-2024-08-06", "offline/judge"}
    rows, prof = summary_rows(db)
    got = rows[0]["judge_audit"]
    assert got is not None and got.false_positive.n == off["false_positive"]["n"] > 0
    text = format_summary(rows, prof)
    header = next(ln for ln in text.splitlines() if ln.startswith("run"))
    assert header.split()[:4] == ["run", "n", "micro", "jFP"]  # right after the accuracy it qualifies
    flat = " ".join(text.split())
    assert all(len(ln) <= 100 for ln in text.splitlines())
    assert "judge audit: offline/judge accepted 0 of" in flat and "questions of synthetic" in flat
    report = load(db)
    cell = next(b for b in headline(report) if b[0] == "table")[2][0][4]
    assert f"judge FP {got.cell()}" in cell

    # a run judged by the always-yes configuration is flagged where its accuracy is
    with FakeOpenAIServer(lambda body: "yes") as server:
        run_job(compose_cfg(tmp_path, "dataset=synthetic", "dataset.limit=4", "run_strategies=[oracle]",
                            "model.judge.model=openai/gpt-4o-2024-08-06", "run.preflight=false",
                            f"+gateway.api_base.openai={server.base_url}"))
    rows, prof = summary_rows(db)
    yes_row = next(r for r in rows if r["run_key"] != key)
    assert yes_row["judge_audit"].cell() == "100%!" and yes_row["judge_audit"].unreliable
    flat = " ".join(format_summary(rows, prof).split())
    assert "UNRELIABLE judge: openai/gpt-4o-2024-08-06 accepted 6 of 6 (100%" in flat


def test_judge_audit_as_part_of_a_run(tmp_path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    from bench.runner.app import run_job

    monkeypatch.chdir(tmp_path)
    run_job(compose_cfg(tmp_path, "dataset=synthetic", "dataset.limit=4", "run_strategies=[oracle]", "judge.audit=6"))
    out = " ".join(capsys.readouterr().out.split())
    with Results(tmp_path / "bench.duckdb") as res:
        audits = res.judge_audits()
    assert len(audits) == 1 and audits.judge_model.iloc[0] == "offline/judge" and int(audits.n_requested.iloc[0]) == 6
    assert "jFP" in out and "judge audit: offline/judge accepted" in out  # the run's own summary shows it
