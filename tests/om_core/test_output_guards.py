"""The output guards one by one (truncation with its one retry, copies, prompt echo, the prompt's example,
counting loops, the tightened repetition rule, the fallback), the default output caps, and the per-call
outcome records. Through `observe` / `reflect` / the engine with scripted models."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from om_core import InMemoryStorage, Message, ObservationalMemory, OMConfig
from om_core.degenerate import detect_counting_loop, detect_degenerate_repetition
from om_core.diagnostics import collect_outputs
from om_core.errors import RejectedOutputError
from om_core.guards import (
    COPIED,
    COUNTING,
    NOT_A_LOG,
    PROMPT_ECHO,
    PROMPT_EXAMPLE,
    TRUNCATED,
    observer_guards,
    reflector_guards,
)
from om_core.llm import Completion
from om_core.observer import build_observer_messages, observe
from om_core.observer_format import format_messages
from om_core.reflector import build_reflector_messages, reflect
from om_core.review import review_output
from om_core.testing import ScriptedObserver, ScriptedReflector, synthetic_turns

T0 = datetime(2026, 3, 3, 9, 12, tzinfo=timezone.utc)
MSGS = [Message("1", "user", "I adopted a beagle named Pixel", T0),
        Message("2", "assistant", "Congratulations! Beagles are friendly dogs that love long walks.", T0)]
GOOD = "<observations>\nDate: Mar 3, 2026\n* 🔴 (09:12) User stated they adopted a beagle named Pixel\n</observations>"
LOG = "Date: Mar 3, 2026\n" + "\n".join(f"* 🔴 (09:{i:02d}) User said thing {i} about the orchard" for i in range(50))


class Replies:
    """A ChatModel answering from a list (the last reply repeats); records params and can report a finish reason."""

    def __init__(self, *replies: str | tuple[str, str]) -> None:
        self.replies = list(replies)
        self.params: list[dict[str, Any]] = []

    async def complete(self, messages: list[dict[str, Any]], **params: Any) -> Completion:
        self.params.append(params)
        r = self.replies[min(len(self.params), len(self.replies)) - 1]
        text, finish = r if isinstance(r, tuple) else (r, "stop")
        return Completion(text, finish_reason=finish)


def observer_review(text: str, profile: str = "m31", messages: list[Message] = MSGS, finish: str = "stop"):
    prompt = build_observer_messages(profile, existing_observations="", messages=messages)
    return review_output("observer", profile, prompt, Completion(text, finish_reason=finish))


# ---- truncation: retried once with a larger cap, then refused -----------------------------------------------------

async def test_a_truncated_observer_output_is_retried_once_with_twice_the_cap():
    model = Replies((GOOD, "length"), GOOD)
    with collect_outputs() as records:
        out = await observe(model, "m31", existing_observations="", messages=MSGS, model_params={"max_tokens": 500})
    assert "beagle" in out.observations
    assert [p["max_tokens"] for p in model.params] == [500, 1000]
    assert [r.outcome for r in records] == ["truncated", "clean"] and records[0].reason == TRUNCATED


@pytest.mark.parametrize("profile", ["m31", "m11"])
async def test_an_observer_output_truncated_twice_is_refused_without_more_calls(profile):
    model = Replies((GOOD, "length"))
    with pytest.raises(RejectedOutputError) as err:
        await observe(model, profile, existing_observations="", messages=MSGS, model_params={"max_tokens": 64})
    assert err.value.reason == TRUNCATED and len(model.params) == 2


async def test_without_a_cap_a_truncated_output_is_refused_at_once():
    model = Replies((GOOD, "length"), GOOD)
    with pytest.raises(RejectedOutputError):
        await observe(model, "m11", existing_observations="", messages=MSGS)
    assert len(model.params) == 1


async def test_a_truncated_reflection_is_retried_at_the_same_level_with_a_larger_cap():
    small = "<observations>\nDate: Mar 3, 2026\n* 🔴 (09:00) User keeps an orchard\n</observations>"
    model = Replies((small, "length"), small)
    result = await reflect(model, LOG, target_tokens=10_000, model_params={"max_tokens": 300})
    assert result.levels == [1] and [p["max_tokens"] for p in model.params] == [300, 600]
    assert "orchard" in result.text


async def test_the_engine_keeps_messages_unobserved_when_every_output_is_truncated():
    class Cut(ScriptedObserver):
        async def complete(self, messages, **params):
            out = await super().complete(messages, **params)
            out.finish_reason = "length"
            self.calls[-1]["max_tokens"] = params.get("max_tokens")
            return out

    obs = Cut()
    cfg = OMConfig.from_dict({"observation": {"message_tokens": 1500, "buffer_tokens": False,
                                              "max_output_tokens": 8192}})
    om = ObservationalMemory(cfg, InMemoryStorage(), obs, ScriptedReflector())
    for i, (at, user, assistant) in enumerate(synthetic_turns(10, words=120)):
        await om.prepare_turn("r", "t", [Message(f"u{i}", "user", user, at)], at)
        await om.finish_turn("r", "t", [Message(f"a{i}", "assistant", assistant, at)], at)
    assert om.rejections and {r.reason for r in om.rejections} == {TRUNCATED}
    assert om.record("r", "t").active_observations == "" and om.record("r", "t").last_observed_at is None
    caps = [c["max_tokens"] for c in obs.calls]
    assert caps[:2] == [8192, 16384]  # the configured Observer cap, then twice it


# ---- default output caps ------------------------------------------------------------------------------------------

def test_default_output_caps_and_no_cap():
    # as each Mastra version sends them: 1.1.0 100,000 to every model; 1.31.0 100,000 to its default model only
    assert (OMConfig().observer_output_cap, OMConfig().reflector_output_cap) == (100_000, 100_000)
    m11 = OMConfig.from_dict({"profile": "m11", "model": "openai/gpt-4o"})
    assert (m11.observer_output_cap, m11.reflector_output_cap) == (100_000, 100_000)
    m31 = OMConfig.from_dict({"profile": "m31", "observation": {"model": "openai/gpt-4o"}})
    assert (m31.observer_output_cap, m31.reflector_output_cap) == (None, None)
    assert OMConfig.from_dict({"profile": "m31", "model": "default"}).observer_output_cap == 100_000
    off = OMConfig.from_dict({"observation": {"max_output_tokens": 0}, "reflection": {"max_output_tokens": 2000}})
    assert (off.observer_output_cap, off.reflector_output_cap) == (None, 2000)
    with pytest.raises(ValueError, match="max_output_tokens"):
        OMConfig.from_dict({"observation": {"max_output_tokens": -5}})


# ---- copies of the input ------------------------------------------------------------------------------------------

def test_a_copy_of_the_history_is_refused_tagged_or_not():
    history = format_messages(MSGS, "m31")
    assert observer_review(history).reason == COPIED  # untagged (the fallback would keep nothing anyway)
    assert observer_review(f"<observations>\n{history}\n</observations>").reason == COPIED


def test_a_copy_with_observation_marks_on_every_line_is_refused():
    long = [Message(str(k), "user", f"Step {k}: I repotted the fern number {k} and moved it to the sunny shelf "
                    f"by the north window of the study, next to shelf {k}.", T0) for k in range(12)]
    copy = "\n".join(f"* 🔴 (09:12) {m.content}" for m in long)
    assert observer_review(f"<observations>\n{copy}\n</observations>", messages=long).reason == COPIED


def test_a_faithful_log_quoting_the_user_is_accepted():
    assert observer_review(GOOD).accepted


# ---- om_core's own prompt: echo and the example -------------------------------------------------------------------

def test_an_echo_of_the_prompt_headings_is_refused():
    level = build_reflector_messages("m31", LOG, 2)[-1]["content"].split("---", 1)[1]
    out = review_output("reflector", "m31", build_reflector_messages("m31", LOG, 2), Completion(level))
    assert out.reason == PROMPT_ECHO


@pytest.mark.parametrize("profile", ["m31", "m11"])
def test_the_prompt_example_is_refused_even_inside_a_real_log(profile):
    prompt = build_reflector_messages(profile, LOG, 1)
    example = "* 🔴 (09:12) User stated they adopted a beagle named Pixel last weekend. (meaning Feb 28, 2026)"
    assert example in prompt[0]["content"]
    text = f"<observations>\n{LOG}\n{example}\n</observations>"
    assert review_output("reflector", profile, prompt, Completion(text)).reason == PROMPT_EXAMPLE
    assert review_output("reflector", profile, prompt, Completion(f"<observations>\n{LOG}\n</observations>")).accepted


async def test_a_reflector_that_answers_with_the_example_leaves_memory_intact():
    example = ("<observations>\nDate: Mar 3, 2026\n* 🔴 (09:12) User stated they adopted a beagle named Pixel last "
               "weekend. (meaning Feb 28, 2026)\n</observations>")
    cfg = OMConfig.from_dict({"observation": {"message_tokens": 1500, "buffer_tokens": False},
                              "reflection": {"observation_tokens": 400}})
    om = ObservationalMemory(cfg, InMemoryStorage(), ScriptedObserver(), Replies(example))
    for i, (at, user, assistant) in enumerate(synthetic_turns(16, words=120)):
        await om.prepare_turn("r", "t", [Message(f"u{i}", "user", user, at)], at)
        await om.finish_turn("r", "t", [Message(f"a{i}", "assistant", assistant, at)], at)
    memory = om.record("r", "t").active_observations
    assert memory and "Pixel" not in memory and om.record("r", "t").generation_count == 0
    assert {r.reason for r in om.rejections} == {PROMPT_EXAMPLE}


# ---- loops ----------------------------------------------------------------------------------------------------------

def test_counting_loops():
    assert detect_counting_loop("\n".join(str(k) for k in range(1, 201)))
    assert detect_counting_loop(", ".join(str(k) for k in range(1, 201)))
    assert detect_counting_loop("\n".join(f"* 🔴 (09:00) User asked about item {k}" for k in range(1, 41)))
    assert not detect_counting_loop("\n".join(str(k) for k in range(1, 21)))  # 20 items: a short list
    assert not detect_counting_loop(LOG)  # the numbers count up, but so does the clock: no identical items
    counting_input = "\n".join(f"User: item {k}" for k in range(1, 201))
    assert not detect_counting_loop("\n".join(f"* 🔴 (09:00) item {k}" for k in range(1, 61)), counting_input)


def test_a_counting_observer_output_is_refused_in_both_profiles():
    text = "<observations>\n" + "\n".join(f"* 🔴 (09:12) User counted {k}" for k in range(1, 201)) + "\n</observations>"
    assert observer_review(text, "m31").reason == COUNTING
    assert observer_review(text, "m11").reason == COUNTING


def test_repetition_of_something_else_than_the_repetitive_input_is_a_loop():
    """The exemption for faithful repetition is tight: the input repeats one line, the output loops on another."""
    line = "User: I watered the tomato plants in the back garden again this morning."
    source = "\n".join([line] * 600)
    faithful = "\n".join(["* 🔴 (09:00) User stated they watered the tomato plants in the back garden again"] * 60)
    other = "\n".join(["* 🔴 (09:00) User keeps asking about the garden shed roof repair estimate today"] * 60)
    longer = "\n".join(["* 🔴 (09:00) User stated they watered the tomato plants in the back garden again"] * 700)
    assert not detect_degenerate_repetition(faithful, source)
    assert detect_degenerate_repetition(other, source)
    assert detect_degenerate_repetition(longer, source)  # more repeats than the input had


# ---- not an observation log -----------------------------------------------------------------------------------------

def test_prose_inside_the_observations_block_is_not_a_log():
    text = "<observations>\nGreat observation! I'm glad you found the information helpful.\n</observations>"
    assert observer_review(text).reason == NOT_A_LOG


def test_an_assistant_answer_is_not_a_log():
    text = "Great observation! Here are some tips:\n1. Know your audience.\n2. Keep it simple.\n- Use visuals"
    review = observer_review(text)
    assert review.reason == NOT_A_LOG and review.output.observations == ""


def test_guard_lists():
    names = [g.__name__ for g in observer_guards(True)]
    assert names[0] == "truncation_guard" and "copy_guard" in names and "degenerate_guard" in names
    assert "degenerate_guard" not in [g.__name__ for g in observer_guards(False)]
    assert "copy_guard" not in [g.__name__ for g in reflector_guards(True)]


# ---- outcome records --------------------------------------------------------------------------------------------

async def test_every_call_is_recorded_with_its_outcome_and_tokens():
    fallback = "Date: Mar 3, 2026\n* 🔴 (09:12) User stated they adopted a beagle named Pixel"
    model = Replies("Here are some tips:\n1. walk the dog", fallback)
    with collect_outputs() as records:
        out = await observe(model, "m31", existing_observations="", messages=MSGS)
    assert out.parse_mode == "fallback" and "Pixel" in out.observations
    assert [(r.role, r.outcome, r.reason) for r in records] == [("observer", "rejected", NOT_A_LOG),
                                                                 ("observer", "fallback", "")]
    assert records[1].input_tokens > 10 and 0 < records[1].output_tokens < records[1].input_tokens
    # outside a collector nothing is recorded (and nothing counted)
    await observe(Replies(GOOD), "m31", existing_observations="", messages=MSGS)
    assert len(records) == 2


async def test_background_work_records_into_the_collector_of_the_code_that_started_it():
    cfg = OMConfig.from_dict({"observation": {"message_tokens": 3000}})  # thread scope: async buffering
    om = ObservationalMemory(cfg, InMemoryStorage(), ScriptedObserver(), ScriptedReflector())
    with collect_outputs() as records:
        for i, (at, user, assistant) in enumerate(synthetic_turns(12, words=120)):
            await om.prepare_turn("r", "t", [Message(f"u{i}", "user", user, at)], at)
            await om.finish_turn("r", "t", [Message(f"a{i}", "assistant", assistant, at + timedelta(seconds=5))],
                                 at + timedelta(seconds=5))
        await om.wait_idle()
    assert records and all(r.outcome == "clean" for r in records)
    assert len(records) == len(om.observer.calls) + len(om.reflector.calls)


async def test_a_regeneration_says_it_is_one_so_a_cache_cannot_replay_the_refused_answer():
    model = Replies("Great question! 1. walk the dog", GOOD)
    await observe(model, "m31", existing_observations="", messages=MSGS)
    assert "attempt" not in model.params[0] and model.params[1]["attempt"] == 1
