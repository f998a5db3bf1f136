"""The synthetic sample: deterministic, valid, covers every type and abstention, answers derivable from the
evidence (re-derived here independently), haystacks near the requested size, filler that never interferes."""

from __future__ import annotations

import re
from datetime import date, timedelta
from pathlib import Path

import pytest

from bench.benchmarks.longmemeval.rules import is_abstention
from bench.benchmarks.longmemeval import synthetic_facts as F
from bench.benchmarks.longmemeval.loader import load_dataset
from bench.data.schema import Instance
from bench.data.stats import haystack_tokens
from bench.benchmarks.longmemeval.synthetic import generate, write_synthetic
from bench.benchmarks.longmemeval.format import QUESTION_TYPES, parse_instances

ABS_TYPES = {"single-session-user", "multi-session", "temporal-reasoning", "knowledge-update"}


@pytest.fixture(scope="module")
def sample() -> list[Instance]:
    # several seeds so every kind of every builder is exercised
    raw = [q for seed in range(4) for q in generate(n_per_type=5, haystack_tokens=1500, seed=seed, abstention_per_type=2)]
    return parse_instances(raw, "synthetic-test")


def evidence(inst: Instance):
    wanted = set(inst.answer_session_ids)
    return [s for s in inst.sessions if s.session_id in wanted]


def answer_turns(inst: Instance) -> list[str]:
    return [t.content for s in evidence(inst) for t in s.turns if t.has_answer]


def test_deterministic_for_a_seed() -> None:
    assert generate(seed=11) == generate(seed=11)
    assert generate(seed=11) != generate(seed=12)


def test_valid_and_covers_every_type_and_abstention() -> None:
    raw = generate()
    insts = parse_instances(raw, "synthetic")  # raises on anything the validator rejects
    assert {i.question_type for i in insts} == set(QUESTION_TYPES)
    for qtype in QUESTION_TYPES:
        plain = [i for i in insts if i.question_type == qtype and not is_abstention(i.question_id)]
        abst = [i for i in insts if i.question_type == qtype and is_abstention(i.question_id)]
        assert len(plain) == 2
        assert len(abst) == (1 if qtype in ABS_TYPES else 0)
    assert all(i.question_id.startswith("syn_") for i in insts)
    assert len({i.question_id for i in insts}) == len(insts)
    assert list(raw[0]) == ["question_id", "question_type", "question", "question_date", "answer", "answer_session_ids",
                            "haystack_dates", "haystack_session_ids", "haystack_sessions"]


def test_evidence_is_dated_before_the_question_and_haystack_sorted(sample: list[Instance]) -> None:
    for inst in sample:
        dates = [s.date for s in inst.sessions]
        assert dates == sorted(dates) and dates[-1] < inst.question_date
        assert inst.answer_session_ids and all(sid.startswith("answer_") for sid in inst.answer_session_ids)
        filler = [s for s in inst.sessions if s.session_id not in set(inst.answer_session_ids)]
        assert all(t.has_answer is None for s in filler for t in s.turns)  # as in S: filler turns lack the key


def test_extractive_answers_appear_in_evidence(sample: list[Instance]) -> None:
    types = {"single-session-user", "single-session-assistant", "knowledge-update"}
    checked = 0
    for inst in sample:
        if inst.question_type in types and not is_abstention(inst.question_id):
            assert any(str(inst.answer) in t for t in answer_turns(inst)), inst.question_id
            checked += 1
    assert checked >= 20


def test_knowledge_update_answer_is_the_later_value(sample: list[Instance]) -> None:
    for inst in sample:
        if inst.question_type != "knowledge-update" or is_abstention(inst.question_id):
            continue
        old, new = sorted(evidence(inst), key=lambda s: s.date)
        old_text = old.turns[0].content
        assert str(inst.answer) in new.turns[0].content
        assert not re.search(rf"(?<![\w:]){re.escape(str(inst.answer))}(?![\w:])", old_text), inst.question_id


def test_assistant_questions_have_evidence_on_the_assistant_side(sample: list[Instance]) -> None:
    for inst in sample:
        if inst.question_type == "single-session-assistant":
            roles = [t.role for s in evidence(inst) for t in s.turns if t.has_answer]
            assert roles == ["assistant"]


def test_multi_session_counts_and_sums(sample: list[Instance]) -> None:
    for inst in sample:
        if inst.question_type != "multi-session" or is_abstention(inst.question_id):
            continue
        turns = answer_turns(inst)
        assert len(evidence(inst)) == len(turns) >= 2  # one mention per session
        numbers = [int(n) for t in turns for n in re.findall(r"\d+", t)]
        if isinstance(inst.answer, str):  # a money total
            assert inst.answer == f"${sum(numbers)}"
        elif "in total" in inst.question:
            assert inst.answer == sum(numbers)
        else:
            assert inst.answer == len(turns)


_WORDS = {w: k for k, w in enumerate(F.NUMBER_WORDS)}


