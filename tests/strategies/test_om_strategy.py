import json
from datetime import datetime, timezone

import pytest

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
    assert cache["openai"]["prefill"] == p.token_count - cache["openai"]["cached"]


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
