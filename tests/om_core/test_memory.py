"""Done-when run: a ≥300-turn, ≥300k-token scripted conversation through the engine (m31 and m11)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

import pytest

from om_core.config import OMConfig
from om_core.testing import ScriptedObserver, ScriptedReflector, synthetic_turns
from om_core.memory import ObservationalMemory
from om_core.storage import InMemoryStorage, SQLiteStorage
from om_core.tokens import default_counter
from om_core.types import Message

N_TURNS = 320
WORDS = 480


@dataclass
class Turn:
    index: int
    day: int
    events: list[str]
    finish_events: list[str]
    pending_before: int  # pending tokens right after the user message was stored, before any memory step
    pending_after: int
    observation_tokens: int
    generation: int
    chunks: list[str]
    raw_ids: list[str]


@dataclass
class Run:
    turns: list[Turn] = field(default_factory=list)
    total_tokens: int = 0
    om: ObservationalMemory | None = None
    observer: ScriptedObserver | None = None


async def replay(profile: str, path) -> Run:
    counter = default_counter()
    observer, reflector = ScriptedObserver(ratio=5), ScriptedReflector()
    om = ObservationalMemory(OMConfig(profile=profile), SQLiteStorage(path), observer, reflector, counter=counter)
    run = Run(om=om, observer=observer)
    previous_pending = 0
    for i, (at, user, assistant) in enumerate(synthetic_turns(N_TURNS, words=WORDS)):
        u = Message(f"u{i}", "user", user, at)
        a = Message(f"a{i}", "assistant", assistant, at + timedelta(seconds=30))
        run.total_tokens += counter.count_messages([u]) + counter.count_messages([a])
        user_tokens = round(counter.count_message("user", user))
        ctx = await om.prepare_turn("res", "thr", [u], at)
        fin = await om.finish_turn("res", "thr", [a], at + timedelta(seconds=30))
        await om.wait_idle()
        rec = om.record("res", "thr")
        run.turns.append(Turn(
            index=i, day=at.date().toordinal(), events=ctx.events, finish_events=fin,
            pending_before=previous_pending + user_tokens, pending_after=ctx.pending_tokens,
            observation_tokens=ctx.observation_tokens, generation=ctx.generation,
            chunks=[m.content for m in ctx.messages if m.key.startswith("om:chunk:")],
            raw_ids=[m.key[4:] for m in ctx.messages if m.key.startswith("msg:")]))
        previous_pending = om.status(rec, "thr").pending
    return run


@pytest.fixture(scope="module")
def m31_run(tmp_path_factory):
    import asyncio

    return asyncio.run(replay("m31", tmp_path_factory.mktemp("m31") / "om.db"))


@pytest.fixture(scope="module")
def m11_run(tmp_path_factory):
    import asyncio

    return asyncio.run(replay("m11", tmp_path_factory.mktemp("m11") / "om.db"))


def all_events(t: Turn) -> list[str]:
    return t.events + t.finish_events


def test_conversation_is_long_enough(m31_run):
    assert len(m31_run.turns) >= 300 and m31_run.total_tokens >= 300_000
    assert m31_run.om.errors == []


def test_first_buffering_at_about_6k(m31_run):
    first = next(t for t in m31_run.turns if "buffer" in all_events(t))
    assert "buffer" in first.events  # triggered by the user message at step 0
    assert 6000 <= first.pending_before < 6000 + 1200  # the first 6k interval boundary, within one message
    assert all(t.pending_before < 6000 for t in m31_run.turns[: first.index])


def test_activation_at_threshold_leaves_raw_tail(m31_run):
    assert sum("activate" in all_events(t) for t in m31_run.turns) >= 8
    activations = [t for t in m31_run.turns if "activate" in t.events]  # at step 0 (the user message)
    assert len(activations) >= 4
    first = activations[0]
    assert first.pending_before >= 30_000 and m31_run.turns[first.index - 1].pending_after < 30_000
    assert "observe" not in all_events(first)  # buffered chunks existed: no synchronous observation
    for t in activations:
        # the raw tail is what was not activated: at least min(1,000, floor), at most about the 6k floor
        assert 1000 <= t.pending_after <= 7000, t
        assert t.raw_ids[-1] == f"u{t.index}"  # the new user message is the last thing the Actor sees
    assert not any("observe" in all_events(t) for t in m31_run.turns)


def test_reflection_creates_new_generation_with_history(m31_run):
    om = m31_run.om
    gens = [t.generation for t in m31_run.turns]
    first = next(t for t in m31_run.turns if t.generation == 1)
    assert "activate_reflection" in all_events(first) or "reflect" in all_events(first)
    assert gens == sorted(gens) and gens[-1] >= 2
    history = om.storage.history("thread:thr")
    assert [r.generation_count for r in history] == list(range(gens[-1], -1, -1))
    gen0 = history[-1]
    assert gen0.observation_token_count >= 40_000  # it passed the threshold, then was replaced
    assert history[-2].origin_type == "reflection" and history[-2].last_reflection_at is not None
    assert first.observation_tokens < gen0.observation_token_count  # the new generation starts smaller
    # reflection kept the observations bounded
    assert max(t.observation_tokens for t in m31_run.turns) < 48_000


def test_observer_compresses_about_5x(m31_run):
    calls = m31_run.observer.calls
    ratio = sum(c["history_chars"] for c in calls) / sum(c["output_chars"] for c in calls)
    assert 3.5 < ratio < 6.5
    assert len(calls) == sum(all_events(t).count("buffer") for t in m31_run.turns)


def test_chunks_are_a_byte_identical_prefix_between_turns(m31_run):
    checked = across_activation = 0
    for a, b in zip(m31_run.turns, m31_run.turns[1:]):
        if a.generation != b.generation or a.day != b.day:
            continue  # a reflection rewrites everything; a new day changes relative ages
        assert b.chunks[: len(a.chunks)] == a.chunks, (a.index, b.index)
        checked += 1
        if len(b.chunks) > len(a.chunks):
            across_activation += 1
    assert checked >= 250 and across_activation >= 5


def test_m11_observes_synchronously_without_buffering(m11_run, m31_run):
    turns = m11_run.turns
    assert not any({"buffer", "activate", "buffer_reflection", "activate_reflection"} & set(all_events(t)) for t in turns)
    observed = [t for t in turns if "observe" in t.finish_events]
    assert len(observed) >= 8 and not any("observe" in t.events for t in turns)  # step > 0 only
    assert len(m11_run.observer.calls) == len(observed)
    for t in observed:
        assert t.pending_before + 500 >= 30_000 - 600  # the assistant reply pushed pending over 30k
        nxt = turns[t.index + 1]
        assert nxt.raw_ids == [f"u{nxt.index}"]  # m11 keeps no raw tail after observing
    head = m11_run.om.record("res", "thr")
    assert head.buffered_observation_chunks == () and head.generation_count >= 1
    assert any("reflect" in t.finish_events for t in turns)


def test_buffering_observer_sees_active_then_buffered_after_mastras_separator(m31_run):
    # Mastra 1.31.0 `combineObservationsForBuffering`: active, "--- BUFFERED (pending activation) ---", buffered
    texts = ["\n".join(str(m.get("content", "")) for m in c["messages"]) for c in m31_run.observer.calls]
    shown = [t for t in texts if "--- BUFFERED (pending activation) ---" in t]
    assert shown, "no buffering call was shown active and buffered observations apart"
    assert all("\n\n--- BUFFERED (pending activation) ---\n\n" in t for t in shown)


async def test_hints_of_buffered_calls_reach_the_thread_at_activation():
    # Mastra 1.31.0 keeps the <current-task> a buffered call returns with its chunk and applies the last activated
    # chunk's to the thread (observational-memory.ts, activation); om_core used to drop it
    class Hinting(ScriptedObserver):
        async def complete(self, messages, **params):
            out = await super().complete(messages, **params)
            if "<current-task>" not in out.text:
                out.text += "\n<current-task>\nPrimary: keep going\n</current-task>"
            return out

    om = ObservationalMemory(OMConfig.from_dict({"profile": "m31", "observation": {"message_tokens": 3000}}),
                             InMemoryStorage(), Hinting(), ScriptedReflector())
    events = []
    for i, (at, user, assistant) in enumerate(synthetic_turns(30, words=150)):
        ctx = await om.prepare_turn("res", "thr", [Message(f"u{i}", "user", user, at)], at)
        events += ctx.events
        await om.finish_turn("res", "thr", [Message(f"a{i}", "assistant", assistant, at)], at)
        await om.wait_idle()
        if "activate" in ctx.events:
            break
    assert "activate" in events and "observe" not in events
    meta = om.storage.get_thread("thr")
    assert meta is not None and meta.current_task == "Primary: keep going"
