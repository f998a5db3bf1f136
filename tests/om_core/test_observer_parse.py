from datetime import datetime, timezone
from typing import Any

import pytest

from om_core.llm import Completion
from om_core.observer import (
    DegenerateOutputError,
    build_observer_messages,
    observe,
    parse_observer_output,
)
from om_core.prompts import load
from om_core.types import Message

T0 = datetime(2026, 3, 3, 9, 12, tzinfo=timezone.utc)
MSGS = [Message(id="1", role="user", content="I adopted a beagle named Pixel", created_at=T0)]
GOOD = """Some preamble.
<observations>
Date: Mar 3, 2026
* 🔴 (09:12) User stated they adopted a beagle named Pixel
</observations>
<current-task>
Primary: congratulate the user
</current-task>
<suggested-response>
Ask how Pixel is settling in.
</suggested-response>
<thread-title>New beagle</thread-title>"""
DEGENERATE = "<observations>\n" + "* 🔴 (09:00) the same observation repeated\n" * 200 + "</observations>"


def test_parse_all_sections():
    out = parse_observer_output(GOOD)
    assert out.observations == "Date: Mar 3, 2026\n* 🔴 (09:12) User stated they adopted a beagle named Pixel"
    assert out.current_task == "Primary: congratulate the user"
    assert out.suggested_response == "Ask how Pixel is settling in."
    assert out.thread_title == "New beagle"
    assert not out.degenerate and out.threads == {}


def test_multiple_observation_blocks_are_joined():
    text = "<observations>\n* 🔴 a\n</observations>\nmiddle\n<observations>\n* 🟡 b\n</observations>"
    assert parse_observer_output(text).observations == "* 🔴 a\n* 🟡 b"


def test_fallback_without_tags_keeps_observation_lines_only():
    text = ("Here is what I saw:\nDate: Mar 3, 2026\n* 🔴 (09:12) fact one\n  * -> its detail\n- fact two\n"
            "  1. nested three\nThanks!\n<current-task>\n- not an observation\n</current-task>")
    out = parse_observer_output(text)
    assert out.observations == "Date: Mar 3, 2026\n* 🔴 (09:12) fact one\n  * -> its detail"
    assert out.parse_mode == "fallback" and out.current_task == "- not an observation"


def test_fallback_drops_an_assistant_answer_with_numbered_tips():
    """The list-line fallback kept an assistant's numbered tips as memory (qwen 0.5B, recorded)."""
    text = ("Great observation! Here are some tips:\n\n1. **Know your audience**: keep it simple.\n"
            "2. Use visuals.\n- Practise the talk\n* Ask for feedback")
    out = parse_observer_output(text)
    assert out.observations == "" and out.parse_mode == "fallback"


def test_fallback_keeps_a_date_header_only_above_observations_and_skips_placeholders():
    text = "Date: Mar 2, 2026\nno observation here\nDate: Mar 3, 2026\n* 🔴 (09:12) ...\n* 🟡 (09:13) real one"
    assert parse_observer_output(text).observations == "Date: Mar 3, 2026\n* 🟡 (09:13) real one"


def test_tags_not_at_line_start_are_not_blocks():
    text = "I will write <observations>* 🔴 inline</observations> and <current-task>x</current-task>\n- 🟡 a line"
    out = parse_observer_output(text)
    assert out.observations == "- 🟡 a line"
    assert out.current_task is None


def test_indented_tags_count_as_line_start():
    out = parse_observer_output("  <observations>\n* 🔴 a\n  </observations>")
    assert out.observations == "* 🔴 a"


def test_long_lines_truncated():
    out = parse_observer_output("<observations>\n* " + "x" * 20_000 + "\n</observations>", check_degenerate=False)
    assert out.observations == "* " + "x" * 9_998 + " … [truncated]"


def test_degenerate_output_flagged_unless_check_disabled():
    assert parse_observer_output(DEGENERATE).degenerate
    assert parse_observer_output(DEGENERATE).observations == ""
    assert not parse_observer_output(DEGENERATE, check_degenerate=False).degenerate


def test_multi_thread_blocks():
    text = """<observations>
<thread id="t1">
Date: Mar 3, 2026
* 🔴 (09:12) User stated A
<current-task>Primary: A task</current-task>
<suggested-response>Say A</suggested-response>
</thread>
<thread id="t2">
Date: Mar 4, 2026
* 🔴 (10:00) User asked B
</thread>
</observations>
<current-task>overall</current-task>"""
    out = parse_observer_output(text, multi_thread=True)
    assert set(out.threads) == {"t1", "t2"}
    t1 = out.threads["t1"]
    assert t1.observations == "Date: Mar 3, 2026\n* 🔴 (09:12) User stated A"
    assert t1.current_task == "Primary: A task" and t1.suggested_response == "Say A"
    assert out.threads["t2"].current_task is None
    assert out.current_task == "overall"
    assert out.observations.startswith('<thread id="t1">\nDate: Mar 3, 2026') and "Say A" not in out.observations


def test_multi_thread_without_observations_block():
    out = parse_observer_output('<thread id="x">\n* 🔴 fact\n</thread>', multi_thread=True)
    assert out.threads["x"].observations == "* 🔴 fact" and out.parse_mode == "fallback"


