"""Input shapes that real agents send and synthetic chat never does: tool calls with large results, system
messages, temporal-gap reminders. Each goes through the public API (`ObservationalMemory`, `OMConfig`, storage)
with the scripted models of `om_core.testing`."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest

from om_core import InMemoryStorage, Message, ObservationalMemory, OMConfig, SQLiteStorage, ToolCall
from om_core.observer_prompt import history_from_prompt
from om_core.testing import ScriptedObserver, ScriptedReflector, synthetic_turns
from om_core.tokens import default_counter

T0 = datetime(2026, 3, 3, 9, 0, tzinfo=timezone.utc)
COUNTER = default_counter()


def big_text(tokens: int, seed: int = 1) -> str:
    """Random words (a search result dump) of about `tokens` o200k tokens."""
    rng = random.Random(seed)
    words = [f"{rng.choice('bcdfghklmnprstvz')}{rng.choice('aeiou')}{rng.choice('lmnrst')}" for _ in range(400)]
    text = " ".join(rng.choice(words) for _ in range(tokens))
    return text


def observer_history(obs: ScriptedObserver, call: int = -1) -> str:
    msgs = obs.calls[call]["messages"]
    return history_from_prompt("\n\n".join(m["content"] for m in msgs if m["role"] == "user"))


def memory(cfg: dict, storage=None) -> tuple[ObservationalMemory, ScriptedObserver]:
    obs = ScriptedObserver()
    return ObservationalMemory(OMConfig.from_dict(cfg), storage or InMemoryStorage(), obs, ScriptedReflector()), obs


# ---- tool calls --------------------------------------------------------------------------------------------

RESULT = big_text(35_000)


@pytest.mark.parametrize("scope", ["thread", "resource"])
@pytest.mark.parametrize("profile", ["m11", "m31"])
async def test_a_large_tool_result_counts_toward_pending_and_gets_observed(profile, scope):
    om, obs = memory({"profile": profile, "scope": scope, "observation": {"message_tokens": 5000}})
    assert COUNTER.count_string(RESULT) > 30_000
    await om.prepare_turn("r", "t", [Message("u0", "user", "Find last quarter's sales report.", T0)], T0)
    call = ToolCall("call-1", "search_reports", {"query": "sales Q4"}, "result", RESULT)
    reply = Message("a0", "assistant", "", T0 + timedelta(seconds=5), tool_calls=(call,))
    events = await om.finish_turn("r", "t", [reply], T0 + timedelta(seconds=5))
    await om.wait_idle()
    assert "observe" in events, events  # ~35k pending tokens against a 5k threshold
    history = observer_history(obs)
    label = "[Tool Result: search_reports]" if profile == "m11" else "Tool Result search_reports"
    assert label in history and RESULT[:200] in history
    shown = COUNTER.count_string(history)
    if profile == "m31":  # the Observer sees at most 5,000 tokens of a result, counting uses all of it
        assert shown < 6_000 and "[truncated ~" in history
    else:  # m11 passed tool results whole
        assert shown > 30_000
    assert RESULT.split()[0] in om.record("r", "t").active_observations


@pytest.mark.parametrize("profile", ["m11", "m31"])
async def test_tool_calls_reach_the_actor_raw_tail_and_the_pending_count(profile):
    om, _ = memory({"profile": profile, "observation": {"message_tokens": 100_000}})
    await om.prepare_turn("r", "t", [Message("u0", "user", "Weather in Oslo?", T0)], T0)
    result = {"city": "Oslo", "forecast": [{"day": d, "high_c": 3 + d, "summary": "light snow"} for d in range(40)]}
    call = ToolCall("call-1", "get_weather", {"city": "Oslo"}, "result", result)
    await om.finish_turn("r", "t", [Message("a0", "assistant", "", T0 + timedelta(seconds=3), tool_calls=(call,))],
                         T0 + timedelta(seconds=3))
    at = T0 + timedelta(minutes=1)
    ctx = await om.prepare_turn("r", "t", [Message("u1", "user", "And tomorrow?", at)], at)
    shown = {m.key: m for m in ctx.messages}
    assert shown["msg:a0"].tool_calls == (call,)  # the exchange is in the Actor's context, not an empty message
    import json
    assert ctx.pending_tokens > COUNTER.count_string(json.dumps(result)) - 20  # the full result is counted


# ---- system messages ---------------------------------------------------------------------------------------

SYSTEM = "ZEBRA-PROTOCOL: " + big_text(400, seed=2)


@pytest.mark.parametrize("profile", ["m11", "m31"])
async def test_system_messages_are_shown_but_never_counted_stored_or_observed(profile, tmp_path):
    om, obs = memory({"profile": profile, "observation": {"message_tokens": 300}}, SQLiteStorage(tmp_path / "om.db"))
    ctx = await om.prepare_turn("r", "t", [Message("s0", "system", SYSTEM, T0), Message("u0", "user", "Hi!", T0)], T0)
    events = ctx.events + await om.finish_turn("r", "t", [Message("a0", "assistant", "Hello.", T0)], T0)
    await om.wait_idle()
    assert "observe" not in events and ctx.pending_tokens < 100  # a 400-token system message: nothing pending
    keys = [m.key for m in ctx.messages]
    assert keys.index("msg:s0") < keys.index("msg:u0")  # this turn's Actor still gets it, before the input
    assert om.storage.get_message("s0") is None
    # enough real conversation to observe: the system text never reaches the Observer or memory
    for i, (at, user, assistant) in enumerate(synthetic_turns(6, words=80, start=T0 + timedelta(hours=1)), 1):
        await om.prepare_turn("r", "t", [Message(f"s{i}", "system", SYSTEM, at), Message(f"u{i}", "user", user, at)], at)
        await om.finish_turn("r", "t", [Message(f"a{i}", "assistant", assistant, at)], at)
        await om.wait_idle()
    assert obs.calls and om.record("r", "t").active_observations
    assert not any("ZEBRA" in observer_history(obs, k) for k in range(len(obs.calls)))
    assert "ZEBRA" not in om.record("r", "t").active_observations
    later = await om.context("r", "t", T0 + timedelta(days=1))
    assert not any("ZEBRA" in m.content for m in later.messages)


# ---- temporal-gap reminders --------------------------------------------------------------------------------

async def test_temporal_gap_reaches_the_observer_as_its_gap_text():
    om, obs = memory({"temporal_markers": True, "observation": {"message_tokens": 900, "buffer_tokens": False}})
    turns = synthetic_turns(6, words=150, turns_per_day=100, minutes_between=1)
    contexts = []
    for i, (at, user, assistant) in enumerate(turns):
        at = at + timedelta(hours=3) * (i >= 3)  # a three-hour pause before the fourth turn
        contexts.append(await om.prepare_turn("r", "t", [Message(f"u{i}", "user", user, at)], at))
        await om.finish_turn("r", "t", [Message(f"a{i}", "assistant", assistant, at)], at)
    assert "temporal_marker" in contexts[3].events
    # the Actor sees the reminder as a system-reminder message...
    assert any(m.content.startswith("<system-reminder>3 hours") for m in contexts[3].messages)
    # ...the Observer sees only its gap text, as a line of the history
    assert obs.calls
    history = observer_history(obs)
    gap_lines = [line for line in history.split("\n") if line.startswith("3 hours")]
    assert len(gap_lines) == 1 and " later — " in gap_lines[0]
    assert "system-reminder" not in history
