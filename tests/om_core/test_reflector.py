from typing import Any, Callable

import pytest

from om_core.llm import Completion
from om_core.prompts import load
from om_core.reflector import (
    EmptyReflectionError,
    build_reflector_messages,
    compression_start_level,
    reflect,
)
from om_core.tokens import TokenCounter

BIG = "<observations>\nDate: Mar 3, 2026\n" + "\n".join(f"* 🔴 (09:{i:02d}) User stated detail {i} about the garden" for i in range(40)) + "\n</observations>"
SMALL = "<observations>\nDate: Mar 3, 2026\n* 🔴 (09:00) User keeps a garden\n</observations>\n<suggested-response>Ask about tomatoes</suggested-response>"
INPUT = "Date: Mar 3, 2026\n" + "\n".join(f"* 🔴 (09:{i:02d}) User said thing {i}" for i in range(50))
DEGENERATE = "<observations>\n" + "* 🔴 (09:00) the same observation repeated\n" * 200 + "</observations>"


class ScriptedModel:
    """Returns canned text chosen from the compression level found in the prompt; records every call."""

    def __init__(self, reply: Callable[[int], str]):
        self.reply = reply
        self.calls: list[tuple[list[dict[str, Any]], dict[str, Any]]] = []

    @staticmethod
    def level_of(messages: list[dict[str, Any]]) -> int:
        user = messages[-1]["content"]
        for level, heading in ((4, "EXTREME"), (3, "CRITICAL"), (2, "AGGRESSIVE"), (1, "## COMPRESSION REQUIRED")):
            if heading in user:
                return level
        return 0

    async def complete(self, messages: list[dict[str, Any]], **params: Any) -> Completion:
        self.calls.append((messages, params))
        return Completion(text=self.reply(self.level_of(messages)), model="scripted")


COUNTER = TokenCounter()
TARGET = COUNTER.count_string("Date: Mar 3, 2026\n* 🔴 (09:00) User keeps a garden") + 5


def test_start_level():
    assert compression_start_level("google/gemini-2.5-flash") == 2
    assert compression_start_level("gpt-4o") == 1
    assert compression_start_level("") == 1


async def test_ladder_shrinks_only_at_level_3():
    model = ScriptedModel(lambda level: SMALL if level >= 3 else BIG)
    result = await reflect(model, INPUT, target_tokens=TARGET, model_name="gpt-4o", counter=COUNTER)
    assert result.levels == [1, 2, 3]
    assert not result.over_target
    assert result.text == "Date: Mar 3, 2026\n* 🔴 (09:00) User keeps a garden"
    assert result.tokens == COUNTER.count_string(result.text) < TARGET
    assert result.suggested_response == "Ask about tomatoes"
    sent_last = model.calls[-1][0][-1]["content"]
    assert load("m31", "reflector_level_3") in sent_last
    assert load("m31", "reflector_level_2") not in sent_last
    assert model.calls[0][1]["role"] == "reflector" and model.calls[0][1]["temperature"] == 0


async def test_ladder_never_shrinks_commits_last_output_over_target():
    replies = {1: BIG, 2: BIG.replace("garden", "yard"), 3: BIG.replace("garden", "lawn"), 4: BIG.replace("garden", "plot")}
    model = ScriptedModel(lambda level: replies[level])
    result = await reflect(model, INPUT, target_tokens=TARGET, model_name="gpt-4o", counter=COUNTER)
    assert result.levels == [1, 2, 3, 4]
    assert result.over_target
    assert "plot" in result.text and "garden" not in result.text


async def test_ladder_is_capped_at_three_steps_and_level_4():
    model = ScriptedModel(lambda level: BIG)
    result = await reflect(model, INPUT, target_tokens=TARGET, model_name="google/gemini-2.5-flash", counter=COUNTER)
    assert result.levels == [2, 3, 4]
    result = await reflect(ScriptedModel(lambda level: BIG), INPUT, target_tokens=TARGET, start_level=0, counter=COUNTER)
    assert result.levels == [0, 1, 2, 3]


async def test_degenerate_and_empty_outputs_move_up_and_last_non_empty_is_committed():
    replies = {1: BIG, 2: DEGENERATE, 3: "<observations>\n</observations>", 4: "no tags and no list lines"}
    result = await reflect(ScriptedModel(lambda lv: replies[lv]), INPUT, target_tokens=TARGET, counter=COUNTER)
    assert result.levels == [1, 2, 3, 4]
    assert result.degenerate_levels == [2]
    assert result.over_target
    assert "garden" in result.text


