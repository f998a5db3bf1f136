"""`run.max_usd`: with the offline engine priced like a real model, the run stops scheduling questions at the cap,
ends cleanly with one line saying how to resume, and the same command with a higher cap finishes the rest."""

from __future__ import annotations

import pytest

from bench.runner.app import run_job
from bench.store import Results
from tests.helpers.runner import compose_cfg

PRICE = {"input_cost_per_token": 1e-5, "output_cost_per_token": 3e-5}


@pytest.fixture
def priced_offline(monkeypatch):
    """The offline engine priced like a real model (its provider registers these prices with litellm)."""
    from bench import offline

    monkeypatch.setattr(offline, "_ZERO", PRICE)
    offline.register()
    yield
    monkeypatch.undo()
    offline.register()  # back to zero prices


def _costs(db) -> dict[str, float]:
    with Results(db) as res:
        s = res.samples()
    return dict(zip(s.question_id, s.cost_usd))


def test_budget_stops_scheduling_and_the_run_resumes(tmp_path, priced_offline, capsys):
    common = ("dataset.limit=6", "run_strategies=[oracle]", "run.concurrency=2", "run.checkpoints=false")
    free = tmp_path / "free"
    run_job(compose_cfg(free, *common))
    per_q = _costs(free / "bench.duckdb")
    assert len(per_q) == 6 and min(per_q.values()) > 0  # the price reaches the store
    cap = 2.5 * max(per_q.values())

    out = tmp_path / "capped"
    [o] = run_job(compose_cfg(out, *common, f"run.max_usd={cap}"))
    err = capsys.readouterr().err
    assert 1 <= o.computed < 6 and o.not_started == 6 - o.computed and o.failed == 0
    spent = sum(_costs(out / "bench.duckdb").values())
    assert spent <= cap + max(per_q.values())  # at most the questions in flight past the estimate
    line = next(x for x in err.splitlines() if x.startswith("budget:"))
    assert f"run.max_usd=${cap:g} reached" in line and "Run the same command again to continue" in line
    with Results(out / "bench.duckdb") as res:
        assert res.runs().status.tolist() == ["stopped"]

    [o2] = run_job(compose_cfg(out, *common, "run.max_usd=1000"))
    assert o2.skipped == o.computed and o2.computed == 6 - o.computed and o2.not_started == 0
    with Results(out / "bench.duckdb") as res:
        assert res.runs().status.tolist() == ["finished"] and len(res.samples()) == 6


def test_budget_decisions():
    from bench.runner.budget import Budget

    b = Budget(1.0)
    assert b.decide() == "start"  # nothing known yet: one question at a time
    b.in_flight = 1
    assert b.decide() == "wait"
    b.in_flight, b.finished, b.spent = 1, 1, 0.3  # mean 0.3: 0.3 + 2 * 0.3 <= 1
    assert b.decide() == "start"
    b.in_flight = 2  # 0.3 + 3 * 0.3 > 1: wait for one in flight to finish
    assert b.decide() == "wait"
    b.in_flight = 0
    b.spent, b.finished = 0.8, 2  # mean 0.4: 0.8 + 0.4 > 1 and nothing in flight: stop
    assert b.decide() == "stop"
    assert Budget(None).decide() == "start"



def test_budget_plans_for_every_retry():
    """With retries the estimate of a question in flight is its worst case: mean spend without retries plus
    retry_max tries (answer + judge) at the mean cost of one."""
    from bench.runner.budget import Budget, split_spend
    from bench.store.contract import CallRow, QuestionResult, SampleRow

    def call(i: int, phase: str, usd: float) -> CallRow:
        return CallRow(call_idx=i, role="judge" if phase == "judge" else "actor", model="m", phase=phase, cost_usd=usd)

    calls = [call(0, "ingest", 0.5), call(1, "answer", 0.1), call(2, "judge", 0.02), call(3, "retry", 0.1),
             call(4, "judge", 0.02)]
    result = QuestionResult(sample=SampleRow(question_id="q"), calls=calls)
    assert split_spend(result) == pytest.approx((0.62, 0.12))
    b = Budget(2.0, retry_max=2)
    b.in_flight = 1
    b.release(result)
    assert b.worst_case() == pytest.approx(0.62 + 2 * 0.12)  # not the 0.74 this question spent
    b.retry_max = 0
    assert b.worst_case() == pytest.approx(0.62)
    b.retry_max = 2
    b.spent = 1.2  # 1.2 + 0.86 > 2: stop, and the line says it planned for retries
    assert b.decide() == "stop" and "worst case: 2 retries of every question" in b.stop_line(3)
