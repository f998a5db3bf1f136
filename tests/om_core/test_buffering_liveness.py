"""Background work never stalls memory: buffering resumes after every activation and synchronous observation
even when Observer calls are slow, a failing background reflection is not restarted at every step, and an
activation never leaves a raw tail above `block_after`. Public API, scripted models."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

from om_core import InMemoryStorage, Message, ObservationalMemory, OMConfig
from om_core.testing import ScriptedObserver, ScriptedReflector, synthetic_turns

T0 = datetime(2026, 3, 3, 9, 0, tzinfo=timezone.utc)
BUFFERED = "Output <observations> every time"


class SlowBufferObserver(ScriptedObserver):
    """Buffered calls take `steps` event-loop turns (the test yields once per conversation turn)."""

    def __init__(self, steps: int) -> None:
        super().__init__()
        self.steps = steps

    async def complete(self, messages, **params):
        if BUFFERED in "".join(str(m["content"]) for m in messages):
            for _ in range(self.steps):
                await asyncio.sleep(0)
        return await super().complete(messages, **params)


async def converse(om, n, *, words=80, settle=False):
    """n turns in thread t; between turns the event loop runs once (`settle`: until background work is done).
    Returns the events of each turn (prepare + finish)."""
    out = []
    for i, (at, user, assistant) in enumerate(synthetic_turns(n, words=words, turns_per_day=1000, minutes_between=2)):
        ctx = await om.prepare_turn("r", "t", [Message(f"u{i}", "user", user, at)], at)
        done = at + timedelta(seconds=30)
        events = await om.finish_turn("r", "t", [Message(f"a{i}", "assistant", assistant, done)], done)
        out.append(ctx.events + events)
        await (om.wait_idle() if settle else asyncio.sleep(0))
    return out


def cycles(turn_events: list[list[str]]) -> list[list[str]]:
    """The events between consecutive activations / synchronous observations (each cycle ends with one)."""
    out: list[list[str]] = [[]]
    for events in turn_events:
        for e in events:
            out[-1].append(e)
            if e in ("activate", "observe"):
                out.append([])
    return out[:-1]


async def test_slow_background_observer_calls_never_stop_buffering():
    cfg = OMConfig.from_dict({"observation": {"message_tokens": 2000}})  # buffer every 400 tokens, block 2,400
    om = ObservationalMemory(cfg, InMemoryStorage(), SlowBufferObserver(steps=4), ScriptedReflector())
    turns = await converse(om, 70)  # a buffered call takes ~2 turns (~4 at the halved interval)
    done = cycles(turns)
    assert len(done) >= 4
    # every cycle buffers again after the previous activation/observation, so each one ends in an activation
    for k, cycle in enumerate(done[1:], 1):
        assert "buffer" in cycle, (k, cycle)
    assert [c[-1] for c in done[1:]].count("observe") == 0, [c[-1] for c in done]


async def test_buffering_resumes_after_a_synchronous_observation():
    class FailsFirstBuffers(ScriptedObserver):
        """Every buffered call fails until the first synchronous call (the overload then passes)."""

        failing = True

        async def complete(self, messages, **params):
            if BUFFERED not in "".join(str(m["content"]) for m in messages):
                self.failing = False
            elif self.failing:
                raise RuntimeError("observer overloaded")
            return await super().complete(messages, **params)

    cfg = OMConfig.from_dict({"observation": {"message_tokens": 2000}})
    om = ObservationalMemory(cfg, InMemoryStorage(), FailsFirstBuffers(), ScriptedReflector())
    done = cycles(await converse(om, 60, settle=True))
    assert done[0][-1] == "observe"  # the first cycle's buffer calls all failed: synchronous observation
    assert len(done) >= 3 and all("buffer" in c and c[-1] == "activate" for c in done[1:]), done


async def test_a_failing_background_reflection_is_not_restarted_at_every_step():
    class Unreachable(ScriptedReflector):
        async def complete(self, messages, **params):
            self.calls.append({"messages": messages})
            raise RuntimeError("reflector provider down")

    cfg = OMConfig.from_dict({"observation": {"message_tokens": 2000},
                              "reflection": {"observation_tokens": 1500, "block_after": 10}})
    refl = Unreachable()
    om = ObservationalMemory(cfg, InMemoryStorage(), ScriptedObserver(), refl)
    sizes: list[int] = []  # observation tokens at each turn
    calls: list[int] = []
    for i, (at, user, assistant) in enumerate(synthetic_turns(45, words=80, turns_per_day=1000, minutes_between=2)):
        ctx = await om.prepare_turn("r", "t", [Message(f"u{i}", "user", user, at)], at)
        await om.finish_turn("r", "t", [Message(f"a{i}", "assistant", assistant, at)], at)
        await om.wait_idle()
        sizes.append(om.record("r", "t").observation_token_count)
        calls.append(len(refl.calls))
        assert ctx.observation_tokens < 1500 * 10
    grown = len({s for s in sizes if s >= 750})  # each size at or above the 50 % start point
    assert 0 < calls[-1] <= grown, (calls[-1], grown)  # at most one start per growth of the observations
    assert sum(1 for a, b in zip(calls, calls[1:]) if b > a) < len(calls) / 3
    assert all(isinstance(e, RuntimeError) for e in om.errors)


async def test_activation_never_leaves_a_raw_tail_above_block_after():
    cfg = OMConfig.from_dict({"observation": {"message_tokens": 2000}})  # block_after 2,400
    om = ObservationalMemory(cfg, InMemoryStorage(), ScriptedObserver(), ScriptedReflector())
    await converse(om, 4, settle=True)  # ~800 pending, chunks buffered
    rec = om.record("r", "t")
    assert rec.buffered_observation_chunks and not rec.active_observations
    # a large message arrives (a pasted document) while chunks wait: activation alone leaves ~3,000 raw tokens
    at = T0 + timedelta(hours=1)
    huge = " ".join(synthetic_turns(1, words=2400, seed=11)[0][1:])
    events = await om.finish_turn("r", "t", [Message("big", "assistant", huge, at)], at)
    assert "activate" in events and "observe" in events, events
    ctx = await om.context("r", "t", at + timedelta(minutes=1))
    assert ctx.pending_tokens < cfg.block_after_tokens
    assert "big" not in {m.key[4:] for m in ctx.messages if m.key.startswith("msg:")}
    assert "mid00001" in om.record("r", "t").active_observations and om.record("r", "t").buffered_observation_chunks == ()


async def test_a_buffer_call_landing_after_an_activation_does_not_pause_buffering():
    # At the default threshold (buffering every 6,000 tokens, ~23 turns here) with buffered calls lagging several
    # turns, a call started before an activation lands after it; it used to write its pre-activation boundary back
    # over the shifted one, and buffering paused for ~99 turns (then a blocking synchronous observation).
    cfg = OMConfig.from_dict({"observation": {"message_tokens": 30000}})
    om = ObservationalMemory(cfg, InMemoryStorage(), SlowBufferObserver(steps=16), ScriptedReflector())
    turns = await converse(om, 230, words=120)
    buffered = [i for i, events in enumerate(turns) if "buffer" in events]
    assert any("activate" in events for events in turns)
    gaps = [b - a for a, b in zip(buffered, buffered[1:])]
    assert len(buffered) >= 9 and max(gaps) <= 30, gaps
