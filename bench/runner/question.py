"""Questions end to end: replay a unit's conversation through a strategy once (or restore its questions'
checkpoints), simulate caches, answer each question with the Actor, judge it, and return the `QuestionResult`
the store writes in one transaction per question."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable

from bench.benchmarks.base import Unit
from bench.data.schema import Instance
from bench.prompt import Prompt
from bench.evaluate.retries import RetryPolicy
from bench.records import CallRecord, collect_calls
from bench.roles import Role
from bench.runner.checkpoint import CheckpointStore
from bench.store.contract import (
    CallRow,
    JudgmentRow,
    MemoryOutputRow,
    MemoryRow,
    QuestionResult,
    SampleRow,
    TryRow,
    TurnRow,
)
from bench.strategies import StrategySpec

if TYPE_CHECKING:  # the gateway imports litellm: load it only when a run starts
    from bench.assemble import Job
    from bench.cachesim.base import CacheSimulator
    from bench.cachesim.pricing import CachePricing
    from bench.evaluate.judge import Judge, JudgePanel, Judgment
    from bench.gateway import Gateway
    from om_core.tokens import TokenCounter


@dataclass
class QuestionEnv:
    """Everything a question needs that is shared across the questions of one run."""

    job: Job  # the assembled job: config, benchmark, resolved strategies, judge, caches
    strategy: StrategySpec  # resolved from the config: class, params, roles, replay settings
    gateway: Gateway
    counter: TokenCounter
    judge: Judge | JudgePanel  # judge.panel: the panel (its strict majority is the headline label)
    checkpoints: CheckpointStore | None
    make_sims: Callable[[], dict[str, CacheSimulator]]
    pricing: CachePricing  # prices the simulated caches for the models of this run
    judge_model_name: str
    second_judge: Judge | None = None  # judge.second_model: every question judged again, for agreement
    retries: RetryPolicy = field(default_factory=RetryPolicy)  # answer.retries, where the strategy retries


def call_row(rec: CallRecord, idx: int, phase: str) -> dict[str, Any]:
    """A call as checkpoint JSON: the fields of its `CallRow`."""
    return asdict(CallRow.from_record(rec, idx, phase))


def _prompt_to_json(p: Prompt) -> dict[str, Any]:
    return {"segments": [asdict(s) for s in p.segments], "meta": p.meta}


async def ingest(unit: Unit, env: QuestionEnv) -> list[dict[str, Any]]:
    """Replay the unit's conversation once and render each question's prompt at its time
    (bench.ingest.ingest_unit); one checkpoint payload per question, in the unit's order."""
    from bench import ingest as pipeline

    got = await pipeline.ingest_unit(unit, env.strategy, env.gateway, env.counter, env.make_sims(),
                                     keep_messages=env.job.cfg.output.store_prompts == "all")
    out = []
    for inst, part in zip(unit.questions, got):
        mark_question_memory(part.turns, part.question_prompt)
        out.append({
            "question_id": inst.question_id,
            "state": part.memory_state(),
            "turns": part.turns,
            "calls": [call_row(c, i, "ingest") for i, c in enumerate(part.calls)],
            "question_prompt": _prompt_to_json(part.question_prompt),
            "question_cache": part.question_cache,
            "question_time": part.question_time.isoformat(),
            "outputs": [asdict(o) for o in MemoryOutputRow.group(part.outputs)],
        })
    return out


QUESTION_MEMORY_EMPTY = "question_memory_empty"  # event: the question was answered with an empty memory


def mark_question_memory(turns: list[dict[str, Any]], prompt: Prompt) -> None:
    """What memory did when the question prompt was rendered (a finalize pass: its events) and whether it was
    empty (`question_memory_empty`) go to the last turn's events, the row the question follows, so the results
    keep a per-question flag the summary can warn about."""
    extra = list(prompt.meta.get("events") or [])
    if prompt.meta.get("memory_empty"):
        extra.append(QUESTION_MEMORY_EMPTY)
    if extra and turns:
        turns[-1]["events"] = [*turns[-1].get("events", []), *extra]


@dataclass(frozen=True)
class Ingested:
    """A question's ingestion as the answer phase uses it: a checkpoint payload parsed into typed parts. Every
    part is checked (types included) when it is built, so a damaged checkpoint is refused before it is used."""

    question_id: str
    turns: list[TurnRow]
    calls: list[CallRow]  # the ingestion calls, priced when a run writes them
    question_prompt: Prompt
    question_cache: dict[str, dict[str, float]]
    question_time: datetime
    outputs: list[MemoryOutputRow]
    memory: list[MemoryRow]


