"""Knobs and prompt details that must reach the models as Mastra sends them (reflection.instruction, per-thread
prior metadata, the 'default' model alias), and the two additions beyond Mastra (finalize, the stable-prefix
context layout). Public API with the scripted models."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from om_core import ConfigError, InMemoryStorage, Message, ObservationalMemory, OMConfig
from om_core.context import memory_prefix, prefix_stability
from om_core.reflector import CUSTOM_INSTRUCTIONS_HEADING, compression_level_in_prompt
from om_core.testing import ScriptedObserver, ScriptedReflector, synthetic_turns

T0 = datetime(2026, 3, 3, 9, 0, tzinfo=timezone.utc)


async def converse(om, n, *, threads=("t",), words=120, start=T0, first=0, gap=2):
    """n user+assistant turns, threads taken round-robin; returns each turn's context and events."""
    out = []
    for i, (at, user, assistant) in enumerate(synthetic_turns(n, words=words, start=start, turns_per_day=1000,
                                                               minutes_between=gap, seed=first + 5)):
        k, tid = first + i, threads[i % len(threads)]
        ctx = await om.prepare_turn("r", tid, [Message(f"u{k}", "user", user, at)], at)
        done = at + timedelta(seconds=20)
        ctx.events += await om.finish_turn("r", tid, [Message(f"a{k}", "assistant", assistant, done)], done)
        await om.wait_idle()
        out.append(ctx)
    return out


# ---- item 5: reflection.instruction ------------------------------------------------------------------------

@pytest.mark.parametrize("profile,buffering", [("m11", False), ("m31", False), ("m31", True)])
async def test_reflection_instruction_reaches_the_reflector_system_prompt(profile, buffering):
    obs = {"message_tokens": 1000} if profile == "m11" or buffering else {"message_tokens": 1000, "buffer_tokens": False}
    cfg = OMConfig.from_dict({"profile": profile, "observation": obs,
                              "reflection": {"observation_tokens": 400, "instruction": "Keep every pet name verbatim."}})
    refl = ScriptedReflector()
    om = ObservationalMemory(cfg, InMemoryStorage(), ScriptedObserver(), refl)
    await converse(om, 10)
    assert refl.calls
    for call in refl.calls:
        system = call["messages"][0]["content"]
        assert system.endswith(f"{CUSTOM_INSTRUCTIONS_HEADING}\nKeep every pet name verbatim.")
    no_instruction = OMConfig.from_dict({"profile": profile, "observation": obs, "reflection": {"observation_tokens": 400}})
    refl = ScriptedReflector()
    await converse(ObservationalMemory(no_instruction, InMemoryStorage(), ScriptedObserver(), refl), 10)
    assert refl.calls and CUSTOM_INSTRUCTIONS_HEADING not in refl.calls[0]["messages"][0]["content"]


# ---- item 7: per-thread prior metadata in multi-thread batches -------------------------------------------------

async def test_multi_thread_batches_carry_each_threads_prior_metadata():
    cfg = OMConfig.from_dict({"scope": "resource", "observation": {"message_tokens": 1500, "max_tokens_per_batch": 50_000}})
    obs = ScriptedObserver()
    om = ObservationalMemory(cfg, InMemoryStorage(), obs, ScriptedReflector())
    await converse(om, 24, threads=("t1", "t2"), words=80)
    multi = [c for c in obs.calls if '<thread id="t1">' in c["messages"][-1]["content"]
             and '<thread id="t2">' in c["messages"][-1]["content"]]
    assert len(multi) >= 2, "expected two multi-thread observations"
    assert "## Prior Thread Metadata" not in multi[0]["messages"][1]["content"]  # nothing known yet
    task = multi[1]["messages"][1]["content"]  # the task message (m31: before the history message)
    section = task[task.index("## Prior Thread Metadata"):]
    for tid in ("t1", "t2"):
        assert f"Thread {tid}:\n- Current task: Primary: continue the conversation" in section


# ---- item 8: the 'default' model alias ---------------------------------------------------------------------