def test_multi_thread_fallback_keeps_no_copied_chat():
    """A model that copied its input's <thread> block (qwen 0.5B, recorded): no observation line, nothing kept."""
    copy = '<thread id="x">\nApr 10 2023:\nUser (2:47 PM): I need a detailer.\nAssistant: Here are tips:\n1. Reviews\n</thread>'
    out = parse_observer_output(copy, multi_thread=True)
    assert out.threads["x"].observations == "" and out.observations == ""


class Scripted:
    def __init__(self, *replies: str):
        self.replies = list(replies)
        self.calls: list[tuple[list[dict[str, Any]], dict[str, Any]]] = []

    async def complete(self, messages: list[dict[str, Any]], **params: Any) -> Completion:
        self.calls.append((messages, params))
        return Completion(text=self.replies[min(len(self.calls), len(self.replies)) - 1])


async def test_observe_m31_regenerates_once_after_degenerate_output():
    model = Scripted(DEGENERATE, GOOD)
    out = await observe(model, "m31", existing_observations="", messages=MSGS)
    assert len(model.calls) == 2 and out.current_task == "Primary: congratulate the user"
    assert model.calls[0][1] == {"temperature": 0.3, "role": "observer"}


async def test_observe_m31_raises_after_second_degenerate_output():
    model = Scripted(DEGENERATE, DEGENERATE)
    with pytest.raises(DegenerateOutputError):
        await observe(model, "m31", existing_observations="", messages=MSGS)
    assert len(model.calls) == 2


async def test_observe_m11_has_no_degenerate_check_and_params_override():
    model = Scripted(DEGENERATE)
    out = await observe(model, "m11", existing_observations="", messages=MSGS, model_params={"temperature": 0.1, "role": "x"})
    assert len(model.calls) == 1 and "repeated" in out.observations
    assert model.calls[0][1] == {"temperature": 0.1, "role": "observer"}


async def test_observe_multi_thread_parses_threads():
    model = Scripted('<observations>\n<thread id="a">\n* 🔴 fact\n</thread>\n</observations>')
    out = await observe(model, "m31", existing_observations="", threads={"a": MSGS})
    assert out.threads["a"].observations == "* 🔴 fact"
    assert '<thread id="a">\nMar 3 2026:' in model.calls[0][0][-1]["content"]


def test_m31_observer_messages_layout():
    msgs = build_observer_messages(
        "m31", existing_observations="* 🔴 old", messages=MSGS, prior_metadata={"current_task": "help", "suggested_response": ""}
    )
    assert [m["role"] for m in msgs] == ["system", "user", "user"]
    task, history = msgs[1]["content"], msgs[2]["content"]
    assert task.startswith("## Previous Observations\n\n* 🔴 old\n\n---\n\n" + load("m31", "observer_previous_note"))
    assert "## Prior Thread Metadata" in task and "- Current task: help" in task and "Suggested response" not in task
    assert task.endswith("## Your Task\n\n" + load("m31", "observer_task"))
    assert history == "## New Message History to Observe\n\nMar 3 2026:\nUser (9:12 AM): I adopted a beagle named Pixel"
    assert "<current-task>" in msgs[0]["content"] and "<thread-title>" not in msgs[0]["content"]
    assert load("m31", "observer_single_thread") in msgs[0]["content"]


def test_m31_buffered_and_options():
    msgs = build_observer_messages(
        "m31", existing_observations="", messages=MSGS, buffered=True, instruction="Track pets.", thread_title=True
    )
    system, task = msgs[0]["content"], msgs[1]["content"]
    assert task.endswith("Output <observations> every time.") and "Previous Observations" not in task
    assert "<current-task>" not in system  # buffered calls skip continuation hints
    assert "<thread-title>" in system
    assert system.endswith("=== CUSTOM INSTRUCTIONS ===\nTrack pets.")


def test_m11_observer_messages_single_user_message_in_order():
    msgs = build_observer_messages("m11", existing_observations="* 🟡 old", messages=MSGS)
    assert [m["role"] for m in msgs] == ["system", "user"]
    body = msgs[1]["content"]
    i_prev, i_hist, i_task = (body.index(h) for h in ("## Previous Observations", "## New Message History", "## Your Task"))
    assert i_prev < i_hist < i_task
    assert "**User (Mar 3, 2026, 9:12 AM):**\nI adopted a beagle named Pixel" in body
    assert "🟡 User asked" in msgs[0]["content"] and "✅" not in msgs[0]["content"]


def test_multi_thread_prompt_wraps_threads():
    msgs = build_observer_messages("m31", existing_observations="", threads={"t1": MSGS, "t2": MSGS})
    history = msgs[-1]["content"]
    assert history.count('<thread id="') == 2 and '<thread id="t2">\nMar 3 2026:\n' in history
    assert "=== MULTI-THREAD INPUT ===" in msgs[0]["content"]
    assert load("m31", "observer_task_multi") in msgs[1]["content"]


def test_exactly_one_of_messages_or_threads():
    with pytest.raises(ValueError, match="exactly one"):
        build_observer_messages("m31", existing_observations="")
    with pytest.raises(ValueError, match="exactly one"):
        build_observer_messages("m31", existing_observations="", messages=MSGS, threads={"a": MSGS})
    with pytest.raises(ValueError, match="empty"):
        build_observer_messages("m31", existing_observations="", messages=[])
    with pytest.raises(ValueError, match="thread id"):
        build_observer_messages("m31", existing_observations="", threads={'a"b': MSGS})
