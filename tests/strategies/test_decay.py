"""decay (seed 004) as a strategy: forgetting over the replay, retrieval into the Actor prompt and its cache
behaviour, consolidation through the summarizer, evaluator calls and bad replies, the checkpoint and the key."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta

import pytest

from bench.render import token_count, prompt_units
from bench.cachesim import make_simulator
from bench.cachesim.openai_cache import cacheable
from bench.benchmarks.longmemeval.dates import format_lme_date
from bench.data.schema import InstanceView, ViewSession, ViewTurn
from bench.errors import ConfigError
from bench.ingest import replay_question
from bench.perf import offline_gateway
from bench.replay import build_timeline
from bench.roles import Role
from bench.strategies import ReplaySettings, StrategyContext, make_strategy, resolve_strategy
from bench.strategies.decay import CONSOLIDATE_SYSTEM, MEMORY_HEADER, DecayParams
from bench.strategies.decay_evaluator import EVALUATOR_SYSTEM, items_from_request, rule_scores
from om_core.tokens import default_counter

from tests.helpers.encode_spy import EncodeSpy
from tests.helpers.strategies import ScriptedModel, chat, is_prefix, make_ctx, make_view, s_dataset

VOLATILE = "The weather is lovely today and I am temporarily staying at a hostel right now."
IMPORTANT = "My name is Dana, I am allergic to peanuts and I always prefer green tea."


def scripted_evaluator(scores=lambda i, source, text: (0.5, 0.5, [])):
    """An evaluator model answering valid JSON from the request it was sent."""

    def reply(messages):
        assert messages[0]["content"] == EVALUATOR_SYSTEM
        out = []
        for i, source, text in items_from_request(messages[-1]["content"]):
            imp, vol, ents = scores(i, source, text)
            out.append({"id": i, "importance": imp, "volatility": vol, "entities": ents})
        return json.dumps({"memories": out})

    return ScriptedModel("evaluator", reply)


def decay(params=None, *, evaluator=None, summarizer=None, **ctx):
    models = {"evaluator": evaluator or scripted_evaluator(), "summarizer": summarizer or ScriptedModel("summarizer")}
    return make_strategy("decay", params or {}, make_ctx(models=models, **ctx))


async def replay(strategy, view):
    return [await strategy.add_turn(t) for t in build_timeline(view)]


def retrieved(prompt):
    return [s.key for s in prompt.segments if s.key.startswith("decay:item:")]


async def test_a_bad_reply_falls_back_to_the_rules_with_one_recorded_line():
    view = make_view([[("user", IMPORTANT), ("assistant", "Noted, Dana.")]])
    bad = ScriptedModel("evaluator", lambda msgs: '```json\n{"memories": [{"id": 0, "importance": 0.05, "volati')
    s = decay({"remember_assistant": True}, evaluator=bad)
    await replay(s, view)
    await s.question_prompt("tea?", view.question_date, view.question_date_str)
    st = s.state()
    assert st["stats"]["fallbacks"] == 1 and len(st["evaluator_failures"]) == 1
    line = st["evaluator_failures"][0]
    assert "\n" not in line and "rule-based scores used for 2 of 2" in line
    want = rule_scores(IMPORTANT, "user")
    assert st["items"][0]["importance"] == want.importance and st["items"][0]["volatility"] == want.volatility

    half = ScriptedModel("evaluator", lambda msgs: '[{"id": 0, "importance": 0.05, "volatility": 0.9}]')
    s = decay(evaluator=half)
    results = await replay(s, make_view([[("user", IMPORTANT), ("assistant", "Noted, Dana.")], chat(1, "x")]))
    assert "evaluate_fallback" in results[1].events
    items = {d["id"]: d for d in s.state()["items"]}
    assert items[0]["importance"] == 0.05  # the score the reply gave is kept
    assert items[1]["importance"] == rule_scores("Noted, Dana.", "assistant").importance  # the missing one: rules


# ---- the strategy ---------------------------------------------------------------------------------------

async def test_a_volatile_unimportant_item_is_forgotten_before_an_important_one():
    # day 0: both said; then unrelated sessions (nothing retrieves either item, so no access boosts them)
    days = [0, 10, 20, 30, 40, 44, 48, 56]
    sessions = [[("user", VOLATILE), ("assistant", "ok"), ("user", IMPORTANT), ("assistant", "ok")]]
    sessions += [[("user", f"filler{d} words{d} here{d}"), ("assistant", f"reply{d}")] for d in days[1:]]
    start = datetime(2023, 5, 1, 10, 0)
    sess = [ViewSession(f"s{k}", start + timedelta(days=d), format_lme_date(start + timedelta(days=d)),
                        tuple(ViewTurn(r, c) for r, c in turns)) for k, (d, turns) in enumerate(zip(days, sessions))]
    qd = start + timedelta(days=60)
    view = InstanceView("q", qd, format_lme_date(qd), tuple(sess))
    s = decay({"evaluator": "rules", "remember_assistant": False, "consolidate_every": 0})
    present = {}
    for t in build_timeline(view):
        await s.add_turn(t)
        if t.first_in_session:
            texts = {d["content"] for d in s.state()["items"]}
            present[(t.session_date - start).days] = (VOLATILE in texts, IMPORTANT in texts)
    assert present[40] == (True, True)
    assert present[44] == (False, True)  # the volatile one fell below the threshold first
    assert present[56] == (False, False)  # and, never used, the important one follows


async def test_retrieval_updates_accesses_and_keeps_the_window_out():
    view = make_view([chat(2, "kayak"), chat(3, "violin")])
    s = decay({"evaluator": "rules", "recent_turns": 1, "consolidate_every": 0})
    tl = build_timeline(view)
    results = [await s.add_turn(t) for t in tl]
    q = await s.question_prompt("kayak0 kayak1", view.question_date, view.question_date_str)
    msgs = q.to_messages()
    assert msgs[1]["role"] == "system" and msgs[1]["content"].startswith(MEMORY_HEADER)
    assert "kayak question 0" in msgs[1]["content"] and "[2023/05/01 (Mon) 10:00] user:" in msgs[1]["content"]
    items = {d["id"]: d for d in s.state()["items"]}
    shown = [int(k.rsplit(":", 1)[1]) for k in retrieved(q)]
    assert shown and all(items[i]["access_count"] >= 1 for i in shown)
    assert all(items[i]["last_accessed_at"] == s.now.isoformat() for i in shown)
    assert all(d["access_count"] == 0 for i, d in items.items() if "violin" in d["content"])
    # a round shown raw in the window is never retrieved too
    last = results[-1].prompt
    window_turn = tl[-2].index
    assert all(items[int(k.rsplit(":", 1)[1])]["turn"] != window_turn for k in retrieved(last))


async def test_retrieved_items_change_the_prompt_and_the_cache_misses_from_there():
    view = make_view([chat(3, "kayak"), [("user", "kayak0 again"), ("assistant", "a"), ("user", "kayak0 more"),
                                         ("assistant", "b"), ("user", "violin please"), ("assistant", "c")]],
                     gap_days=2)
    s = decay({"evaluator": "rules", "top_k": 2, "consolidate_every": 0}, system_prompt="You help. " * 600)
    r1, r2, r3 = (await replay(s, view))[3:]
    assert "retrieve" in r1.events and retrieved(r1.prompt)
    assert retrieved(r1.prompt) == retrieved(r2.prompt) and "retrieve" not in r2.events
    assert is_prefix(r1.prompt, r2.prompt)  # same retrieval: the prompt only grows
    assert "retrieve" in r3.events and retrieved(r3.prompt) != retrieved(r2.prompt)
    # with the simulators: r2 is served all of r1; r3 only up to the memory block that changed
    for profile in ("ideal", "openai"):
        sim = make_simulator(profile)
        sim.observe(0.0, r1.prompt, model="gpt-4o")
        whole = sim.observe(10.0, r2.prompt, model="gpt-4o").cached_tokens
        cut = sim.observe(20.0, r3.prompt, model="gpt-4o").cached_tokens
        first = next(i for i, (x, y) in enumerate(zip(r2.prompt.segments, r3.prompt.segments)) if x != y)
        assert r2.prompt.segments[first].key.startswith("decay:")
        served = (lambda n: n) if profile == "ideal" else cacheable  # openai: the 1024 + 128k rule
        assert whole == served(token_count(r1.prompt)) > 0
        assert served(_tokens_before(r3.prompt, first)) <= cut <= served(_tokens_before(r3.prompt, first + 1))
        assert cut < whole


async def test_consolidation_merges_related_items_through_the_summarizer():
    sessions = [[("user", f"My dog, Biscuit, did trick {k} today."), ("assistant", f"Nice trick {k}!")] for k in range(4)]
    view = make_view(sessions)
    summarizer = ScriptedModel("summarizer", lambda msgs: "Biscuit the dog learned tricks 0 to 2.")
    s = decay({"evaluator": "rules", "consolidate_every": 3, "consolidate_group_size": 3,
               "consolidate_max_groups": 1}, summarizer=summarizer)
    results = await replay(s, view)
    assert [r.events.count("consolidate") for r in results] == [0, 0, 0, 1]  # at the start of session 4
    (request,) = summarizer.calls
    assert request[0]["content"] == CONSOLIDATE_SYSTEM and request[1]["content"].count(" the user said: ") == 3
    items = s.state()["items"]
    merged = [d for d in items if d["source"] == "consolidated"]
    assert len(merged) == 1 and merged[0]["content"] == "Biscuit the dog learned tricks 0 to 2."
    assert not {d["id"] for d in items} & set(merged[0]["merged"])  # the originals are gone
    q = await s.question_prompt("what did Biscuit learn?", view.question_date, view.question_date_str)
    assert "consolidated memory: Biscuit the dog learned" in q.text

    empty = ScriptedModel("summarizer", lambda msgs: "  ")
    s = decay({"evaluator": "rules", "consolidate_every": 3, "consolidate_group_size": 3}, summarizer=empty)
    await replay(s, view)
    assert empty.calls and not any(d["source"] == "consolidated" for d in s.state()["items"])  # kept as they were


async def test_model_evaluator_scores_are_used_and_every_call_is_recorded():
    view = make_view([chat(5, "kayak"), chat(2, "violin")])
    ev = scripted_evaluator(lambda i, source, text: (0.9 if source == "user" else 0.2, 0.1, ["kayak"]))
    s = decay({"evaluate_every": 2, "consolidate_every": 0}, evaluator=ev)
    results = await replay(s, view)
    # every 2 rounds, and the first session's odd last round when the next session starts
    assert [("evaluate" in r.events) for r in results] == [False, True, False, True, False, True, True]
    await s.question_prompt("q", view.question_date, view.question_date_str)
    assert len(ev.calls) == 4  # nothing was left to score at question time
    items = s.state()["items"]
    assert len(items) == 14 and {d["importance"] for d in items if d["source"] == "user"} == {0.9}


async def test_state_round_trip_then_both_continue_alike():
    first = make_view([chat(3, "kayak"), chat(3, "violin")])
    tl = build_timeline(make_view([chat(3, "kayak"), chat(3, "violin"), chat(2, "kayak")]))
    a = decay({"consolidate_every": 1, "consolidate_group_size": 2})
    for t in tl[:6]:
        await a.add_turn(t)
    b = decay({"consolidate_every": 1, "consolidate_group_size": 2})
    b.load_state(json.loads(json.dumps(a.state())))
    assert b.state() == a.state()
    for t in tl[6:]:
        ra, rb = await a.add_turn(t), await b.add_turn(t)
        assert ra.prompt.segments == rb.prompt.segments and ra.events == rb.events
    qa = await a.question_prompt("kayak1", first.question_date, first.question_date_str)
    qb = await b.question_prompt("kayak1", first.question_date, first.question_date_str)
    assert qa.segments == qb.segments and retrieved(qa)
    assert a.state() == b.state()


def test_key_params_are_resolved_and_roles_follow_the_params():
    settings = ReplaySettings()
    base = resolve_strategy("decay", {}, settings)
    spelled = {f: getattr(base.params, f) for f in DecayParams.__dataclass_fields__}
    assert resolve_strategy("decay", spelled, settings).key_params() == base.key_params()
    assert resolve_strategy("decay", {"max_age_days": None, "decay_factor": 0.95}, settings).key_params() == \
        base.key_params()
    assert resolve_strategy("decay", {"max_age_days": 30}, settings).key_params() == \
        resolve_strategy("decay", {"max_age_days": 30.0}, settings).key_params() != base.key_params()
    assert base.roles == {Role.EVALUATOR, Role.SUMMARIZER}
    assert resolve_strategy("decay", {"evaluator": "rules", "consolidate_every": 0}, settings).roles == frozenset()


@pytest.mark.parametrize("params,knob", [({"decay_factor": 1.5}, "decay_factor"), ({"evaluate_every": 0}, "evaluate_every"),
                                         ({"consolidate_group_size": 1}, "consolidate_group_size"),
                                         ({"evaluator": "llm"}, "evaluator"), ({"top_k": 0}, "top_k")])
def test_bad_knobs_are_one_line_errors(params, knob):
    with pytest.raises(ConfigError, match=f"strategies.decay.params.{knob}") as err:
        decay(params)
    assert "\n" not in str(err.value)


async def test_replay_driver_records_evaluator_calls_as_background_calls():
    view = make_view([chat(5, "kayak"), chat(1, "violin")])
    s = decay({"consolidate_every": 0})
    out = await replay_question(s, build_timeline(view), {"openai": make_simulator("openai")}, actor_model="gpt-4o")
    bg = [c for c in out.calls if not c.simulated]
    assert [c.role for c in bg] == ["evaluator", "evaluator"] and all(c.cache for c in bg)
    assert "evaluate" in out.turns[3]["events"] and "evaluate" in out.turns[5]["events"]
    assert [c.sim_time for c in bg] == [build_timeline(view)[k].assistant_at for k in (3, 5)]

def _tokens_before(prompt, s):
    """Tokens of the rendering before segment s (its message header included when s opens a message)."""
    n = 0
    units = prompt_units(prompt)
    for i, u in enumerate(units):
        if u.block == s or (u.block == -1 and i + 1 < len(units) and units[i + 1].block == s):
            return n
        n += len(u.ids)
    return n


@pytest.mark.realdata
@pytest.mark.slow  # loads LongMemEval_S, replays a whole haystack
async def test_on_a_real_haystack_the_prompt_misses_from_the_first_changed_item():
    """LongMemEval_S question 0 with the offline engine (rule-based, not an LLM) in the evaluator and summariser
    roles: every change of retrieval misses the openai cache from the first item that changed, no earlier."""
    inst = s_dataset().instances[0]
    gw = offline_gateway()
    ctx = StrategyContext(
        models={r: gw.model(r) for r in ("evaluator", "summarizer")}, embed=None, counter=default_counter(),
        actor_model="gpt-4o", max_input_tokens=128000, output_budget=800, system_prompt="You are a helpful assistant.",
        resource_id="r-" + hashlib.blake2b(inst.question.encode(), digest_size=6).hexdigest(),
    )
    s = make_strategy("decay", {}, ctx)
    tl = build_timeline(inst.view())
    prompts = []
    for t in tl:
        prompts.append((await s.add_turn(t)))
    events = [e for r in prompts for e in r.events]
    assert {"evaluate", "retrieve", "consolidate"} <= set(events)
    changed = 0
    for k in range(1, len(tl)):
        a, b = prompts[k - 1], prompts[k]
        if tl[k].first_in_session or a.prompt is None or b.prompt is None or "retrieve" not in b.events:
            continue
        first = next(i for i, (x, y) in enumerate(zip(a.prompt.segments, b.prompt.segments)) if x != y)
        assert b.prompt.segments[first].key.startswith("decay:") or a.prompt.segments[first].key.startswith("decay:")
        sim = make_simulator("openai")
        sim.observe(0.0, a.prompt, model="gpt-4o")
        pair = sim.observe(10.0, b.prompt, model="gpt-4o").cached_tokens
        assert cacheable(_tokens_before(b.prompt, first)) <= pair <= cacheable(_tokens_before(b.prompt, first + 1))
        changed += 1
    assert changed > 50
    st = s.state()
    assert st["stats"]["consolidations"] > 0 and st["stats"]["evaluator_calls"] > 0 and not st["evaluator_failures"]


async def test_the_evaluator_request_finds_a_messages_lines_already_tokenised():
    """decay counts each message by line pieces, so counting the evaluator's request the way the offline engine
    does (line pieces) tokenises a message's lines again only for its last one (issue 30)."""
    import dataclasses

    from bench.strategies.decay_evaluator import evaluator_request
    from om_core.tokens import TokenCounter

    lines = [f"Step {k}: water the zq{k}plant twice" for k in range(6)]
    answer = "\n".join(lines)
    counter = TokenCounter()
    spy = counter._enc = EncodeSpy(counter._enc)
    models = {"evaluator": scripted_evaluator(), "summarizer": ScriptedModel("summarizer")}
    s = make_strategy("decay", {"remember_assistant": True, "evaluate_every": 100},
                      dataclasses.replace(make_ctx(models=models), counter=counter))
    await replay(s, make_view([[("user", "How do I care for it?"), ("assistant", answer)]]))
    request = evaluator_request([(0, "assistant", "1 May 2023", answer)])[-1]["content"]
    spy.texts.clear()
    assert len(counter.encode_by_lines(request)) == len(counter._enc.enc.encode(request))
    again = [t for t in spy.texts if "plant" in t]
    assert again == [lines[-1] + "\n"], again