def test_default_alias_resolves_to_gemini_flash():
    assert OMConfig(model="default").observer_model == "google/gemini-2.5-flash"
    assert OMConfig(model="default").reflector_model == "google/gemini-2.5-flash"
    cfg = OMConfig.from_dict({"observation": {"model": "openai/gpt-4o-mini"}, "reflection": {"model": "default"}})
    assert cfg.observer_model == "openai/gpt-4o-mini" and cfg.reflector_model == "google/gemini-2.5-flash"
    with pytest.raises(ConfigError, match="model"):
        OMConfig.from_dict({"model": "default", "reflection": {"model": "default"}})


@pytest.mark.parametrize("model,level", [("default", 2), ("openai/gpt-4o-mini", 1)])
async def test_default_alias_starts_the_reflector_ladder_at_level_2(model, level):
    cfg = OMConfig.from_dict({"model": model, "observation": {"message_tokens": 1000, "buffer_tokens": False},
                              "reflection": {"observation_tokens": 400}})
    refl = ScriptedReflector()
    await converse(ObservationalMemory(cfg, InMemoryStorage(), ScriptedObserver(), refl), 8)
    assert refl.calls
    assert compression_level_in_prompt(refl.calls[0]["messages"][1]["content"]) == level


# ---- finalize ----------------------------------------------------------------------------------------------

async def test_finalize_observes_everything_left_in_thread_scope():
    cfg = OMConfig.from_dict({"observation": {"message_tokens": 3000}})  # buffering every 600 tokens
    om = ObservationalMemory(cfg, InMemoryStorage(), ScriptedObserver(), ScriptedReflector())
    await converse(om, 5)
    rec = om.record("r", "t")
    assert rec.buffered_observation_chunks and not rec.active_observations  # below the threshold
    events = await om.finalize("r", "t", T0 + timedelta(hours=1))
    assert "activate" in events and "observe" in events
    ctx = await om.context("r", "t", T0 + timedelta(hours=1))
    assert ctx.pending_tokens == 0 and not [m for m in ctx.messages if m.key.startswith("msg:")]
    assert all(f"mid{k:05d}" in om.record("r", "t").active_observations for k in range(10))
    assert await om.finalize("r", "t", T0 + timedelta(hours=2)) == []  # nothing left: no model call


@pytest.mark.parametrize("profile", ["m11", "m31"])
async def test_finalize_observes_every_thread_of_a_resource(profile):
    cfg = OMConfig.from_dict({"profile": profile, "scope": "resource", "observation": {"message_tokens": 30_000}})
    obs = ScriptedObserver()
    om = ObservationalMemory(cfg, InMemoryStorage(), obs, ScriptedReflector())
    await converse(om, 6, threads=("s1", "s2", "s3"), words=60)
    assert not obs.calls
    empty = await om.context("r", "question", T0 + timedelta(days=1))
    assert memory_prefix(empty.messages) == ""  # resource scope, nothing observed: nothing injected
    assert "observe" in await om.finalize("r", "question", T0 + timedelta(days=1))
    ctx = await om.context("r", "question", T0 + timedelta(days=1))
    assert memory_prefix(ctx.messages) and ctx.pending_tokens == 0
    assert all(om.storage.get_thread(t).last_observed_at for t in ("s1", "s2", "s3"))


# ---- item 14: the stable-prefix layout ---------------------------------------------------------------------

async def test_stable_prefix_layout_keeps_the_observations_a_prefix_while_threads_interleave():
    shares = {}
    for layout in ("mastra", "stable_prefix"):
        cfg = OMConfig.from_dict({"scope": "resource", "context_layout": layout, "observation": {"message_tokens": 1200}})
        om = ObservationalMemory(cfg, InMemoryStorage(), ScriptedObserver(), ScriptedReflector())
        ctxs = await converse(om, 36, threads=("t1", "t2", "t3"), words=60)
        keys = [m.key for m in ctxs[-1].messages]
        assert "om:other" in keys and "om:chunk:0" in keys
        assert (keys.index("om:other") < keys.index("om:chunk:0")) == (layout == "mastra")
        kept, pairs = prefix_stability([c.messages for c in ctxs])
        assert pairs >= 15
        shares[layout] = kept / pairs
    assert shares["stable_prefix"] >= 0.8 > 0.3 >= shares["mastra"], shares


def test_context_layout_is_validated():
    with pytest.raises(ConfigError, match="context_layout"):
        OMConfig(context_layout="cache")  # type: ignore[arg-type]
