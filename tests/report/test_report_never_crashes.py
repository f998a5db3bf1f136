"""The report always writes: intervals of 0/n and n/n groups, every k/n up to 60, a figure that fails, and a
run whose report fails all end cleanly."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.evaluate.metrics import summarize, wilson
from bench.report import build_report, figures
from bench.report.data import ReportData, RunInfo
from bench.report.fig_accuracy import abstention, accuracy_by_type
from bench.store import QuestionResult, RunManifest, SampleRow, Store

PNG = b"\x89PNG\r\n\x1a\n"


def test_wilson_bounds_hold_for_every_k_of_n_up_to_60():
    for n in range(1, 61):
        for k in range(n + 1):
            lo, hi = wilson(k, n)
            assert 0.0 <= lo <= k / n <= hi <= 1.0, (k, n, lo, hi)
    assert wilson(0, 7)[0] == 0.0 and wilson(14, 14)[1] == 1.0  # the cases that crashed matplotlib


def _data(k: int, n: int, abst: int) -> ReportData:
    rows = [{"question_id": f"q{i}" + ("_abs" if i < abst else ""), "question_type": "multi-session",
             "is_abstention": i < abst, "label": i < k} for i in range(n)]
    run = RunInfo(run_key="r", name="r", strategy="om", actor_model="offline/reader", n_planned=n, config={},
                  status="finished", kind="om", label="om", color="#d62728")
    empty = pd.DataFrame()
    return ReportData(runs=[run], samples=pd.DataFrame(rows), metrics={"r": summarize(rows, n_total=n)},
                      cache=empty, prefill=empty, cost=empty, turns=empty)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(min_value=1, max_value=60).flatmap(
    lambda n: st.tuples(st.integers(0, n), st.just(n), st.integers(0, n))))
def test_every_k_of_n_up_to_60_renders(tmp_path, knm):
    k, n, abst = knm
    d = _data(k, n, abst)
    for fn in (accuracy_by_type, abstention):
        f = fn(d, tmp_path)
        if fn is abstention and not abst:
            assert f.path is None and "abstention" in f.note
            continue
        assert f.path is not None and f.path.read_bytes()[:8] == PNG, (fn.__name__, k, n)


def _write(db, groups: dict[str, tuple[int, int]]) -> None:
    with Store(db) as s:
        s.upsert_run(RunManifest(run_key="r", name="edge", strategy="om", n_questions_planned=21))
        for qtype, (k, n) in groups.items():
            for i in range(n):
                s.write_question("r", QuestionResult(SampleRow(question_id=f"{qtype[:5]}{i}" + ("_abs" if i == 0 else ""),
                                                               question_type=qtype, label=i < k)))


def test_zero_of_7_and_14_of_14_write_a_report(tmp_path):
    db = tmp_path / "edge.duckdb"
    _write(db, {"knowledge-update": (0, 7), "multi-session": (14, 14)})
    rep = build_report(db, tmp_path / "out")
    acc = next(f for f in rep.figures if f.name == "accuracy_by_type")
    assert acc.path is not None and acc.path.read_bytes()[:8] == PNG
    assert not rep.warnings
    md = rep.markdown.read_text()
    assert "0.0% (7)" in md and "100.0% (14)" in md  # the per-type table shows both groups


def test_a_failing_figure_is_a_note_not_a_crash(tmp_path, monkeypatch, capsys):
    db = tmp_path / "edge.duckdb"
    _write(db, {"multi-session": (3, 5)})

    def broken(d, out):
        raise ValueError("'yerr' must not contain negative values")

    broken.__name__ = "accuracy_by_type"
    from bench.registry import Registry

    rest = dict(figures.FIGURES.items()[1:])
    monkeypatch.setattr(figures, "FIGURES", Registry("report figure", {"accuracy_by_type": broken, **rest}))
    rep = build_report(db, tmp_path / "out")
    assert rep.markdown.exists() and rep.warnings
    assert "failed to draw (ValueError: 'yerr' must not contain negative values)" in rep.markdown.read_text()
    assert "figure accuracy_by_type skipped: ValueError" in capsys.readouterr().err


@pytest.mark.slow
def test_run_exits_cleanly_when_the_report_fails(tmp_path, monkeypatch, capsys):
    from bench.report import build as build_mod
    from bench.runner.app import run_job
    from tests.helpers.runner import compose_cfg

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(build_mod, "build_report", boom)
    outcomes = run_job(compose_cfg(tmp_path, "dataset.limit=2", "run_strategies=[oracle]", "output.report=true"))
    assert outcomes and outcomes[0].computed == 2
    err = capsys.readouterr().err
    assert "report: not written (RuntimeError: disk full)" in err and "ombench report --db" in err