async def test_empty_reflection_refused():
    model = ScriptedModel(lambda level: "<observations>\n</observations>")
    with pytest.raises(EmptyReflectionError):
        await reflect(model, INPUT, target_tokens=TARGET, counter=COUNTER)
    assert len(model.calls) == 4


async def test_all_degenerate_refused():
    with pytest.raises(EmptyReflectionError):
        await reflect(ScriptedModel(lambda lv: DEGENERATE), INPUT, target_tokens=TARGET, start_level=2, counter=COUNTER)


async def test_empty_input_needs_no_call():
    model = ScriptedModel(lambda lv: BIG)
    result = await reflect(model, "  \n", target_tokens=100)
    assert result.text == "" and model.calls == []


async def test_bad_target_rejected():
    with pytest.raises(ValueError, match="target_tokens"):
        await reflect(ScriptedModel(lambda lv: BIG), INPUT, target_tokens=0)


async def test_m11_single_retry_with_guidance():
    model = ScriptedModel(lambda level: SMALL if level == 1 else BIG)
    result = await reflect(model, INPUT, target_tokens=TARGET, profile="m11", counter=COUNTER)
    assert result.levels == [0, 1]
    assert not result.over_target
    assert load("m11", "reflector_retry") in model.calls[1][0][-1]["content"]
    assert "COMPRESSION" not in model.calls[0][0][-1]["content"]


async def test_m11_commits_even_when_retry_still_too_big():
    model = ScriptedModel(lambda level: BIG)
    result = await reflect(model, INPUT, target_tokens=TARGET, profile="m11", counter=COUNTER)
    assert result.levels == [0, 1] and result.over_target and "garden" in result.text


async def test_m11_no_retry_when_first_attempt_fits():
    model = ScriptedModel(lambda level: SMALL)
    result = await reflect(model, INPUT, target_tokens=TARGET, profile="m11", counter=COUNTER)
    assert result.levels == [0] and len(model.calls) == 1


async def test_m11_has_no_degenerate_check_but_flags_the_loop():
    model = ScriptedModel(lambda level: DEGENERATE)
    result = await reflect(model, INPUT, target_tokens=10_000, profile="m11", counter=COUNTER)
    # committed as m11 committed it, and flagged so the engine can record it
    assert result.levels == [0] and "repeated" in result.text
    assert result.degenerate and result.degenerate_levels == [0] and result.rejected == []


async def test_m11_with_the_degenerate_check_refuses_the_loop():
    model = ScriptedModel(lambda level: DEGENERATE)
    with pytest.raises(EmptyReflectionError) as err:
        await reflect(model, INPUT, target_tokens=10_000, profile="m11", counter=COUNTER, degenerate_check=True)
    assert err.value.reason == "degenerate_repetition" and len(model.calls) == 2  # the attempt and its retry


async def test_m11_empty_refused():
    with pytest.raises(EmptyReflectionError):
        await reflect(ScriptedModel(lambda lv: ""), INPUT, target_tokens=TARGET, profile="m11")


def test_reflector_messages_strip_groups_and_add_guidance():
    obs = '<observation-group id="ab12" range="m1:m9">\nDate: Mar 3, 2026\n* 🔴 (09:00) fact\n</observation-group>'
    msgs = build_reflector_messages("m31", obs, 2, buffered=True, guidance="Focus on pets")
    system, user = msgs[0]["content"], msgs[1]["content"]
    assert "<observational-memory-instruction>" in system and load("m31", "observer_rules") in system
    assert "observation-group" not in user
    assert user.startswith("## OBSERVATIONS TO REFLECT ON\n\nDate: Mar 3, 2026\n* 🔴 (09:00) fact\n\n---\n\n")
    assert "## SPECIFIC GUIDANCE\n\nFocus on pets" in user
    assert load("m31", "reflector_level_2") in user
    assert user.endswith(load("m31", "buffered_note"))


def test_reflector_level_zero_has_no_guidance_and_levels_are_validated():
    user = build_reflector_messages("m31", "x", 0)[1]["content"]
    assert "COMPRESSION" not in user
    with pytest.raises(ValueError, match="compression level"):
        build_reflector_messages("m31", "x", 5)
    with pytest.raises(ValueError, match="compression level"):
        build_reflector_messages("m11", "x", 2)
    with pytest.raises(ValueError, match="profile"):
        build_reflector_messages("m99", "x", 0)


def test_all_m31_levels_differ():
    texts = [build_reflector_messages("m31", "x", lv)[1]["content"] for lv in range(5)]
    assert len(set(texts)) == 5
    assert "✅" in load("m31", "reflector_rules") and "✅" not in load("m11", "reflector_rules")
