"""The working-memory format (om_core.working_memory): the Observer's section read forgivingly and written back,
merge and cap rules, the Observer prompt's section read back, the config knob."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from om_core.config import OMConfig, WorkingMemoryConfig
from om_core.errors import ConfigError
from om_core.observer_parse import parse_observer_output
from om_core.observer_prompt import build_observer_messages
from om_core.tokens import default_counter
from om_core.types import Message
from om_core.working_memory import (
    WORKING_MEMORY_HEADING,
    WorkingMemory,
    cap_entries,
    format_entries,
    format_working_memory_section,
    merge_entries,
    parse_working_memory_section,
    update_working_memory,
    working_memory_from_prompt,
)

T0 = datetime(2026, 3, 3, 9, 0, tzinfo=timezone.utc)


def test_section_round_trip_and_forgiving_reading():
    entries = [("name", "Ana Lima"), ("preferences", "window seats; no red-eye flights"), ("", "has two cats")]
    assert parse_working_memory_section(format_working_memory_section(entries)) == entries
    messy = (
        "Some prose first.\n"
        "  <working_memory>\n"
        "1. **Name**: Ana\n"
        "* `diet`:  vegetarian\n"
        "- meeting: at 10:30 on Mondays\n"
        "- Usually reads at 10:30 before work\n"   # a clock is no label
        "- site: https://example.org/x\n"
        "- she mentioned in passing that her sister lives abroad: it matters\n"  # too long to be a label
        "- job:\n"                                  # a label without a value: nothing to set
        "<current-task>\nPrimary: x\n</current-task>\n"  # no closing tag: the next section ends it
    )
    assert parse_working_memory_section(messy) == [
        ("Name", "Ana"), ("diet", "vegetarian"), ("meeting", "at 10:30 on Mondays"),
        ("", "Usually reads at 10:30 before work"), ("site", "https://example.org/x"),
        ("", "she mentioned in passing that her sister lives abroad: it matters"),
    ]
    assert parse_working_memory_section("<observations>\n* 🔴 x\n</observations>") is None
    assert parse_working_memory_section("<working-memory>\n</working-memory>") == []
    # the tag counts only at the start of a line, as the other sections
    assert parse_working_memory_section("the <working-memory> section is optional") is None


@pytest.mark.parametrize("multi", [False, True])
def test_observer_output_section_never_becomes_observations(multi):
    obs = '<thread id="t1">\n* 🔴 (09:00) User moved to Porto\n</thread>' if multi else "* 🔴 (09:00) User moved to Porto"
    inside = f"<observations>\n{obs}\n<working-memory>\n- home: Porto\n</working-memory>\n</observations>"
    after = f"<observations>\n{obs}\n</observations>\n<working-memory>\n- home: Porto\n</working-memory>"
    for text in (inside, after):
        out = parse_observer_output(text, multi_thread=multi)
        assert out.working_memory == [("home", "Porto")]
        assert "home" not in out.observations and "Porto" in out.observations
    # without an <observations> block the list-line fallback must not take the profile's lines either
    bare = parse_observer_output("* 🔴 (09:00) User moved to Porto\n<working-memory>\n- home: Porto\n</working-memory>")
    assert bare.observations == "* 🔴 (09:00) User moved to Porto" and bare.working_memory == [("home", "Porto")]
    assert parse_observer_output(f"<observations>\n{obs}\n</observations>", multi_thread=multi).working_memory is None


def test_merge_keeps_unchanged_lines_in_place_and_moves_changed_ones_last():
    cur = (("name", "Ana"), ("home", "Lisbon"), ("diet", "vegan"))
    assert merge_entries(cur, [("Name", "Ana"), ("diet", "vegan")]) == cur
    assert merge_entries(cur, [("home", "Porto")]) == (("name", "Ana"), ("diet", "vegan"), ("home", "Porto"))
    assert merge_entries(cur, [("diet", "none"), ("pets", "a cat")]) == (("name", "Ana"), ("home", "Lisbon"),
                                                                          ("pets", "a cat"))
    assert merge_entries(cur, [("job", "N/A.")]) == cur  # clearing what is not there changes nothing
    assert merge_entries((("", "likes tea"),), [("", "Likes tea"), ("", "reads a lot")]) == \
        (("", "likes tea"), ("", "reads a lot"))


def test_cap_drops_the_least_recently_changed_lines_and_cuts_a_lone_long_one():
    counter = default_counter()
    entries = [(f"fact {i}", "word " * 12) for i in range(30)]
    capped = cap_entries(entries, 60, counter.count_string, counter.truncate)
    assert 0 < len(capped) < 30 and capped == tuple(entries[-len(capped):])
    assert counter.count_string(format_entries(capped)) <= 60
    long = cap_entries([("notes", "very " * 500)], 40, counter.count_string, counter.truncate)
    assert long[0][0] == "notes" and long[0][1].endswith("…")
    assert counter.count_string(format_entries(long)) <= 40


def test_update_returns_none_when_nothing_changed():
    c = default_counter()
    first = update_working_memory(None, "r", [("name", "Ana")], max_tokens=100, count=c.count_string, now=T0)
    assert isinstance(first, WorkingMemory) and first.text() == "- name: Ana"
    assert first.token_count == c.count_string("- name: Ana") and first.updated_at == T0
    assert update_working_memory(first, "r", [("name", "Ana")], max_tokens=100, count=c.count_string, now=T0) is None
    assert WorkingMemory.from_dict(first.to_dict()) == first


@pytest.mark.parametrize("profile", ["m11", "m31"])
def test_observer_prompt_shows_the_block_and_asks_for_the_section_only_when_on(profile):
    msgs = [Message("m1", "user", "My name is Ana.", T0)]
    off = build_observer_messages(profile, existing_observations="", messages=msgs)
    on = build_observer_messages(profile, existing_observations="* 🔴 x", messages=msgs, working_memory="- name: Ana")
    empty = build_observer_messages(profile, existing_observations="", messages=msgs, working_memory="")
    user = lambda prompt: "\n\n".join(m["content"] for m in prompt if m["role"] == "user")  # noqa: E731
    assert WORKING_MEMORY_HEADING not in user(off) and "<working-memory>" not in off[0]["content"]
    assert "<working-memory>" in on[0]["content"] and "<working-memory>" in empty[0]["content"]
    assert working_memory_from_prompt(user(off)) is None
    assert working_memory_from_prompt(user(on)) == [("name", "Ana")]
    assert working_memory_from_prompt(user(empty)) == []
    # the history still comes last and reads back unchanged
    assert user(on).rstrip().endswith("My name is Ana.") or "## Your Task" in user(on)


def test_config_knob_is_off_by_default_and_validated():
    assert OMConfig().working_memory == WorkingMemoryConfig(enabled=False, max_tokens=400)
    assert OMConfig.from_dict({"working_memory": True}).working_memory.enabled
    assert OMConfig.from_dict({"workingMemory": {"maxTokens": 200}}).working_memory == WorkingMemoryConfig(True, 200)
    # the design write-up's spelling under observation
    assert OMConfig.from_dict({"observation": {"manageWorkingMemory": True}}).working_memory.enabled
    with pytest.raises(ConfigError, match="manage_working_memory: disagrees"):
        OMConfig.from_dict({"working_memory": False, "observation": {"manage_working_memory": True}})
    with pytest.raises(ConfigError, match="working_memory.max_tokens"):
        OMConfig.from_dict({"working_memory": {"max_tokens": 0}})
    with pytest.raises(ConfigError, match="working_memory: expected"):
        OMConfig.from_dict({"working_memory": "yes"})
    with pytest.raises(ConfigError, match="working_memory.colour"):
        OMConfig.from_dict({"working_memory": {"colour": "blue"}})
