"""The replay pipeline: one question's haystack fed to a strategy as if it were a live agent, every prompt the
Actor would have sent (and every background call memory made) measured against simulated provider caches, then
the question-time prompt.

`ingest_question` is the one entry point: `ombench run` (bench.runner.question) and `ombench perf` (bench.perf)
both call it with a strategy resolved from the same config and simulators from the same factory
(bench.assemble), so their token counts and cache results are the same.

Clock: the Actor prompt of a turn is observed at `user_at + think_time`; the background calls recorded while
the turn was processed (observer, reflector, summariser) at the later of that and `assistant_at`, each on its
own stream (its role), so the simulators' clocks never run backwards. The question is asked at the later of the
last replayed message and the question date, plus the same think time.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Mapping, Protocol

from bench.render import token_count
from bench.cachesim.base import CacheSimulator
from bench.data.schema import Instance
from bench.prompt import Prompt
from bench.records import CallRecord, collect_calls
from bench.benchmarks.base import Unit
from bench.replay import ReplayTurn, as_utc, build_timeline
from bench.roles import Role
from bench.strategies import Strategy, StrategyContext, StrategySpec
from om_core.llm import ChatModel
from om_core.tokens import TokenCounter

if TYPE_CHECKING:
    from om_core.diagnostics import OutputRecord

# profile -> {"cached", "prefill", "write"} in tokens; prices are applied later (bench.cachesim.CachePricing)
CacheByProfile = dict[str, dict[str, float]]


class ModelSource(Protocol):
    """Where a strategy's background models come from (the gateway): a chat model per role, and embeddings."""

    def model(self, role: str) -> ChatModel: ...

    async def embed(self, texts: list[str], role: str = "embedder") -> list[list[float]]: ...


def opaque_resource_id(key: str | Instance) -> str:
    """The memory's resource id for a replay: derived from the unit's key (a question's text, or a shared
    conversation's key), so the question id (and any marker in it) never reaches the system under test."""
    text = key.question if isinstance(key, Instance) else key
    return "r-" + hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def strategy_context(spec: StrategySpec, models: ModelSource, counter: TokenCounter, resource_id: str) -> StrategyContext:
    """The context of one replay: only the model roles the strategy declared are wired; the params resolved once
    for the job and the benchmark's reader prompt come with it."""
    from bench.benchmarks import reader_of

    s = spec.settings
    chat = {r.value: models.model(r) for r in sorted(spec.roles) if r is not Role.EMBEDDER}

    async def embed(texts: list[str]) -> list[list[float]]:
        return await models.embed(texts, role=Role.EMBEDDER)

    return StrategyContext(
        models=chat, embed=embed if Role.EMBEDDER in spec.roles else None, counter=counter,
        actor_model=s.actor_model, max_input_tokens=s.max_input_tokens, output_budget=s.output_budget,
        system_prompt=s.system_prompt, resource_id=resource_id, resolved=spec.resolved,
        reader=reader_of(s),
    )


# ---- the pipeline ---------------------------------------------------------------------------------------

@dataclass
class Ingestion:
    """One question replayed through one strategy (for a question of a shared conversation: the part of the
    replay since the unit's previous question)."""

    strategy: Strategy  # the memory after ingestion (`memory_state()` for checkpoints)
    turns: list[dict[str, Any]]  # one row per timeline turn: turn, session, sim_time, prompt_tokens, events, cache
    calls: list[CallRecord]  # simulated Actor prompts and background calls in issue order, then question-time ones
    question_prompt: Prompt
    question_cache: CacheByProfile  # the answering prompt against each simulator
    question_time: datetime
    outputs: list[OutputRecord] = field(default_factory=list)  # om_core's verdict on each Observer/Reflector call
    state: dict[str, Any] | None = None  # the memory at question time, when the replay went on after it

    def memory_state(self) -> dict[str, Any]:
        """The strategy's state at question time (for the checkpoint)."""
        return self.state if self.state is not None else self.strategy.state()


async def ingest_question(inst: Instance, spec: StrategySpec, models: ModelSource, counter: TokenCounter,
                          sims: Mapping[str, CacheSimulator], *, keep_messages: bool = False) -> Ingestion:
    """Replay `inst`'s haystack through a fresh instance of `spec` and render the question-time prompt (a unit of
    one question: `ingest_unit`)."""
    return (await ingest_unit(Unit.of(inst), spec, models, counter, sims, keep_messages=keep_messages))[0]