_ADAPTERS: dict[Any, Any] = {}


def _typed(part: str, kind: Any, value: Any) -> Any:
    """`value` validated (and coerced where lossless: "12" -> 12) as `kind` by pydantic; raises ValueError
    naming the first wrong part (`calls.3.cache.openai.cached: Input should be a valid number`)."""
    from pydantic import ConfigDict, TypeAdapter, ValidationError

    adapter = _ADAPTERS.get(kind)
    if adapter is None:
        config = ConfigDict(revalidate_instances="always") if kind in (list[TurnRow], list[CallRow]) else None
        adapter = _ADAPTERS[kind] = TypeAdapter(kind, config=config)
    try:
        return adapter.validate_python(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(".".join(map(str, (part, *first["loc"]))) + f": {first['msg']}") from None


def parse_checkpoint(payload: dict[str, Any], memory_view: Callable[[Any], list[MemoryRow]]) -> Ingested:
    """The typed parts of a checkpoint payload (`ingest`'s output, or a file's). `memory_view` is the strategy's
    (it reads the saved state). Raises ValueError, TypeError, KeyError or AttributeError for a missing or
    wrong-typed part."""
    for part, kind in (("state", dict), ("turns", list), ("calls", list), ("question_prompt", dict)):
        if not isinstance(payload[part], kind):
            raise TypeError(f"{part}: expected a JSON {'object' if kind is dict else 'array'}, "
                            f"found {type(payload[part]).__name__}")
    question_id = str(payload["question_id"])
    turns = _typed("turns", list[TurnRow], _each("turns", payload["turns"], TurnRow.from_dict))
    calls = _typed("calls", list[CallRow], _each("calls", payload["calls"], CallRow.from_dict))
    prompt = _typed("question_prompt", Prompt, payload["question_prompt"])
    cache = _typed("question_cache", dict[str, dict[str, float]], payload.get("question_cache") or {})
    when = _typed("question_time", datetime, payload["question_time"])
    outputs = _typed("outputs", list[MemoryOutputRow], payload.get("outputs") or [])
    state = payload["state"]
    try:
        memory = list(memory_view(state))
    except Exception as exc:  # the strategy cannot read its own state back: the checkpoint is unusable
        raise ValueError(f"state: the strategy cannot read it ({type(exc).__name__}: {exc})") from exc
    return Ingested(question_id, turns, calls, prompt, cache, when, outputs, memory)


def _each(part: str, items: list[Any], convert: Callable[[Any], Any]) -> list[Any]:
    """`convert` of every item; a failure names the item (`turns.3: ...`)."""
    out = []
    for i, item in enumerate(items):
        try:
            out.append(convert(item))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            why = f"the part {exc.args[0]!r} is missing" if isinstance(exc, KeyError) else str(exc)
            raise ValueError(f"{part}.{i}: {why}") from exc
    return out


async def ingested(unit: Unit, todo: set[str], env: QuestionEnv) -> dict[str, tuple[Ingested, bool]]:
    """The ingestion of each question of `todo` in the unit and whether it came from a checkpoint: usable
    checkpoints for all of them, else one replay of the unit (then every question's checkpoint is saved).
    Raises StorageFailure when a checkpoint cannot be written."""
    memory_view = env.strategy.cls.memory_view
    wanted = [q.question_id for q in unit.questions if q.question_id in todo]
    if env.checkpoints is not None:
        restored = {}
        for qid in wanted:
            got = env.checkpoints.restore(qid, lambda p: parse_checkpoint(p, memory_view))
            if got is None:
                break
            restored[qid] = (got, True)
        else:
            return restored
    out = {}
    for payload in await ingest(unit, env):
        qid = payload["question_id"]
        parsed = parse_checkpoint(payload, memory_view)
        if env.checkpoints is not None:
            env.checkpoints.save(qid, payload)
        if qid in todo:
            out[qid] = (parsed, False)
    return out


async def process_question(inst: Instance, env: QuestionEnv) -> QuestionResult:
    """One question alone: its replay (or checkpoint), answer and judgment."""
    got, restored = (await ingested(Unit.of(inst), {inst.question_id}, env))[inst.question_id]
    return await answer_question(inst, got, restored, env)


async def answer_question(inst: Instance, got: Ingested, restored: bool, env: QuestionEnv,
                          unit_key: str | None = None) -> QuestionResult:
    """Answer one ingested question with the Actor, judge it, and gather its rows. `unit_key`: the key of a
    shared conversation's labels (retrieval scores map them back)."""
    from bench.evaluate.answer import answer as answer_call
    from bench.config import answer_reserve
    from bench.gateway import GatewayError

    cfg = env.job.cfg
    qprompt = got.question_prompt

    error: str | None = None
    hypothesis = ""
    judgment: Judgment | None = None
    second: Judgment | None = None
    with collect_calls() as answer_calls:
        # an uncapped answer (answer.max_tokens=null) still keeps its reserve free (bench.config.answer_reserve)
        error = past_window(qprompt, cfg.model.actor_max_input_tokens, answer_reserve(cfg.answer), env.strategy.name)
        try:
            if error is None:
                hypothesis, _ = await answer_call(
                    env.gateway.model(Role.ACTOR), qprompt, max_tokens=cfg.answer.max_tokens,
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
        if error is None and env.second_judge is not None:
            try:
                second = await env.second_judge.judge(
                    inst.question_id, inst.question_type, inst.question, inst.answer, hypothesis
                )
            except GatewayError as exc:
                error = f"second judge: {exc}"
    tries: list[_Try] = []
    if error is None and judgment is not None and not judgment.label and env.retries.may_retry(inst.question_id):
        tries, error = await retry_wrong_answer(inst, qprompt, env)

    keep = cfg.output.store_prompts != "none"  # question-time prompts and replies are kept unless turned off
    calls = [priced_call(c, env.pricing, cfg.model.actor.model) for c in got.calls]
    for rec in answer_calls:
        if rec.role == "actor" and not rec.cache:
            rec.cache = dict(got.question_cache)
        rec.cache = env.pricing.priced(rec.cache, rec.model)
        if not keep:
            rec.messages = rec.response = None
        calls.append(CallRow.from_record(rec, len(calls), "answer" if rec.role == "actor" else "judge"))
    for t in tries:  # a retry's calls: phase "retry" (Actor) and "judge"; no simulated cache (same prompt again)
        for rec in t.calls:
            rec.cache = {}
            if not keep:
                rec.messages = rec.response = None
            calls.append(CallRow.from_record(rec, len(calls), RETRY_PHASE if rec.role == "actor" else "judge"))
    sample = sample_row(inst, env, calls, hypothesis, judgment, error, restored)
    if second is not None:
        sample = replace(sample, label_second=bool(second.label), judge_second_raw=second.raw,
                         judge_second_model=cfg.judge.second_model)
    return QuestionResult(
        sample=sample,
        calls=calls,
        turns=got.turns,
        judgments=judgment_rows(judgment, env.judge_model_name),
        memory=got.memory,
        retrieval=env.job.benchmark.retrieval_rows(inst, qprompt.meta, unit_key),
        outputs=got.outputs,
        tries=[t.row for t in tries],
    )


RETRY_PHASE = "retry"  # the calls phase of a retry's Actor call


@dataclass
class _Try:
    row: TryRow
    calls: list[CallRecord]


async def retry_wrong_answer(inst: Instance, qprompt: Prompt, env: QuestionEnv) -> tuple[list[_Try], str | None]:
    """Ask a wrongly answered question again, up to `env.retries.max` times, stopping at the first pass (Mastra's
    runner, bench.evaluate.retries). Each try is a fresh question thread: memory is read-only at question time
    and the new thread holds only the question, so the prompt is the first try's; the request carries
    `attempt=k`, so the response cache never hands back the first answer. Returns the tries and the error of a
    try whose call failed (the question is then stored with it, and the next run computes it again)."""
    from bench.evaluate.answer import answer as answer_call
    from bench.gateway import GatewayError

    cfg = env.job.cfg
    tries: list[_Try] = []
    for k in range(1, env.retries.max + 1):
        hypothesis, judgment, error = "", None, None
        second: Judgment | None = None
        with collect_calls() as calls:
            try:
                hypothesis, _ = await answer_call(env.gateway.model(Role.ACTOR), qprompt,
                                                  max_tokens=cfg.answer.max_tokens,
                                                  temperature=cfg.answer.temperature, attempt=k)
                judgment = await env.judge.judge(inst.question_id, inst.question_type, inst.question, inst.answer,
                                                 hypothesis)
                if env.second_judge is not None:  # the second judge sees every try, as it sees the first
                    second = await env.second_judge.judge(inst.question_id, inst.question_type, inst.question,
                                                          inst.answer, hypothesis)
            except GatewayError as exc:
                error = f"retry {k}: {exc}"
        label = bool(judgment.label) if judgment is not None else None
        row = TryRow(k, hypothesis, label, judgment.raw if judgment else None, error,
                     bool(second.label) if second is not None else None, second.raw if second is not None else None)
        tries.append(_Try(row, list(calls)))
        if error is not None:
            return tries, error
        if label:
            break
    return tries, None


def past_window(prompt: Prompt, window: int, answer_tokens: int, strategy: str) -> str | None:
    """The Actor-window contract: a question-time prompt whose tokens (default rendering, bench.render) plus the
    answer budget pass the Actor's window is never sent; the question is stored failed with this reason (kind
    `context_window`, not run-fatal), counted in the summary. None when it fits."""
    from bench.render import token_count

    tokens = token_count(prompt)
    if tokens + answer_tokens <= window:
        return None
    return (f"answer: {CONTEXT_WINDOW}: the question prompt of {tokens:,} tokens and the {answer_tokens:,}-token answer "
            f"pass the Actor's window (model.actor_max_input_tokens={window:,}); not sent: {strategy} must fit its "
            "prompt to the window")


CONTEXT_WINDOW = "context_window"  # the error kind of a question whose prompt passed the Actor's window
PAST_WINDOW_PREFIX = f"answer: {CONTEXT_WINDOW}: the question prompt of "  # how such a stored error starts
_PAST_WINDOW = re.compile(r"^answer: context_window: the question prompt of [\d,]+ tokens and the (?P<answer>[\d,]+)"
                          r"-token answer pass the Actor's window \(model\.actor_max_input_tokens=(?P<window>[\d,]+)\)")


def final_error(error: str, window: int, answer_tokens: int) -> bool:
    """Whether a stored error is final for its run, so that a re-run of the same run key does not compute the
    question again: a prompt refused for the Actor's window (`past_window`) is, while the window and the answer
    reserve are the ones it was refused under (the prompt is deterministic for the run key; a changed window or
    reserve may let it fit). Every other stored error (a rate limit, an outage) is retried."""
    m = _PAST_WINDOW.match(error)
    if m is None:
        return False
    return (int(m["window"].replace(",", "")), int(m["answer"].replace(",", ""))) == (window, answer_tokens)


def priced_call(row: CallRow, pricing: CachePricing, actor_model: str) -> CallRow:
    """A checkpointed ingestion call for this run: a simulated Actor prompt is this run's Actor's (the checkpoint
    may come from a run with another Actor), and every call's simulated cache is priced for its model."""
    if row.simulated and row.role == Role.ACTOR.value:
        row = replace(row, model=actor_model)
    return replace(row, cache=pricing.priced(dict(row.cache), row.model))


def sample_row(inst: Instance, env: QuestionEnv, calls: list[CallRow], hypothesis: str, judgment: Judgment | None,
               error: str | None, restored: bool) -> SampleRow:
    answers = [c for c in calls if c.phase == "answer"]
    return SampleRow(
        question_id=inst.question_id,
        question_type=inst.question_type,
        is_abstention=env.job.benchmark.is_abstention(inst),
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
        question=inst.question,
        gold_answer=str(inst.answer),
        question_date=inst.question_date_str,
    )


def judgment_rows(judgment: Judgment | None, judge_model: str) -> list[JudgmentRow]:
    """One row per judge call (judge.repeats); a panel's: every member's calls, numbered on, each with its model."""
    if judgment is None:
        return []
    if judgment.members:
        rows: list[JudgmentRow] = []
        for model, member in judgment.members:
            for raw, lab in member.repeats or [(member.raw, member.label)]:
                rows.append(JudgmentRow(repeat_idx=len(rows), judge_model=model, raw=raw, label=bool(lab)))
        return rows
    reps = judgment.repeats or [(judgment.raw, judgment.label)]
    return [JudgmentRow(repeat_idx=k, judge_model=judge_model, raw=raw, label=bool(lab))
            for k, (raw, lab) in enumerate(reps)]
