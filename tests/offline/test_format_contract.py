"""The offline engine reads om_core's prompts with om_core's own parsers: a change of wording in om_core is
followed by the engine, and a format change whose parser was not updated fails here instead of silently
degrading every offline run."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

import om_core.observer_format as observer_format
import om_core.observer_prompt as observer_prompt
import om_core.reflector as reflector
from bench.offline import run_role
from om_core.observer_parse import parse_observer_output
from om_core.types import Message

T0 = datetime(2026, 3, 3, 9, 12, tzinfo=timezone.utc)
CHAT = [
    ("user", "I adopted a beagle named Pixel yesterday."),
    ("assistant", "Congratulations! Beagles need about an hour of exercise a day."),
    ("user", "Can you recommend a vet near Oak Park?"),
]
# a previous observation that reads like a history line: found only if the history section is not cut out
PREVIOUS = "* 🔴 (08:00) User stated they live in Oak Park\nUser: I moved to Paris"
LOG = ("Date: Mar 1, 2026\n* 🔴 (09:00) User stated they live in Oak Park\n* 🟡 (09:01) Assistant said: three parks\n"
       "  * -> Lake Park\n* 🟢 (09:02) User might get a cat\nDate: Mar 2, 2026\n* 🔴 (10:00) User stated they live in Oak Park")


def messages() -> list[Message]:
    return [Message(str(i), r, c, T0 + timedelta(minutes=i)) for i, (r, c) in enumerate(CHAT)]  # type: ignore[arg-type]


def observe(profile: str) -> str:
    prompt = observer_prompt.build_observer_messages(profile, existing_observations=PREVIOUS, messages=messages())
    return run_role("observer", prompt)


@pytest.mark.parametrize(("profile", "name", "wording"), [
    ("m31", "HISTORY_HEADING", "## Conversation Since Your Last Notes"),
    ("m11", "HISTORY_HEADING", "## Conversation Since Your Last Notes"),
    ("m11", "TASK_HEADING", "## What To Do Now"),
])
def test_observer_follows_a_new_heading(monkeypatch: pytest.MonkeyPatch, profile: str, name: str,
                                        wording: str) -> None:
    before = observe(profile)
    assert "Paris" not in before and "vet near Oak Park" in before
    monkeypatch.setattr(observer_prompt, name, wording)
    prompt = observer_prompt.build_observer_messages(profile, existing_observations=PREVIOUS, messages=messages())
    assert wording in str(prompt)  # the prompt did change
    assert run_role("observer", prompt) == before


def test_reflector_follows_a_new_heading_and_new_level_wording(monkeypatch: pytest.MonkeyPatch) -> None:
    before = [run_role("reflector", reflector.build_reflector_messages("m31", LOG, level)) for level in range(5)]
    assert len(set(before)) > 2  # the levels do differ
    load = reflector.load

    def reworded(profile: str, name: str, folder: object = None) -> str:
        text = load(profile, name, folder)  # type: ignore[arg-type]
        return text.replace("COMPRESSION REQUIRED", "SHRINK, LEVEL " + name[-1]) if "level" in name else text

    monkeypatch.setattr(reflector, "REFLECT_HEADING", "## YOUR MEMORY, TO CONDENSE")
    monkeypatch.setattr(reflector, "load", reworded)
    for level in range(5):
        prompt = reflector.build_reflector_messages("m31", LOG, level)
        assert "## YOUR MEMORY, TO CONDENSE" in prompt[-1]["content"]
        assert level == 0 or "COMPRESSION REQUIRED" not in prompt[-1]["content"]
        assert run_role("reflector", prompt) == before[level]


def test_a_history_format_change_without_its_parser_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    good = parse_observer_output(observe("m31")).observations
    assert good.startswith("Date: Mar 3, 2026\n* 🔴 (09:12) User stated they adopted a beagle")
    # om_core writes a new date line but its parser still expects the old one: the engine loses the dates,
    # which the engine's tests (and test_parse_history_inverts_format_messages) catch
    monkeypatch.setattr(observer_format, "m31_date_header", lambda day: f"{day:%Y-%m-%d}:")
    broken = parse_observer_output(observe("m31")).observations
    assert "Date:" not in broken and "(meaning" not in broken
    assert observer_format.parse_history(observer_format.format_messages(messages(), "m31"))[0].day is None


# ---- working memory (om_core.working_memory owns the section and the prompt's heading) -------------------

PROFILE_CHAT = [
    ("user", "My name is Ana Lima. I live in Lisbon and I love jazz concerts."),
    ("assistant", "Lisbon has a lively jazz scene."),
    ("user", "I'm allergic to shellfish, so no seafood places please."),
]


def profile_messages() -> list[Message]:
    return [Message(f"p{i}", r, c, T0 + timedelta(minutes=i)) for i, (r, c) in enumerate(PROFILE_CHAT)]  # type: ignore[arg-type]


@pytest.mark.parametrize("profile", ["m11", "m31"])
def test_offline_observer_fills_the_working_memory_section_only_when_asked(profile: str) -> None:
    off = observer_prompt.build_observer_messages(profile, existing_observations="", messages=profile_messages())
    assert parse_observer_output(run_role("observer", off)).working_memory is None
    on = observer_prompt.build_observer_messages(profile, existing_observations="", messages=profile_messages(),
                                                 working_memory="- name: Ana Lima\n- likes: fado")
    out = parse_observer_output(run_role("observer", on))
    # the name is already known: only what changed comes back, list values merged with what was shown
    assert out.working_memory == [("lives in", "Lisbon"), ("likes", "fado; jazz concerts"), ("allergies", "shellfish")]
    assert "Lisbon" in out.observations and "lives in: Lisbon" not in out.observations
    multi = observer_prompt.build_observer_messages(profile, existing_observations="", working_memory="",
                                                    threads={"t1": profile_messages()[:2], "t2": profile_messages()[2:]})
    got = parse_observer_output(run_role("observer", multi), multi_thread=True)
    assert got.working_memory and ("name", "Ana Lima") in got.working_memory and set(got.threads) == {"t1", "t2"}


def test_offline_observer_follows_a_new_working_memory_heading(monkeypatch: pytest.MonkeyPatch) -> None:
    import om_core.working_memory as working_memory

    def build() -> list:
        return observer_prompt.build_observer_messages("m31", existing_observations="", messages=profile_messages(),
                                                       working_memory="- likes: fado")

    before = run_role("observer", build())
    assert "<working-memory>" in before
    monkeypatch.setattr(working_memory, "WORKING_MEMORY_HEADING", "## About The User Now")
    prompt = build()
    assert "## About The User Now" in str(prompt) and "## Working Memory" not in str(prompt)
    assert run_role("observer", prompt) == before
