import json
from datetime import datetime, timedelta, timezone

import pytest

from bench.render import token_count
from bench.cachesim import make_simulator
from bench.errors import ConfigError
from bench.ingest import question_call, replay_question
from bench.replay import build_timeline
from bench.strategies import make_strategy
from om_core.scopes import obscure_thread_id

from tests.helpers.strategies import chat, is_prefix, make_ctx, make_view, offline_models

SMALL = {"message_tokens": 1500, "observation_tokens": 3000}


def om(params=None, **ctx_kw):
    return make_strategy("om", {**SMALL, **(params or {})}, make_ctx(models=offline_models(), **ctx_kw))


def view5():
    return make_view([chat(6, f"topic{i}", words=40) for i in range(5)])


async def replay(s, view):
    return [await s.add_turn(t) for t in build_timeline(view)]


@pytest.mark.parametrize("profile", ["m11", "m31"])
async def test_turn_prompts_threads_ids_and_events(profile):
    s = om({"profile": profile})
    view = view5()
    tl = build_timeline(view)
    results = [await s.add_turn(t) for t in tl]
    # the prompt: system prompt, then the engine's context, the new user message last
    p = results[9].prompt
    assert p.segments[0].role == "system" and p.segments[0].text == "You are a helpful assistant."
    assert p.segments[-1].role == "user" and p.segments[-1].text == tl[9].user
    assert p.segments[-1].key == f"msg:{tl[9].thread_id}-{2 * 3}"  # the 4th user message of its session
    # one thread per session, message ids "<thread>-<k>", timestamps from the timeline
    msgs = s.storage.list_messages("r-test", "s1")
    assert [m.id for m in msgs[:2]] == ["s1-0", "s1-1"]
    assert msgs[0].created_at == tl[6].user_at and msgs[1].created_at == tl[6].assistant_at
    events = [e for r in results for e in r.events]
    assert "observe" in events and "reflect" in events
    obs = [i for i, r in enumerate(results) if "observe" in r.events]
    # the observation shows up in the next prompt as memory
    after = results[obs[0] + 1].prompt
    assert any(seg.key.startswith("om:") and "topic0" in seg.text for seg in after.segments)


async def test_prompts_are_append_only_between_memory_events_within_a_session():
    s = om({"profile": "m11"})
    view = view5()
    tl = build_timeline(view)
    results = [await s.add_turn(t) for t in tl]
    checked = 0
    for k in range(1, len(tl)):
        a, b = results[k - 1], results[k]
        if tl[k].session_index != tl[k - 1].session_index or a.events or b.events:
            continue
        assert is_prefix(a.prompt, b.prompt), k
        checked += 1
    assert checked >= 15


async def test_question_prompt_dates_relative_to_the_question_date_and_thread_ids_obscured():
    s = om({"profile": "m31"})
    view = view5()
    await replay(s, view)
    q = await s.question_prompt("Which topics?", view.question_date, view.question_date_str)
    text = q.text
    assert q.segments[-1].text == f"Current Date: {view.question_date_str}\nQuestion: Which topics?"
    assert "Date: May 1, 2023 (5 days ago)" in text  # question on May 6, 2023: not the wall clock
    assert 'id="s0"' not in text and obscure_thread_id("s0") in text
    # read-only: rendering twice gives the same prompt and writes nothing
    q2 = await s.question_prompt("Which topics?", view.question_date, view.question_date_str)
    assert q2.segments == q.segments


async def test_state_round_trip():
    s = om({"profile": "m11"})
    view = view5()
    await replay(s, view)
    st = json.loads(json.dumps(s.state()))
    s2 = om({"profile": "m11"})
    s2.load_state(st)
    a = await s.question_prompt("q?", view.question_date, view.question_date_str)
    b = await s2.question_prompt("q?", view.question_date, view.question_date_str)
    assert a.segments == b.segments


async def test_replay_through_the_driver_simulates_observer_calls():
    s = om({"profile": "m11"})
    view = view5()
    sims = {"openai": make_simulator("openai")}
    out = await replay_question(s, build_timeline(view), sims, actor_model="gpt-4o")
    roles = {c.role for c in out.calls}
    assert {"actor", "observer", "reflector"} <= roles
    obs = [c for c in out.calls if c.role == "observer"]
    assert all(c.cache["openai"]["prefill"] > 0 and c.sim_time is not None for c in obs)
    t = datetime(2023, 5, 6, 10, 0, tzinfo=timezone.utc)
    p, cache, _ = await question_call(s, view.question, view.question_date, view.question_date_str, sims, "gpt-4o", t)
    assert cache["openai"]["prefill"] == token_count(p) - cache["openai"]["cached"]


def test_bad_om_params_are_config_errors():
    with pytest.raises(ConfigError, match="strategies.om.params"):
        om({"observation": {"no_such_knob": 1}})
    with pytest.raises(ConfigError, match="profile"):
        om({"profile": "m20"})
    with pytest.raises(ConfigError, match="message_tokens"):
        om({"message_tokens": "many"})


