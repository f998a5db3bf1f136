"""The read-back side of om_core's formats: each parser is the inverse of the formatter next to it."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta, timezone

import pytest

from om_core.dates import annotate_relative, format_date_header, format_meaning, last_header_date
from om_core.observer_format import format_messages, history_profile, parse_history
from om_core.observer_parse import (
    PRIORITY_LOW,
    ThreadSection,
    format_observation,
    format_observer_output,
    format_sub_observation,
    format_thread_sections,
    observation_text,
    parse_observer_output,
)
from om_core.observer_prompt import (
    HISTORY_HEADING,
    build_observer_messages,
    history_from_prompt,
    split_thread_sections,
)
from om_core.reflector import build_reflector_messages, compression_level_in_prompt, observations_from_prompt
from om_core.types import Message, ToolCall

T0 = datetime(2026, 3, 3, 21, 58, tzinfo=timezone.utc)
MSGS = [
    Message("1", "user", "I adopted a beagle.\nHer name is **Pixel (10 weeks):** cute!", T0),
    Message("2", "assistant", "Congratulations!\n\n1. Vet\n2. Food", T0 + timedelta(minutes=1)),
    Message("3", "assistant", "Searching.", T0 + timedelta(minutes=1),
            tool_calls=(ToolCall("c1", "search", {"q": "vets"}, "result", "Oak Vet"),)),
    Message("4", "user", "Thanks!", T0 + timedelta(hours=3)),  # past midnight: a new date
]


@pytest.mark.parametrize("profile", ["m11", "m31"])
def test_parse_history_inverts_format_messages(profile: str) -> None:
    text = format_messages(MSGS, profile)
    got = parse_history(text)
    assert history_profile(text) == profile
    chat = [(e.role, e.text, e.day, e.clock) for e in got if e.role != "tool"]
    assert [m[0] for m in chat] == ["user", "assistant", "assistant", "user"]
    assert chat[0] == ("user", MSGS[0].content, date(2026, 3, 3), time(21, 58))
    assert chat[1][1] == MSGS[1].content and chat[1][3] == time(21, 59)
    assert chat[3][2:] == (date(2026, 3, 4), time(0, 58))
    if profile == "m31":  # tool exchanges are lines of their own, with the clock they inherit
        tools = [(e.label, e.text, e.clock) for e in got if e.role == "tool"]
        assert tools == [("Tool Call search", "q: \"vets\"", time(21, 59)), ("Tool Result search", "Oak Vet", time(21, 59))]
    else:  # m11 keeps them inside the message block
        assert "[Tool Result: search]\nOak Vet" in chat[2][1]


@pytest.mark.parametrize("profile", ["m11", "m31"])
def test_history_and_threads_read_back_from_the_built_prompt(profile: str) -> None:
    single = build_observer_messages(profile, existing_observations="* 🔴 (09:00) old", messages=MSGS[:2])
    joined = "\n\n".join(m["content"] for m in single if m["role"] == "user")
    assert history_from_prompt(joined) == format_messages(MSGS[:2], profile)
    multi = build_observer_messages(profile, existing_observations="", threads={"a": MSGS[:1], "b": MSGS[3:]})
    sections = split_thread_sections(history_from_prompt("\n\n".join(m["content"] for m in multi[1:])))
    assert sections == [("a", format_messages(MSGS[:1], profile)), ("b", format_messages(MSGS[3:], profile))]
    assert split_thread_sections("no threads") == [(None, "no threads")]
    assert history_from_prompt(f"intro\n{HISTORY_HEADING}\n\n  body  ") == "body"


@pytest.mark.parametrize(("profile", "levels"), [("m31", range(5)), ("m11", range(2))])
def test_reflector_request_reads_back(profile: str, levels: range) -> None:
    obs = "Date: Mar 3, 2026\n* 🔴 (09:12) User stated X"
    for level in levels:
        user = build_reflector_messages(profile, obs, level, guidance="keep names")[-1]["content"]
        assert observations_from_prompt(user) == obs
        assert compression_level_in_prompt(user) == level


def test_observer_output_and_observation_lines_round_trip() -> None:
    line = format_observation("User stated X " + format_meaning("Mar 2, 2026"), PRIORITY_LOW, time(9, 5))
    assert line == "* 🟢 (09:05) User stated X (meaning Mar 2, 2026)"
    assert observation_text(line) == "User stated X (meaning Mar 2, 2026)"
    assert observation_text(format_sub_observation("Oak Vet")) == "Oak Vet"
    assert observation_text(format_sub_observation("Oak Vet"), arrow=False) == "-> Oak Vet"
    body = "\n".join([format_date_header(date(2026, 3, 3)), line])
    out = parse_observer_output(format_observer_output(body, current_task="t", suggested_response="s"))
    assert (out.observations, out.current_task, out.suggested_response) == (body, "t", "s")
    assert last_header_date(body) == date(2026, 3, 3)
    assert annotate_relative(body, T0).endswith("(meaning Mar 2, 2026 - yesterday)")  # om_core reads its notes
    threads = {"a": ThreadSection(body, "ta", "sa"), "b": ThreadSection("* 🔴 (10:00) Y", None, None)}
    multi = parse_observer_output(format_observer_output(format_thread_sections(threads)), multi_thread=True)
    assert multi.threads == {"a": ThreadSection(body, "ta", "sa"), "b": ThreadSection("* 🔴 (10:00) Y")}
    with pytest.raises(ValueError, match="priority must be one of"):
        format_observation("x", "!")