async def ingest_unit(unit: Unit, spec: StrategySpec, models: ModelSource, counter: TokenCounter,
                      sims: Mapping[str, CacheSimulator], *, keep_messages: bool = False) -> list[Ingestion]:
    """Replay a unit's conversation once through a fresh instance of `spec`, asking each of its questions at its
    own time: a question is asked once the replay has fed every turn dated before it (the last one: after every
    turn), and the replay goes on from there. One `Ingestion` per question, in order, each holding the turns and
    calls since the previous question; for a unit of several questions each carries the memory's state at its
    question time (`Ingestion.state`).

    `sims` should be fresh (one unit's caches). Model calls go through `models`; a failed call raises its error
    (bench.gateway.GatewayError), a bad strategy param a ConfigError. `keep_messages` keeps every replay call's
    messages and reply on its record (output.store_prompts=all; large)."""
    from om_core.diagnostics import collect_outputs

    settings = spec.settings
    strategy = spec.build(strategy_context(spec, models, counter, opaque_resource_id(unit.key)))
    first = unit.questions[0]
    key = None if unit.single else unit.key
    view = first.oracle_view(key) if spec.cls.uses_oracle_view else first.view(key)
    timeline = build_timeline(view, turn_offset_s=settings.turn_offset_s)
    out: list[Ingestion] = []
    pos = 0
    with collect_outputs() as outputs:  # what om_core's output guards made of every Observer/Reflector call
        for k, inst in enumerate(unit.questions):
            end = len(timeline)
            if k < len(unit.questions) - 1:  # the turns dated before this question
                asked = as_utc(inst.question_date)
                end = next((i for i in range(pos, len(timeline)) if timeline[i].user_at >= asked), len(timeline))
            seen = len(outputs)
            replay = await replay_question(strategy, timeline[pos:end], sims, actor_model=settings.actor_model,
                                           think_time_s=settings.think_time_s, keep_messages=keep_messages)
            q_t = question_time(timeline[:end], inst.question_date, settings.think_time_s)
            prompt, cache, late = await question_call(strategy, inst.question, inst.question_date,
                                                      inst.question_date_str, sims, settings.actor_model, q_t)
            state = None if unit.single else strategy.state()
            out.append(Ingestion(strategy, replay.turns, [*replay.calls, *late], prompt, cache, q_t,
                                 outputs[seen:], state))
            pos = end
    return out


def question_time(timeline: list[ReplayTurn], question_date: datetime, think_time_s: float) -> datetime:
    """When the answering call is made: after the last replayed message and not before the question date."""
    last = timeline[-1].assistant_at if timeline else question_date
    return max(last, question_date.replace(tzinfo=last.tzinfo)) + timedelta(seconds=think_time_s)


# ---- the replay driver ----------------------------------------------------------------------------------

@dataclass
class ReplayOutcome:
    turns: list[dict[str, Any]]  # one row per timeline turn
    calls: list[CallRecord]  # simulated Actor calls and the real background calls, in issue order


def observe_all(sims: Mapping[str, CacheSimulator], t: datetime, prompt: Prompt, model: str, stream: str) -> CacheByProfile:
    out: CacheByProfile = {}
    for name, sim in sims.items():
        r = sim.observe(t, prompt, model=model, stream=stream)
        out[name] = {"cached": r.cached_tokens, "prefill": r.prefill_tokens, "write": r.write_tokens}
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
            rec.messages = rec.response = None  # background prompts are large: kept only when asked for


def actor_record(prompt: Prompt, model: str, t: datetime, cache: CacheByProfile, *,
                 keep_messages: bool = False) -> CallRecord:
    return CallRecord(role=Role.ACTOR.value, model=model, prompt_tokens=token_count(prompt), sim_time=t, simulated=True,
                      cache=cache, messages=prompt.to_messages() if keep_messages else None)


async def replay_question(
    strategy: Strategy,
    timeline: list[ReplayTurn],
    sims: Mapping[str, CacheSimulator],
    *,
    actor_model: str,
    think_time_s: float = 0.0,
    keep_messages: bool = False,
) -> ReplayOutcome:
    """Feed the timeline to the strategy turn by turn; the calls it makes come back in the outcome."""
    think = timedelta(seconds=think_time_s)
    turns: list[dict[str, Any]] = []
    # one collector for the whole replay: background tasks keep appending to it even after their turn
    with collect_calls() as calls:
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
                meta = result.prompt.meta  # the memory/raw split, where the strategy reports it
                row.update({k: meta[k] for k in ("memory_tokens", "raw_tokens", "generation") if k in meta})
                cache = observe_all(sims, t_actor, result.prompt, actor_model, Role.ACTOR.value)
                rec = actor_record(result.prompt, actor_model, t_actor, cache, keep_messages=keep_messages)
                row["prompt_tokens"] = rec.prompt_tokens
                row["cache"] = cache
                calls.append(rec)
            simulate_background(background, sims, max(turn.assistant_at, t_actor), keep_messages=keep_messages)
            calls.extend(background)
            turns.append(row)
    return ReplayOutcome(turns=turns, calls=calls)


async def question_call(
    strategy: Strategy,
    question: str,
    question_date: datetime,
    question_date_str: str,
    sims: Mapping[str, CacheSimulator],
    actor_model: str,
    t: datetime,
) -> tuple[Prompt, CacheByProfile, list[CallRecord]]:
    """Render the question-time prompt and simulate the answering call at time t: (prompt, its cache per
    profile, the background calls the rendering made). Those calls (a last compaction, a query embedding) are
    simulated first, at the same time."""
    with collect_calls() as calls:
        prompt = await strategy.question_prompt(question, question_date, question_date_str)
    simulate_background(calls, sims, t)
    return prompt, observe_all(sims, t, prompt, actor_model, Role.ACTOR.value), calls
