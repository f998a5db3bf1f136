import asyncio
from datetime import datetime, timedelta, timezone

from bench.render import token_count, token_ids
from bench.cachesim import make_simulator
from bench.cachesim.openai_cache import cacheable
from bench.ingest import question_call, replay_question
from bench.prompt import Prompt
from bench.records import CallRecord, collect_calls, issue_number, record_call
from bench.replay import build_timeline
from bench.strategies import make_strategy
from bench.strategies.base import TurnResult

from tests.helpers.strategies import chat, make_ctx, make_view

LONG = " ".join(f"w{i}" for i in range(1500))  # > 1024 tokens, so OpenAI caches it


class FakeStrategy:
    """Long fixed prefix + the user message; every second turn calls an 'observer' in the background."""

    name = "fake"

    def __init__(self):
        self.seen = []

    async def add_turn(self, turn):
        self.seen.append(turn.index)
        if turn.index % 2 == 1:
            record_call(CallRecord(role="observer", model="obs-model", prompt_tokens=10,
                                   messages=[{"role": "system", "content": LONG}, {"role": "user", "content": f"obs {turn.index}"}]))
            record_call(CallRecord(role="embedder", model="emb", prompt_tokens=3))  # no messages: not simulated
        if turn.user is None:
            return TurnResult(prompt=None, events=["observe"])
        p = Prompt()
        p.add("system", LONG, key="sys")
        p.add("user", turn.user, key=f"u{turn.index}")
        return TurnResult(prompt=p, events=["observe"] if turn.index % 2 else [])

    async def question_prompt(self, question, question_date, question_date_str):
        record_call(CallRecord(role="summarizer", model="sum", messages=[{"role": "user", "content": LONG}]))
        p = Prompt()
        p.add("system", LONG, key="sys")
        p.add("user", question, key="q")
        return p

    def state(self):
        return {"seen": list(self.seen)}

    def load_state(self, state):
        pass



async def test_rows_actor_records_and_background_calls():
    view = make_view([[("user", "a"), ("assistant", "b"), ("user", "c"), ("assistant", "d")], [("assistant", "hi"), ("user", "e")]])
    tl = build_timeline(view)
    sims = {"ideal": make_simulator("ideal"), "openai": make_simulator("openai")}
    fake = FakeStrategy()
    with collect_calls() as outer:
        out = await replay_question(fake, tl, sims, actor_model="gpt-4o", think_time_s=2.0)
    assert outer == []  # the replay collects its own calls and returns them
    assert [r["turn"] for r in out.turns] == [0, 1, 2, 3]
    assert out.turns[2]["prompt_tokens"] == 0 and out.turns[2]["cache"] == {} and out.turns[2]["events"] == ["observe"]
    r0, r1 = out.turns[0], out.turns[1]
    assert r0["sim_time"] == (tl[0].user_at + timedelta(seconds=2)).isoformat()
    assert r0["cache"]["openai"]["cached"] == 0
    prefix = len(token_ids(Prompt([*_prefix_segments()])))
    assert r1["cache"]["ideal"]["cached"] >= prefix
    assert r1["cache"]["openai"]["cached"] == cacheable(r1["cache"]["ideal"]["cached"])
    assert r1["cache"]["openai"]["prefill"] == r1["prompt_tokens"] - r1["cache"]["openai"]["cached"]
    actors = [c for c in out.calls if c.role == "actor"]
    assert len(actors) == 3 and all(c.simulated and c.model == "gpt-4o" for c in actors)
    assert actors[1].cache == r1["cache"] and actors[1].prompt_tokens == r1["prompt_tokens"]
    obs = [c for c in out.calls if c.role == "observer"]
    assert len(obs) == 2 and obs[0].messages is None  # simulated, then dropped
    assert obs[0].cache["openai"]["cached"] == 0 and obs[1].cache["openai"]["cached"] == 0  # 1 day apart: expired
    assert obs[1].cache["ideal"]["cached"] > 1024  # its own stream: the system prompt it repeats
    assert obs[0].sim_time == max(tl[1].assistant_at, tl[1].user_at + timedelta(seconds=2))
    emb = [c for c in out.calls if c.role == "embedder"]
    assert len(emb) == 2 and emb[0].cache == {}
    # order: each turn's actor record, then the background calls of that turn
    assert [c.role for c in out.calls][:4] == ["actor", "actor", "observer", "embedder"]
    assert fake.state() == {"seen": [0, 1, 2, 3]}


