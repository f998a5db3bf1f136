"""`ombench judge-audit` (issue 26, item 5): wrong but on-topic answers built from real questions; a judge that
always says yes is reported as unreliable (false-positive rate near 100%), the offline judge is not."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from bench.benchmarks.longmemeval.judge_probes import judge_probes, restatement, wrong_answer
from bench.cli import main
from bench.data.schema import Instance
from tests.helpers.fakeserver import FakeOpenAIServer
from tests.helpers.strategies import s_dataset


def _q(qid: str, qtype: str, answer: str) -> Instance:
    return Instance(qid, qtype, "What was it?", answer, datetime(2023, 5, 1), "2023/05/01 (Mon) 10:00", (), ())


@pytest.mark.parametrize("qid, qtype, answer, kind, wrong", [
    ("a", "temporal-reasoning", "3 days. 4 days (including the last day) is also acceptable.", "number", "5 days."),
    ("b", "multi-session", "$300", "number", "$600"),
    ("c", "temporal-reasoning", "2.5 years", "number", "5 years"),
    ("d", "single-session-user", "In March", "month", "In July"),
    ("e", "single-session-user", "Wednesday", "weekday", "Saturday"),
    ("f", "single-session-assistant", "Yes.", "yes_no", "No."),
    ("g_abs", "multi-session", "You did not mention this information.", "non_abstention", None),
    ("h", "single-session-preference", "The user would prefer hotels with a pool", "ignores_preference", None),
    ("i", "single-session-user", "Roscioli", "name", "Revolution Hall"),
])
def test_each_wrong_answer_rule_changes_what_makes_it_right(qid, qtype, answer, kind, wrong) -> None:
    others = [_q("o1", qtype, "Revolution Hall"), _q("o2", qtype, "a road bike"), _q("o3", qtype, answer)]
    got_kind, got = wrong_answer(_q(qid, qtype, answer), others)
    assert got_kind == kind and (wrong is None or got == wrong)
    assert answer.split(".")[0].lower() not in got.lower()  # the right answer is not in it
    assert answer.rstrip(".") in restatement(_q(qid, qtype, answer))


def test_probes_from_real_longmemeval_questions_cover_every_type() -> None:
    ds = s_dataset()
    probes = judge_probes(ds.instances, 60)
    wrong = [p for p in probes if not p.should_accept]
    assert len(wrong) == len([p for p in probes if p.should_accept]) >= 55
    assert {p.question_type for p in wrong} == set(ds.type_counts())
    assert any(p.kind == "non_abstention" for p in wrong)
    for p in wrong:
        assert p.response.strip().lower() != p.answer.strip().lower()
        assert p.answer.split(". ")[0].strip(". ").lower() not in p.response.lower(), p
    assert judge_probes(ds.instances, 60) == probes  # seeded


def _audit(capsys: pytest.CaptureFixture[str], *overrides: str) -> dict:
    assert main(["judge-audit", "--n", "12", "--json", "dataset=synthetic", *overrides]) == 0
    return json.loads(capsys.readouterr().out)


def test_an_always_yes_judge_is_flagged(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                        tmp_path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000000")
    monkeypatch.chdir(tmp_path)  # the gateway's response cache stays in the test's folder
    with FakeOpenAIServer(lambda body: "yes") as server:
        out = _audit(capsys, "model.judge.model=openai/gpt-4o-2024-08-06", f"+gateway.api_base.openai={server.base_url}")
    fp = out["false_positive"]
    assert fp["n"] >= 12 and fp["rate"] == 1.0 and out["false_negative"]["rate"] == 0.0
    assert out["verdict"].startswith("UNRELIABLE") and not out["offline_engine"]


def test_the_offline_judge_rejects_wrong_answers(capsys: pytest.CaptureFixture[str], tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = _audit(capsys, "model=offline")
    assert out["offline_engine"] and out["false_positive"]["rate"] <= 0.1 and out["false_negative"]["rate"] <= 0.2
    assert not out["verdict"].startswith("UNRELIABLE")
