"""The per-question replay driver: feed a timeline to a strategy as if it were a live agent, and measure every
prompt the Actor would have sent (and every background call memory made) against simulated provider caches.

Clock: the Actor prompt of a turn is observed at `user_at + think_time`; the background calls recorded while
the turn was processed (observer, reflector, summariser) at the later of that and `assistant_at`, each on its
own stream (its role), so the simulators' clocks never run backwards.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Callable, Mapping

from bench.cachesim.base import CacheSimulator
from bench.prompt import Prompt
from bench.records import CallRecord, current_calls
from bench.replay import ReplayTurn
from bench.strategies.base import Strategy

CacheByProfile = dict[str, dict[str, float]]


@dataclass
class ReplayOutcome:
    turns: list[dict[str, Any]]  # one row per timeline turn: turn, session, sim_time, prompt_tokens, events, cache
    calls: list[CallRecord]  # simulated Actor calls and the real background calls, in issue order
    strategy_state_fn: Callable[[], dict[str, Any]]  # the memory state after ingestion (for checkpoints)


def observe_all(sims: Mapping[str, CacheSimulator], t: datetime, prompt: Prompt, model: str, stream: str) -> CacheByProfile:
    out: CacheByProfile = {}
    for name, sim in sims.items():
        r = sim.observe(t, prompt, model=model, stream=stream)
        out[name] = {"cached": r.cached_tokens, "prefill": r.prefill_tokens, "write": r.write_tokens, "cost_usd": r.cost_usd}
    return out


def messages_prompt(messages: list[dict[str, Any]]) -> Prompt:
    """A background call's request as a Prompt: one segment per message, keyed by role and position."""
    p = Prompt()
    for i, m in enumerate(messages):
        role = str(m.get("role", "user"))
        content = m.get("content", "")
        p.add(role, content if isinstance(content, str) else str(content), key=f"{role}:{i}")
    return p


def simulate_background(
    recs: list[CallRecord], sims: Mapping[str, CacheSimulator], t: datetime, *, keep_messages: bool = False
) -> None:
    """Run recorded background calls through the simulators (in order) at replay time t (the gateway cannot
    know the replay clock), filling `cache` and `sim_time`."""
    for rec in recs:
        rec.sim_time = t
        if rec.messages:  # embeddings carry no chat messages: nothing a prefix cache would see
            rec.cache = observe_all(sims, t, messages_prompt(rec.messages), rec.model, rec.role)
        if not keep_messages:
            rec.messages = None  # prompts of background calls are large; the store never keeps them


def actor_record(prompt: Prompt, model: str, t: datetime, cache: CacheByProfile) -> CallRecord:
    return CallRecord(role="actor", model=model, prompt_tokens=prompt.token_count, sim_time=t, simulated=True, cache=cache)


async def replay_question(
    strategy: Strategy,
    timeline: list[ReplayTurn],
    sims: Mapping[str, CacheSimulator],
    *,
    actor_model: str,
    think_time_s: float = 0.0,
    keep_messages: bool = False,
) -> ReplayOutcome:
    think = timedelta(seconds=think_time_s)
    calls: list[CallRecord] = []
    turns: list[dict[str, Any]] = []
    token = current_calls.set(calls)  # the gateway appends every background call here
    try:
        for turn in timeline:
            start = len(calls)
            result = await strategy.add_turn(turn)
            background = calls[start:]
            del calls[start:]
            t_actor = turn.user_at + think
            row: dict[str, Any] = {
                "turn": turn.index,
                "session": turn.session_index,
                "sim_time": t_actor.isoformat(),
                "prompt_tokens": 0,
                "events": list(result.events),
                "cache": {},
            }
            if result.prompt is not None:
                cache = observe_all(sims, t_actor, result.prompt, actor_model, "actor")
                rec = actor_record(result.prompt, actor_model, t_actor, cache)
                row["prompt_tokens"] = rec.prompt_tokens
                row["cache"] = cache
                calls.append(rec)
            simulate_background(background, sims, max(turn.assistant_at, t_actor), keep_messages=keep_messages)
            calls.extend(background)
            turns.append(row)
    finally:
        current_calls.reset(token)
    return ReplayOutcome(turns=turns, calls=calls, strategy_state_fn=strategy.state)


async def question_call(
    strategy: Strategy,
    question: str,
    question_date: datetime,
    question_date_str: str,
    sims: Mapping[str, CacheSimulator],
    actor_model: str,
    t: datetime,
) -> tuple[Prompt, CacheByProfile]:
    """Render the question-time prompt and simulate the answering call at time t.

    Background calls the rendering makes (a last compaction, a query embedding) are simulated first and
    stay in the caller's `current_calls` collector, if any.
    """
    outer = current_calls.get()
    calls: list[CallRecord] = []
    token = current_calls.set(calls)
    try:
        prompt = await strategy.question_prompt(question, question_date, question_date_str)
    finally:
        current_calls.reset(token)
    simulate_background(calls, sims, t)
    if outer is not None:
        outer.extend(calls)
    return prompt, observe_all(sims, t, prompt, actor_model, "actor")
