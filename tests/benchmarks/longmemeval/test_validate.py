"""Validation of raw LongMemEval questions: one-line errors for what breaks runs, acceptance of real quirks,
and the leak-free view."""

from __future__ import annotations

import dataclasses
import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from bench.benchmarks.longmemeval.rules import is_abstention
from bench.benchmarks.longmemeval.dates import WEEKDAYS, format_lme_date, parse_lme_date
from bench.benchmarks.longmemeval.loader import load_dataset
from bench.data.schema import InstanceView, ViewSession, ViewTurn
from bench.benchmarks.longmemeval.format import instance_to_raw, parse_instance, parse_instances
from bench.errors import DataError


def raw_question(qid: str = "q_demo_1") -> dict:
    return {
        "question_id": qid,
        "question_type": "single-session-user",
        "question": "What colour is my bike?",
        "answer": "green",
        "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_dates": ["2023/05/20 (Sat) 10:00", "2023/05/21 (Sun) 11:30"],
        "haystack_session_ids": ["answer_abc123_1", "filler_9"],
        "haystack_sessions": [
            [{"role": "user", "content": "My bike is green.", "has_answer": True}, {"role": "assistant", "content": "Nice!", "has_answer": False}],
            [{"role": "user", "content": "How do clouds form?"}, {"role": "assistant", "content": "Water vapour condenses."}],
        ],
        "answer_session_ids": ["answer_abc123_1"],
    }