def event_day(text: str, said_on: date) -> date:
    """Independent reading of the relative dates a user states."""
    if "earlier today" in text:
        return said_on
    if "yesterday" in text:
        return said_on - timedelta(days=1)
    if m := re.search(r"\b(\w+) days ago", text):
        return said_on - timedelta(days=_WORDS[m.group(1)])
    if m := re.search(r"\b(a|two|three) weeks? ago", text):
        return said_on - timedelta(days=7 * {"a": 1, "two": 2, "three": 3}[m.group(1)])
    if m := re.search(r"last (Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)", text):
        back = (said_on.weekday() - F.WEEKDAY_NAMES.index(m.group(1))) % 7 or 7
        return said_on - timedelta(days=back)
    m = re.search(r"on (\w+) (\d+)(st|nd|rd|th)", text)
    assert m, text
    day = date(said_on.year, F.MONTHS.index(m.group(1)) + 1, int(m.group(2)))
    return day if day <= said_on else day.replace(year=day.year - 1)


def test_temporal_answers_follow_from_the_stated_dates(sample: list[Instance]) -> None:
    clause_to_np = {e[1]: e[0] for e in F.EVENTS}
    seen_kinds = set()
    for inst in sample:
        if inst.question_type != "temporal-reasoning" or is_abstention(inst.question_id):
            continue
        events = {}
        for s in evidence(inst):
            text = s.turns[0].content
            clause = next(c for c in clause_to_np if c[1:] in text)
            events[clause_to_np[clause]] = event_day(text, s.date.date())
        if inst.question.startswith("How many days passed"):
            d1, d2 = events.values()
            assert str(inst.answer).startswith(f"{abs((d1 - d2).days)} days"), inst.question_id
        elif inst.question.startswith("How many days ago"):
            (d1,) = events.values()
            assert str(inst.answer).startswith(f"{(inst.question_date.date() - d1).days} days"), inst.question_id
        else:
            assert inst.answer == min(events, key=events.get)
        seen_kinds.add(inst.question.split(",")[0][:20])
    assert len(seen_kinds) == 3


def test_preference_rubric_uses_what_the_user_said(sample: list[Instance]) -> None:
    terms = [*F.DIETS, *F.CUISINES, *F.LOW_IMPACT, *F.INSTRUMENTS, *F.PODCAST_SUBJECTS, *F.LANDSCAPES]
    for inst in sample:
        if inst.question_type == "single-session-preference":
            said = " ".join(answer_turns(inst))
            assert str(inst.answer).startswith("The user would prefer")
            assert any(term in said and term in str(inst.answer) for term in terms), inst.question_id


def test_abstention_has_related_evidence_but_no_answer_turn(sample: list[Instance]) -> None:
    abst = [i for i in sample if is_abstention(i.question_id)]
    assert {i.question_type for i in abst} == ABS_TYPES
    for inst in abst:
        assert evidence(inst) and not answer_turns(inst)
        assert "not mention" in str(inst.answer) or "never mentioned" in str(inst.answer)


def test_filler_never_mentions_the_answer(sample: list[Instance]) -> None:
    for inst in sample:
        if is_abstention(inst.question_id) or not isinstance(inst.answer, str) or len(inst.answer) < 4 or inst.question_type == "single-session-preference":
            continue
        needle = inst.answer.split(".")[0]
        filler = [t.content for s in inst.sessions if s.session_id not in set(inst.answer_session_ids) for t in s.turns]
        assert not any(needle in t for t in filler), (inst.question_id, needle)


@pytest.mark.parametrize("target", [1000, 6000])
def test_haystack_size_near_requested(target: int) -> None:
    insts = parse_instances(generate(n_per_type=1, haystack_tokens=target, seed=2), "s")
    sizes = haystack_tokens(insts)
    assert all(abs(n - target) <= 0.1 * target for n in sizes), sizes


def test_filler_is_varied() -> None:
    insts = parse_instances(generate(haystack_tokens=6000), "s")
    openings = [s.turns[0].content for i in insts for s in i.sessions if not s.session_id.startswith("answer_")]
    assert len(openings) > 100
    assert len(set(openings)) > 0.7 * len(openings)
    for inst in insts:  # within one haystack (what a system under test sees) openings and replies rarely repeat
        assert len({s.turns[0].content for s in inst.sessions}) > 0.9 * len(inst.sessions)
        assert len({s.turns[1].content for s in inst.sessions}) > 0.9 * len(inst.sessions)


@pytest.mark.parametrize("name", ["s.json", "s.jsonl", "s.json.xz", "s.jsonl.gz"])
def test_write_synthetic_round_trips(tmp_path: Path, name: str) -> None:
    path = write_synthetic(tmp_path / name, n_per_type=1, haystack_tokens=500, seed=4)
    loaded = load_dataset(str(path))
    assert loaded.instances == load_dataset("synthetic:n_per_type=1,haystack_tokens=500,seed=4").instances
    assert not loaded.official