def _prefix_segments():
    p = Prompt()
    p.add("system", LONG, key="sys")
    return p.segments


async def test_question_call_simulates_background_then_the_answering_prompt():
    sims = {"openai": make_simulator("openai")}
    t = datetime(2023, 6, 1, tzinfo=timezone.utc)
    with collect_calls() as outer:
        p, cache, late = await question_call(FakeStrategy(), "why?", t, "2023/06/01 (Thu) 00:00", sims, "gpt-4o", t)
    assert outer == []  # returned, not left in the caller's collector
    assert p.segments[-1].text == "why?"
    assert cache["openai"]["cached"] == 0 and cache["openai"]["prefill"] == token_count(p)
    assert [c.role for c in late] == ["summarizer"] and late[0].cache["openai"]["prefill"] > 1024
    assert late[0].sim_time == t and late[0].messages is None


async def test_full_context_replay_hits_the_whole_previous_prompt_within_a_session():
    view = make_view([chat(8, "alpha", words=200)])
    sims = {p: make_simulator(p) for p in ("openai", "ideal", "anthropic")}
    s = make_strategy("full_context", {}, make_ctx())
    tl = build_timeline(view)
    out = await replay_question(s, tl, sims, actor_model="gpt-4o")
    rows = out.turns
    for prev, cur in zip(rows, rows[1:]):
        assert cur["cache"]["ideal"]["cached"] >= prev["prompt_tokens"]
        if prev["prompt_tokens"] >= 1024:
            assert cur["cache"]["openai"]["cached"] == cacheable(prev["prompt_tokens"])
            # the breakpoint on the previous last message is found by the next prompt's lookback
            assert cur["cache"]["anthropic"]["cached"] == prev["prompt_tokens"]


class ConcurrentStrategy:
    """Each turn issues two background calls at once; the one issued first finishes last (like two Observer
    calls for two threads of a resource, the first one longer)."""

    name = "concurrent"

    async def add_turn(self, turn):
        async def call(i: int, delay: float) -> None:
            issued = issue_number()  # taken when the call starts, as the gateway does
            await asyncio.sleep(delay)
            record_call(CallRecord(role="observer", model="obs-model", issued=issued, prompt_tokens=i,
                                   messages=[{"role": "system", "content": LONG}, {"role": "user", "content": f"{i}"}]))

        await asyncio.gather(call(1, 0.05), call(2, 0.0))
        p = Prompt()
        p.add("user", turn.user or "", key=f"u{turn.index}")
        return TurnResult(prompt=p, events=[])


async def test_concurrent_background_calls_are_simulated_in_issue_order_not_finish_order():
    view = make_view([[("user", "a"), ("assistant", "b")]])
    sims = {"openai": make_simulator("openai")}
    out = await replay_question(ConcurrentStrategy(), build_timeline(view), sims, actor_model="gpt-4o")
    obs = [c for c in out.calls if c.role == "observer"]
    assert [c.prompt_tokens for c in obs] == [1, 2]  # call 2 finished first
    # so the first-issued call pays the shared system prompt and the second hits it, on every run
    assert obs[0].cache["openai"]["cached"] == 0 and obs[1].cache["openai"]["cached"] > 1024


async def test_gateway_calls_carry_rising_issue_numbers():
    from bench.perf import offline_gateway

    gateway = offline_gateway()
    msgs = [{"role": "user", "content": "Observe: I moved to Lisbon in May."}]
    with collect_calls() as calls:
        await asyncio.gather(gateway.complete("observer", msgs), gateway.complete("reflector", msgs))
    assert [c.role for c in calls] == ["observer", "reflector"]
    assert 0 < calls[0].issued < calls[1].issued
