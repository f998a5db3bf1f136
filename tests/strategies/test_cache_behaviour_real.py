"""Cache behaviour of each strategy on a real LongMemEval_S haystack, with the openai profile (1024 + 128k rule,
10 min idle TTL). Needs LONGMEMEVAL_DATA_DIR; S is loaded once per test session."""

from __future__ import annotations

import hashlib

import pytest

from bench.render import prompt_units
from bench.cachesim import make_simulator
from bench.cachesim.openai_cache import cacheable
from bench.ingest import replay_question
from bench.replay import build_timeline
from bench.strategies import StrategyContext, make_strategy
from om_core.tokens import default_counter

from tests.helpers.strategies import offline_models, s_dataset

pytestmark = [pytest.mark.realdata, pytest.mark.slow]  # loads LongMemEval_S, replays whole haystacks


class Tap:
    """Passes turns to a strategy and keeps the prompts it rendered."""

    def __init__(self, inner):
        self.inner, self.prompts = inner, []

    async def add_turn(self, turn):
        r = await self.inner.add_turn(turn)
        self.prompts.append(r.prompt)
        return r

    def __getattr__(self, name):
        return getattr(self.inner, name)


async def run(name, params, *, max_input_tokens=128000, question=0):
    inst = s_dataset().instances[question]
    ctx = StrategyContext(
        models=offline_models(), embed=None, counter=default_counter(), actor_model="gpt-4o",
        max_input_tokens=max_input_tokens, output_budget=800, system_prompt="You are a helpful assistant.",
        resource_id="r-" + hashlib.blake2b(inst.question.encode(), digest_size=6).hexdigest(),
    )
    tap = Tap(make_strategy(name, params, ctx))
    tl = build_timeline(inst.view())
    out = await replay_question(tap, tl, {"openai": make_simulator("openai")}, actor_model="gpt-4o")
    return tl, out.turns, tap.prompts


def user_pairs(tl, rows):
    """Consecutive user turns (a, b) of the same session."""
    idx = [k for k, r in enumerate(rows) if r["prompt_tokens"]]
    return [(a, b) for a, b in zip(idx, idx[1:]) if tl[a].session_index == tl[b].session_index]


def cached(row):
    return row["cache"]["openai"]["cached"]


async def test_om_prompt_finds_its_whole_previous_prompt_between_memory_events():
    tl, rows, _ = await run("om", {})
    events = [e for r in rows for e in r["events"]]
    assert "observe" in events  # the haystack passes the 30k threshold several times
    checked = 0
    for a, b in user_pairs(tl, rows):
        if any(rows[k]["events"] for k in range(a, b + 1)):
            continue  # a memory event between the two prompts
        assert cached(rows[b]) == cacheable(rows[a]["prompt_tokens"]), (a, b)
        checked += 1
    assert checked > 100


async def test_rag_misses_from_the_retrieved_block_onward_when_retrieval_changes():
    tl, rows, prompts = await run("rag", {})
    changed = 0
    for a, b in user_pairs(tl, rows):
        if "retrieve" not in rows[b]["events"]:
            continue
        pa, pb = prompts[a], prompts[b]
        s = next(i for i, (x, y) in enumerate(zip(pa.segments, pb.segments)) if x != y)
        assert pb.segments[s].key.startswith("rag:") or pa.segments[s].key.startswith("rag:")
        # the pair alone, on a fresh simulator: b hits a up to the first retrieved item that changed, no further
        sim = make_simulator("openai")
        sim.observe(0.0, pa, model="gpt-4o")
        pair = sim.observe(10.0, pb, model="gpt-4o").cached_tokens
        assert cacheable(_tokens_before(pb, s)) <= pair <= cacheable(_tokens_before(pb, s + 1))
        assert cached(rows[b]) >= pair  # in the replay, earlier live prompts can only add hits
        changed += 1
    assert changed > 100


async def test_full_context_hits_until_truncation_starts_then_misses():
    tl, rows, prompts = await run("full_context", {}, max_input_tokens=64000)
    first_cut = next(k for k, r in enumerate(rows) if "truncate" in r["events"])
    hits = misses = 0
    for a, b in user_pairs(tl, rows):
        if b < first_cut:
            assert not prompts[b].meta["truncated"]
            assert cached(rows[b]) == cacheable(rows[a]["prompt_tokens"])  # the whole previous prompt
            hits += 1
        elif "truncate" in rows[b]["events"] and prompts[b].meta.get("dropped_sessions") != prompts[a].meta.get("dropped_sessions"):
            assert cached(rows[b]) == 0  # the oldest session left: the history changes right after the instruction
            misses += 1
    assert hits > 100 and misses >= 5


def _tokens_before(prompt, s):
    """Tokens of the rendering before segment s (its message header included when s opens a message)."""
    n = 0
    units = prompt_units(prompt)
    for i, u in enumerate(units):
        if u.block == s or (u.block == -1 and i + 1 < len(units) and units[i + 1].block == s):
            return n
        n += len(u.ids)
    return n