def test_reflector_start_level_follows_the_gateway_model() -> None:
    from bench.strategies.om import OMParams, om_config_dict
    from om_core.config import OMConfig
    from om_core.reflector import compression_start_level

    gem = OMConfig.from_dict(om_config_dict(OMParams(), "gpt-4o", "gemini/gemini-2.5-flash", "gemini/gemini-2.5-flash"))
    mini = OMConfig.from_dict(om_config_dict(OMParams(), "gpt-4o", "openai/gpt-4o-mini", "openai/gpt-4o-mini"))
    assert compression_start_level(gem.reflector_model) == 2
    assert compression_start_level(mini.reflector_model) == 1


# ---- finalize, the cache-friendly layout, engine events (om_core fidelity issue) ----------------------------


async def test_short_haystack_memory_is_empty_unless_finalize_observes_it():
    view = view5()  # ~3k tokens: far below Mastra's 30k threshold, as on LongMemEval's oracle split
    plain = om({"message_tokens": 30000})
    await replay(plain, view)
    q = await plain.question_prompt("Which topics?", view.question_date, view.question_date_str)
    assert q.meta["memory_empty"] and q.meta["events"] == []
    assert not any(seg.key.startswith("om:chunk") for seg in q.segments)  # the Actor would see raw tails only
    done = om({"message_tokens": 30000, "finalize": True})
    await replay(done, view)
    q = await done.question_prompt("Which topics?", view.question_date, view.question_date_str)
    assert not q.meta["memory_empty"] and "observe" in q.meta["events"]
    chunks = [seg.text for seg in q.segments if seg.key.startswith("om:chunk")]
    assert chunks and all(f"topic{i}" in "".join(chunks) for i in range(5))
    assert "START_OTHER_CONVERSATIONS_BLOCK" not in q.text  # nothing left raw
    again = await done.question_prompt("Which topics?", view.question_date, view.question_date_str)
    assert again.meta["events"] == [] and again.segments == q.segments  # a repeated render observes nothing new


def interleaved_turns(n_threads: int = 3, rounds: int = 14, words: int = 40):
    """Turns of `n_threads` sessions taken round-robin (one user+assistant pair each), a minute apart."""
    from bench.replay import ReplayTurn

    start = datetime(2023, 5, 1, 10, 0, tzinfo=timezone.utc)
    sessions = [chat(rounds, f"topic{k}", words=words) for k in range(n_threads)]
    out = []
    for r in range(rounds):
        for k in range(n_threads):
            at = start + timedelta(minutes=len(out))
            (_, user), (_, assistant) = sessions[k][2 * r], sessions[k][2 * r + 1]
            out.append(ReplayTurn(len(out), k, f"s{k}", start, user, assistant, at, at + timedelta(seconds=5), r == 0))
    return out


@pytest.mark.parametrize("profile", ["m31"])
async def test_stable_prefix_layout_raises_the_simulated_cache_hit_rate_with_interleaved_threads(profile):
    rates = {}
    for layout in ("mastra", "stable_prefix"):
        s = om({"profile": profile, "message_tokens": 1200, "observation_tokens": 20000, "context_layout": layout})
        sim = make_simulator("openai")
        out = await replay_question(s, interleaved_turns(), {"openai": sim}, actor_model="gpt-4o")
        rows = [r for r in out.turns if r["prompt_tokens"]]
        assert sum("observe" in r["events"] for r in rows) >= 2
        rates[layout] = sum(r["cache"]["openai"]["cached"] for r in rows) / sum(r["prompt_tokens"] for r in rows)
    # Mastra's layout puts the OTHER-conversations block (which changes with every turn of another thread)
    # before the observations; after them, the observation log stays a cached prefix
    assert rates["stable_prefix"] > rates["mastra"] + 0.1, rates


async def test_engine_events_of_background_work_reach_the_turn_events():
    from om_core.llm import Completion

    class Looping:
        async def complete(self, messages, **params):
            return Completion("<observations>\n" + "\n".join(["* 🔴 (10:00) User repeats the same thing again"] * 80)
                              + "\n</observations>")

    models = {"observer": Looping(), "reflector": offline_models()["reflector"]}
    s = make_strategy("om", {**SMALL, "scope": "thread", "profile": "m31"}, make_ctx(models=models))
    results = await replay(s, view5())
    events = [e for r in results for e in r.events]
    assert "observation_rejected" in events and "observe" not in events  # buffered and sync calls both refused


@pytest.mark.parametrize("profile", ["m11", "m31"])
async def test_memory_and_raw_split_is_what_the_actor_prompt_held(profile):
    # issue 26: the split the context chart draws is read from the Actor's prompt, not from the resource's
    # unobserved tokens (before the first observation the Actor sees its own thread only)
    s = om({"profile": profile})
    results = await replay(s, view5())
    first_obs = next(i for i, r in enumerate(results) if "observe" in r.events)
    seen_other_threads = False
    for i, r in enumerate(results):
        if r.prompt is None:
            continue
        meta, total = r.prompt.meta, token_count(r.prompt)
        raw = sum(s.ctx.tokens(g.text) for g in r.prompt.segments if g.key.startswith("msg:") or g.key == "om:other")
        assert meta["raw_tokens"] == raw and meta["memory_tokens"] + meta["raw_tokens"] <= total, i
        if i < first_obs:
            assert meta["memory_tokens"] == 0
            if meta["pending_tokens"] > meta["raw_tokens"] + 100:
                seen_other_threads = True  # other sessions' unobserved messages: not in the prompt, not drawn
        elif i > first_obs:
            assert meta["memory_tokens"] > 0
    assert seen_other_threads
