"""One question end to end: replay the haystack through a strategy (or restore its checkpoint), simulate caches,
answer with the Actor, judge, and return the `QuestionResult` the store writes in one transaction."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Callable

from bench.config import RootCfg
from bench.data.schema import Instance
from bench.prompt import Prompt
from bench.records import CallRecord, current_calls
from bench.replay import build_timeline
from bench.runner.checkpoint import CheckpointStore
from bench.store.contract import CallRow, JudgmentRow, QuestionResult, SampleRow, TurnRow

if TYPE_CHECKING:  # the gateway imports litellm: load it only when a run starts
    from bench.cachesim.base import CacheSimulator
    from bench.evaluate.judge import Judge, Judgment
    from bench.gateway import Gateway
    from om_core.tokens import TokenCounter


@dataclass
class QuestionEnv:
    """Everything a question needs that is shared across the questions of one run."""

    cfg: RootCfg
    strategy_name: str
    gateway: Gateway
    counter: TokenCounter
    judge: Judge
    checkpoints: CheckpointStore | None
    make_sims: Callable[[], dict[str, CacheSimulator]]
    actor_model_name: str
    judge_model_name: str


def call_row(rec: CallRecord, idx: int, phase: str) -> dict[str, Any]:
    """A call as checkpoint JSON: the fields of its `CallRow`."""
    return asdict(CallRow.from_record(rec, idx, phase))


def _prompt_to_json(p: Prompt) -> dict[str, Any]:
    return {"segments": [asdict(s) for s in p.segments], "meta": p.meta}


def _prompt_from_json(d: dict[str, Any]) -> Prompt:
    from bench.prompt import Segment

    return Prompt(segments=[Segment(**s) for s in d["segments"]], meta=d.get("meta", {}))


def opaque_resource_id(inst: Instance) -> str:
    # opaque: the question id (with its `_abs` marker) never reaches the system under test
    return "r-" + hashlib.blake2b(inst.question.encode(), digest_size=6).hexdigest()


async def ingest(inst: Instance, env: QuestionEnv) -> dict[str, Any]:
    """Replay the haystack and render the question-time prompt; returns a checkpoint payload."""
    from bench.ingest import question_call, replay_question
    from bench.strategies import StrategyContext, make_strategy

    cfg = env.cfg
    gw = env.gateway
    ctx = StrategyContext(
        models={r: gw.model(r) for r in ("observer", "reflector", "summarizer")},
        embed=lambda texts: gw.embed(texts, role="embedder"),
        counter=env.counter,
        actor_model=env.actor_model_name,
        max_input_tokens=cfg.model.actor_max_input_tokens,
        output_budget=cfg.answer.max_tokens,
        system_prompt=cfg.answer.system_prompt,
        resource_id=opaque_resource_id(inst),
    )
    params = dict(cfg.strategies[env.strategy_name].params)
    params.setdefault("method", cfg.answer.method)
    params.setdefault("history_format", cfg.answer.history_format)
    params.setdefault("await_background", cfg.replay.await_background)
    strategy = make_strategy(env.strategy_name, params, ctx)
    view = inst.oracle_view() if getattr(strategy, "uses_oracle_view", False) else inst.view()
    timeline = build_timeline(view, turn_offset_s=cfg.replay.turn_offset_s)
    sims = env.make_sims()
    outcome = await replay_question(
        strategy, timeline, sims, actor_model=env.actor_model_name, think_time_s=cfg.replay.think_time_s
    )
    last_t = timeline[-1].assistant_at if timeline else inst.question_date
    q_t = max(last_t, inst.question_date.replace(tzinfo=last_t.tzinfo)) + timedelta(seconds=cfg.replay.think_time_s)
    late: list[CallRecord] = []  # background work at question time (a query embedding, a final compaction)
    token = current_calls.set(late)
    try:
        qprompt, qcache = await question_call(
            strategy, inst.question, inst.question_date, inst.question_date_str, sims, env.actor_model_name, q_t
        )
    finally:
        current_calls.reset(token)
    for rec in late:
        rec.messages = None
    return {
        "question_id": inst.question_id,
        "state": strategy.state(),
        "turns": outcome.turns,
        "calls": [call_row(c, i, "ingest") for i, c in enumerate([*outcome.calls, *late])],
        "question_prompt": _prompt_to_json(qprompt),
        "question_cache": qcache,
        "question_time": q_t.isoformat(),
    }


async def process_question(inst: Instance, env: QuestionEnv) -> QuestionResult:
    from bench.evaluate.answer import answer as answer_call
    from bench.gateway import GatewayError

    cfg = env.cfg
    payload = env.checkpoints.load(inst.question_id) if env.checkpoints else None
    restored = payload is not None
    if payload is None:
        payload = await ingest(inst, env)
        if env.checkpoints:
            env.checkpoints.save(inst.question_id, payload)
    qprompt = _prompt_from_json(payload["question_prompt"])

    error: str | None = None
    hypothesis = ""
    judgment: Judgment | None = None
    answer_calls: list[CallRecord] = []
    token = current_calls.set(answer_calls)
    try:
        try:
            hypothesis, _ = await answer_call(
                env.gateway.model("actor"), qprompt, max_tokens=cfg.answer.max_tokens,
                temperature=cfg.answer.temperature,
            )
        except GatewayError as exc:
            error = f"answer: {exc}"
        if error is None:
            try:
                judgment = await env.judge.judge(
                    inst.question_id, inst.question_type, inst.question, inst.answer, hypothesis
                )
            except GatewayError as exc:
                error = f"judge: {exc}"
    finally:
        current_calls.reset(token)

    calls = [CallRow.from_dict(c) for c in payload["calls"]]
    for rec in answer_calls:
        if rec.role == "actor" and not rec.cache:
            rec.cache = payload.get("question_cache") or {}
        calls.append(CallRow.from_record(rec, len(calls), "answer" if rec.role == "actor" else "judge"))
    return QuestionResult(
        sample=sample_row(inst, env, calls, hypothesis, judgment, error, restored),
        calls=calls,
        turns=[TurnRow.from_dict(t) for t in payload["turns"]],
        judgments=judgment_rows(judgment, env.judge_model_name),
    )


def sample_row(inst: Instance, env: QuestionEnv, calls: list[CallRow], hypothesis: str, judgment: Judgment | None,
               error: str | None, restored: bool) -> SampleRow:
    answers = [c for c in calls if c.phase == "answer"]
    return SampleRow(
        question_id=inst.question_id,
        question_type=inst.question_type,
        is_abstention=inst.is_abstention,
        hypothesis=hypothesis,
        label=bool(judgment.label) if judgment else None,
        label_strict=bool(judgment.label_strict) if judgment else None,
        judge_raw=judgment.raw if judgment else None,
        judge_model=env.judge_model_name,
        prompt_tokens=sum(c.prompt_tokens for c in answers),
        completion_tokens=sum(c.completion_tokens for c in answers),
        cost_usd=float(sum(c.cost_usd or 0.0 for c in calls)),
        error=error,
        checkpoint_restored=restored,
    )


def judgment_rows(judgment: Judgment | None, judge_model: str) -> list[JudgmentRow]:
    if judgment is None:
        return []
    reps = judgment.repeats or [(judgment.raw, judgment.label)]
    return [JudgmentRow(repeat_idx=k, judge_model=judge_model, raw=raw, label=bool(lab))
            for k, (raw, lab) in enumerate(reps)]