def write(tmp_path: Path, questions: list[dict], name: str = "bad.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(questions), encoding="utf-8")
    return path


def error_of(tmp_path: Path, questions: list[dict]) -> str:
    path = write(tmp_path, questions)
    with pytest.raises(DataError) as info:
        load_dataset(str(path))
    msg = str(info.value)
    assert "\n" not in msg, "errors are one line"
    assert str(path) in msg, "errors name the file"
    return msg


def test_missing_question_date_names_question_and_field(tmp_path: Path) -> None:
    good, bad = raw_question("q_ok"), raw_question("q_missing_date")
    del bad["question_date"]
    msg = error_of(tmp_path, [good, bad])
    assert "q_missing_date" in msg and "question_date" in msg and "missing" in msg


@pytest.mark.parametrize(
    "field,value,expect",
    [
        ("answer", ["green"], "answer"),
        ("answer", True, "answer"),  # bool is an int subclass but never a valid answer
        ("question", None, "question"),
        ("question_type", "abstention", "question_type"),
        ("haystack_dates", "2023/05/20 (Sat) 10:00", "haystack_dates"),
        ("answer_session_ids", ["answer_nope"], "answer_session_ids[0]"),
    ],
)
def test_mistyped_fields(tmp_path: Path, field: str, value: object, expect: str) -> None:
    q = raw_question("q_typed")
    q[field] = value
    msg = error_of(tmp_path, [q])
    assert "q_typed" in msg and f"'{expect}'" in msg


def test_mismatched_parallel_lists(tmp_path: Path) -> None:
    q = raw_question("q_lengths")
    q["haystack_dates"].append("2023/05/22 (Mon) 09:00")
    msg = error_of(tmp_path, [q])
    assert "q_lengths" in msg and "3 entries" in msg and "same length" in msg


@pytest.mark.parametrize(
    "stamp",
    ["2023-02-30 10:00", "2023/05/20 (Mon) 10:00", "2023/02/30 (Thu) 10:00", "2023/05/20 (Sat) 25:00", "2023/05/20 10:00"],
)
def test_bad_session_dates(tmp_path: Path, stamp: str) -> None:
    q = raw_question("q_dates")
    q["haystack_dates"][1] = stamp
    msg = error_of(tmp_path, [q])
    assert "q_dates" in msg and "haystack_dates[1]" in msg


@pytest.mark.parametrize("stamp", ["2023-05-21 11:30", "2023-05-21T11:30:00", "2023-05-21T11:30:00Z",
                                   "2023-05-21T11:30+02:00"])
def test_iso_dates_are_accepted_as_non_official(tmp_path: Path, stamp: str) -> None:
    q = raw_question("q_iso")
    q["haystack_dates"][1] = stamp
    q["question_date"] = "2023-05-30T23:40:00"
    ds = load_dataset(str(write(tmp_path, [q])))
    inst = ds.instances[0]
    # shown to the models as the official files write dates; the wall-clock time is kept as written
    assert inst.sessions[1].date_str == "2023/05/21 (Sun) 11:30"
    assert inst.question_date_str == "2023/05/30 (Tue) 23:40" and inst.question_date.hour == 23
    assert len(ds.format_notes) == 1 and ds.format_notes[0].startswith("non-official date format: 2 dates are ISO-8601")
    assert "non-official date format" in ds.note and not ds.official


def test_official_dates_carry_no_format_note(tmp_path: Path) -> None:
    ds = load_dataset(str(write(tmp_path, [raw_question("q_ok")])))
    assert ds.format_notes == () and "non-official" not in ds.note


@pytest.mark.parametrize(
    "turn,field",
    [
        ({"role": "system", "content": "x"}, "haystack_sessions[1][0].role"),
        ({"role": "user", "content": None}, "haystack_sessions[1][0].content"),
        ({"role": "user", "content": "x", "has_answer": "yes"}, "haystack_sessions[1][0].has_answer"),
        ("just text", "haystack_sessions[1][0]"),
    ],
)
def test_bad_turns(tmp_path: Path, turn: object, field: str) -> None:
    q = raw_question("q_turns")
    q["haystack_sessions"][1][0] = turn
    msg = error_of(tmp_path, [q])
    assert "q_turns" in msg and f"'{field}'" in msg


def test_duplicate_question_ids_and_non_list_file(tmp_path: Path) -> None:
    msg = error_of(tmp_path, [raw_question("q_same"), raw_question("q_same")])
    assert "q_same" in msg and "duplicated" in msg
    path = tmp_path / "obj.json"
    path.write_text(json.dumps({"question_id": "x"}), encoding="utf-8")
    with pytest.raises(DataError, match="not an array"):
        load_dataset(str(path))


def test_real_data_quirks_are_accepted() -> None:
    q = raw_question("q_quirks")
    q["answer"] = 3  # integer answers (32 in the official files)
    q["haystack_dates"] = ["2023/05/21 (Sun) 11:30", "2023/05/20 (Sat) 10:00", "2023/05/20 (Sat) 09:00"]  # unsorted
    q["haystack_session_ids"] = ["answer_abc123_1", "dup_1", "dup_1"]  # duplicate filler id
    q["haystack_sessions"] = [
        [{"role": "assistant", "content": "Hello again!"}, {"role": "user", "content": "My bike is green.", "has_answer": True}],
        [{"role": "user", "content": ""}, {"role": "user", "content": "Anyone?"}],  # empty content, not alternating
        [{"role": "user", "content": "Same session twice."}, {"role": "assistant", "content": "ok"}],
    ]
    inst = parse_instance(q, "quirks.json", 0)
    assert inst.answer == 3 and not is_abstention(inst.question_id)
    assert inst.sessions[1].turns[0].content == "" and inst.sessions[1].turns[0].has_answer is None
    assert [s.session_id for s in inst.sessions] == q["haystack_session_ids"]  # file order kept
    view = inst.view()
    assert [s.date for s in view.sessions] == sorted(s.date for s in inst.sessions)
    assert instance_to_raw(inst)["haystack_sessions"][1][0] == {"role": "user", "content": ""}  # no invented has_answer


def test_abstention_is_an_id_substring() -> None:
    a = parse_instance(raw_question("gpt4_1234abcd_abs"), "f.json", 0)
    b = parse_instance(raw_question("e1234567_abs_x"), "f.json", 0)  # substring, not suffix, as the official code
    c = parse_instance(raw_question("e1234567"), "f.json", 0)
    assert is_abstention(a.question_id) and is_abstention(b.question_id) and not is_abstention(c.question_id)


def test_dates_round_trip_every_weekday() -> None:
    for day in range(1, 8):
        dt = datetime(2024, 1, day, 7, 5)
        text = format_lme_date(dt)
        assert text[12:15] == WEEKDAYS[dt.weekday()]
        assert parse_lme_date(text) == dt
    assert parse_lme_date("2023/05/30 (tue) 23:40") == datetime(2023, 5, 30, 23, 40)  # case-insensitive weekday


def test_raw_round_trip_is_lossless() -> None:
    raw = [raw_question("a"), raw_question("b")]
    raw[1]["answer"] = 7
    again = [instance_to_raw(i) for i in parse_instances(raw, "x.json")]
    assert again == [{k: q[k] for k in again[0]} for q in raw]


# ---------------------------------------------------------------- the leak-free view


def test_view_types_hold_only_role_content_dates_and_labels() -> None:
    assert {f.name for f in dataclasses.fields(ViewTurn)} == {"role", "content"}
    assert {f.name for f in dataclasses.fields(ViewSession)} == {"label", "date", "date_str", "turns"}
    assert {f.name for f in dataclasses.fields(InstanceView)} == {"question", "question_date", "question_date_str", "sessions"}


def _assert_no_leak(instances) -> None:
    for inst in instances:
        view = inst.view()
        assert len(view.sessions) == len(inst.sessions)
        labels = [s.label for s in view.sessions]
        assert len(set(labels)) == len(labels)
        text = repr(view)
        assert "has_answer" not in text and "answer_session_ids" not in text
        for s in inst.sessions:
            for label in labels:
                assert s.session_id not in label and "answer" not in label
            if not any(s.session_id in t.content for t in s.turns):
                assert s.session_id not in text
        if isinstance(inst.answer, str) and len(inst.answer) > 20 and inst.answer not in inst.question:
            assert inst.answer not in text or any(inst.answer in t.content for s in inst.sessions for t in s.turns)


def test_view_does_not_leak_on_synthetic() -> None:
    _assert_no_leak(load_dataset("synthetic").instances)


@pytest.mark.realdata
def test_view_does_not_leak_on_oracle() -> None:
    folder = os.environ.get("LONGMEMEVAL_DATA_DIR")
    if not folder:
        pytest.skip("real data: set LONGMEMEVAL_DATA_DIR to the folder with longmemeval_oracle.json[.xz]")
    ds = load_dataset("longmemeval_oracle", folder)
    _assert_no_leak(ds.instances)
    # the oracle's evidence sessions are all named answer_*; none of that reaches the system under test
    assert all(s.session_id.startswith("answer_") for i in ds.instances for s in i.sessions)
    assert ds.instances[0].oracle_view().sessions  # the explicit oracle path still works
