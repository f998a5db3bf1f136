"""Where a question's gold evidence sessions went (issue 26, item 4): the matching rule of
bench.report.session_trace on crafted cases, both ways (docs/results.md, "Where the evidence sessions went")."""

from __future__ import annotations

import json

from bench.benchmarks.base import GoldSession
from bench.report.session_trace import carries, trace

FITBIT = "I just got a new Fitbit Versa 3 last week and I love tracking my sleep with it."
OTHER = "Can you recommend a recipe for banana bread with walnuts?"


def _s(sid: str, *turns: tuple[str, str, bool]) -> GoldSession:
    return GoldSession(sid, "2023/05/01 (Mon) 10:00", turns)


def test_a_memory_line_carries_a_turn_that_it_restates() -> None:
    assert carries("* 🔴 (10:00) User got a Fitbit Versa 3 (tracks sleep).", FITBIT)
    assert not carries("* 🔴 (10:00) User asked for a banana bread recipe with walnuts.", FITBIT)
    # one shared word is chance, not a restatement; a long line sharing two words is mostly about something else
    assert not carries("* User mentioned a week in Paris.", FITBIT)
    assert not carries("* User listed " + " ".join(f"topic{c}" for c in "abcdefghij") + " and fitbit sleep.",
                       FITBIT)


def test_sessions_traced_to_memory_lines_and_the_prompt() -> None:
    sessions = [_s("answer_1", ("user", FITBIT, True), ("assistant", "Great choice!", False)),
                _s("answer_2", ("user", OTHER, True))]
    memory = [(0, "observations", "Date: May 1, 2023\n* 🔴 (10:00) User got a Fitbit Versa 3 and tracks sleep.\n"
                                  "* 🟡 (10:05) User likes hiking.")]
    prompt = "system\n<observations>\n* 🔴 (10:00) User got a Fitbit Versa 3 and tracks sleep.\n</observations>"
    a, b = trace(sessions, memory, prompt)
    assert a.lines == {0: [1]} and a.reached_memory and a.memory_in_prompt and not a.raw_in_prompt
    assert a.where == "reached memory, in the Actor's prompt"
    assert b.lines == {} and b.reached_memory is False and b.raw_in_prompt is False
    assert b.where == "lost: neither in memory nor in the prompt"


def test_raw_messages_in_a_json_history_count_as_in_the_prompt() -> None:
    sessions = [_s("answer_1", ("user", 'I said "hi"\nthen ' + FITBIT, True))]
    prompt = json.dumps([{"role": "user", "content": 'I said "hi"\nthen ' + FITBIT}])  # history_format=json
    (t,) = trace(sessions, [], prompt)
    assert t.raw_in_prompt and t.reached_memory is None and t.where == "in the Actor's prompt (raw messages)"
    (u,) = trace(sessions, [], json.dumps([{"role": "user", "content": OTHER}]))
    assert u.raw_in_prompt is False and u.where == "not in the Actor's prompt"
    (v,) = trace(sessions, [], None)
    assert v.raw_in_prompt is None and v.where.startswith("unknown")


def test_without_marked_turns_the_users_turns_are_the_evidence() -> None:
    (t,) = trace([_s("s", ("user", FITBIT, False), ("assistant", OTHER, False))], [], None)
    assert t.evidence == [("user", FITBIT)]
