"""Run the configured strategies over the dataset: resumable, bounded-concurrency, one transaction per question.

The work is scheduled by the benchmark's isolation unit: a conversation several questions share is replayed once
(bench.ingest.ingest_unit) and each of its questions answered and written as soon as it is ingested."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

from bench.assemble import SECOND_JUDGE, SUBSET_KEYS, Job, data_source, load_data, panel_roles  # noqa: F401 (re-exported)
from bench.config import RootCfg, answer_reserve
from bench.benchmarks.base import Unit, units_of
from bench.data.dataset import Dataset
from bench.errors import StorageFailure
from bench.gateway.errors import RUN_FATAL_KINDS, parse_error_text
from bench.roles import Role
from bench.runner.budget import Budget
from bench.runner.checkpoint import CheckpointStore
from bench.runner.keys import ingest_key, retry_policy, run_key
from bench.runner.manifest import build_manifest
from bench.runner.progress import Progress
from bench.runner.question import QuestionEnv, answer_question, final_error, ingested
from bench.store.contract import QuestionResult, ResultSink

if TYPE_CHECKING:  # the gateway imports litellm: load it only when a run starts
    from bench.gateway import Gateway


@dataclass
class RunOutcome:
    run_key: str
    strategy: str
    planned: int
    computed: int  # questions whose rows this command wrote (one stored with an error included)
    skipped: int  # already stored by an earlier run
    failed: int  # raised before anything of them was written
    errors: list[str] = field(default_factory=list)
    not_started: int = 0  # questions left out because run.max_usd was reached
    stopped: str | None = None  # why the run stopped before its last question (a run-fatal error), if it did
    storage_failure: StorageFailure | None = None  # the disk or the results file failed: raised after the workers


MAX_FAILURES_NOTED = 100  # questions whose failure reason a run's row keeps (the count is always whole)


def unhandled_error(entry: str) -> tuple[str, str, str]:
    """(phase, kind, message) of an outcome error `qid: ExceptionType: text` (a question that raised), as
    `RunOutcome.errors` holds them."""
    _, _, rest = entry.partition(": ")
    exc_type, _, text = rest.partition(": ")
    if exc_type == "GatewayError":
        kind, _, message = text.partition(": ")
        return "ingest", kind, message
    return "run", exc_type or "error", text


def run_notes(out: RunOutcome, stopped: str | None) -> dict[str, Any]:
    """What the run's row keeps (`runs.extra`) of a run's failures that are not results: why it stopped early
    (`stopped`: "error: ...", "budget: ...", "storage: ..."; None when it ran to the end) and the questions that
    failed before anything of theirs was stored (`failures`: [{question_id, phase, kind, message}], at most
    `MAX_FAILURES_NOTED`, and `n_failures`). Such questions stay unstored so that the same command retries them;
    every text is redacted. Always both keys, so a re-run that succeeds clears what an earlier one noted."""
    from bench.secrets import redact_text

    failures = []
    for entry in out.errors[:MAX_FAILURES_NOTED]:
        qid = entry.partition(": ")[0]
        phase, kind, message = unhandled_error(entry)
        failures.append({"question_id": qid, "phase": phase, "kind": kind, "message": redact_text(message)})
    return {"stopped": redact_text(stopped) if stopped else None, "failures": failures, "n_failures": len(out.errors)}


def make_gateway(job: Job | RootCfg) -> Gateway:
    """One gateway for the job (`Job.make_gateway`: a model per role, the offline engine registered)."""
    from bench.runner.keys import as_job

    return as_job(job).make_gateway()


def unjudged_again(sink: ResultSink, key: str, done: set[str], second_model: str, shown: str) -> set[str]:
    """Stored questions judged before judge.second_model was set (no second verdict): computed again, with the
    stored copy replaced, so agreement covers every question. Memory comes back from the ingestion checkpoints
    and the Actor's and first judge's replies from the response cache where they are on, so the answer and the
    first verdict are the stored ones; without them the question is asked anew. Said once on the console and
    in the run log, with the count."""
    from bench.notices import warn

    ids = sink.unjudged_ids(key) & done
    if ids:
        warn(f"[{shown}] judge.second_model={second_model}: {len(ids)} stored question(s) have no second verdict; "
             "they are computed again (memory from checkpoints, replies from the response cache where on) so "
             "every question has both")
    return ids


async def served_endpoints(gateway: Gateway, roles: set[Role]) -> dict[str, dict[str, str]]:
    """role -> {base, served} for the roles sent to a self-hosted server (asked once per server): the run and
    ingestion keys change with the server and with the model it serves."""
    out = {}
    for role in sorted(roles):
        ep = await gateway.endpoint(role.value)
        if ep:
            out[role.value] = ep
    return out


async def run_strategy(job: Job, ds: Dataset, strategy: str, sink: ResultSink, gateway: Gateway,
                       raw_cfg: dict[str, Any], progress: Progress, *, dry_run: bool = False,
                       budget: Budget | None = None) -> RunOutcome:
    """Compute the questions of `ds` the sink has not stored (or stored with an error) and write each one.

    Questions are grouped into the benchmark's isolation units (`units_of`): a unit with a question to compute
    is replayed once, and its questions to compute are answered in the order they are asked. `budget` (one per
    job, shared by its strategies; default: a fresh one from run.max_usd) stops scheduling questions at the cap:
    the run is left `stopped` and the next run of the same command continues it."""
    from bench.evaluate.judge import Judge, JudgePanel
    from om_core import default_counter

    cfg = job.cfg
    spec = job.spec(strategy)
    endpoints = await served_endpoints(gateway, {Role.ACTOR, Role.JUDGE, *spec.roles})
    key = run_key(job, strategy, ds.sha256, ds.subset_ids, endpoints)
    if dry_run:
        key = "dryrun-" + key
    sink.upsert_run(build_manifest(job, ds, strategy, key, raw_cfg))
    done = sink.done_ids(key)
    # a failed call (rate limit, outage) is retried on the next run; a prompt refused for the Actor's window is
    # not while the window and answer reserve are the same (it would be refused again: final_error)
    window, reserve = cfg.model.actor_max_input_tokens, answer_reserve(cfg.answer)
    retry = {q for q, e in sink.errors(key).items() if not final_error(e, window, reserve)} & done
    if job.judge.second_model and not dry_run:
        retry |= unjudged_again(sink, key, done, job.judge.second_model, strategy)
    done -= retry
    n_total = len(ds)
    todo_ids = {qid for qid in ds.question_ids() if qid not in done}
    j = job.judge
    judge = Judge(gateway.model(Role.JUDGE), template_set=j.templates, repeats=j.repeats, model_name=j.model,
                  parse=j.parse, source=j.source, benchmark=job.benchmark)
    panel = JudgePanel([judge, *(Judge(gateway.model(role), template_set=j.templates, repeats=j.repeats,
                                       model_name=m, role=role, parse=j.parse, source=j.source,
                                       benchmark=job.benchmark)
                                 for role, m in zip(panel_roles(j.panel), j.panel))]) if j.panel else None
    env = QuestionEnv(
        job=job, strategy=spec, gateway=gateway, counter=default_counter(), judge=panel or judge,
        checkpoints=CheckpointStore(cfg.output.checkpoint_dir,
                                    ingest_key(job, strategy, ds.sha256, endpoints) + ("-dry" if dry_run else ""))
        if cfg.run.checkpoints else None,
        make_sims=job.cache.make_sims,
        pricing=job.cache.pricing,
        judge_model_name=j.model,
        # the second judge reads the same template text with the same parse rule: only the model differs
        second_judge=Judge(gateway.model(SECOND_JUDGE), model_name=j.second_model, role=SECOND_JUDGE, parse=j.parse,
                           source=j.source, template_set=judge.template_set, benchmark=job.benchmark)
        if j.second_model else None,
        retries=retry_policy(job, strategy),
    )
    budget = budget or Budget(cfg.run.max_usd)
    budget.retry_max = env.retries.max if env.retries.enabled else 0  # plans for the worst case (bench.runner.budget)
    out = RunOutcome(key, strategy, n_total, 0, n_total - len(todo_ids), 0)
    from bench.report.labels import progress_label

    shown = progress_label(strategy, cfg.experiment_name)  # a sweep job: its swept values tell the lines apart
    progress.start_run(shown, total=n_total, done=out.skipped)
    # every question of the dataset is grouped, not only those left: a unit's replay is the same on every run.
    # Units are taken one at a time as workers free up: a streamed dataset (M) holds only the units in flight.
    queue = _Units(u for u in units_of(job.benchmark, ds, alone=spec.cls.uses_oracle_view)
                   if any(q.question_id in todo_ids for q in u.questions))
    left = [0]  # questions of units taken off the queue that were not started (budget)

    def drain() -> None:
        queue.drop()

    def stop_if_fatal(kind: str | None, text: str) -> None:
        # a missing key, an exhausted quota or an unknown model fails every later question the same way
        if kind in RUN_FATAL_KINDS and out.stopped is None:
            out.stopped = text
            drain()

    def storage_failed(exc: StorageFailure) -> None:
        # a full disk or a file that cannot be written fails every later question: stop, keep the first cause
        out.storage_failure = out.storage_failure or exc
        drain()

    async def run_unit(unit: Unit) -> None:
        todo = [q for q in unit.questions if q.question_id in todo_ids]
        if not await budget.acquire():
            left[0] += len(todo)
            return
        try:
            got = await ingested(unit, todo_ids, env)
        except StorageFailure as exc:
            budget.release(None)
            storage_failed(exc)
            return
        except Exception as exc:  # one unit's failure never stops the run
            budget.release(None)
            if cfg.run.fail_fast:
                raise
            for q in todo:
                out.failed += 1
                out.errors.append(f"{q.question_id}: {type(exc).__name__}: {exc}")
                progress.advance(shown, failed=True)
            stop_if_fatal(getattr(exc, "kind", None), f"ingest: {exc}")
            return
        for k, inst in enumerate(todo):
            if k and not await budget.acquire():  # the unit's first question holds the slot taken above
                left[0] += len(todo) - k
                return
            res: QuestionResult | None = None
            try:
                ing, restored = got[inst.question_id]
                res = await answer_question(inst, ing, restored, env, None if unit.single else unit.key)
            except StorageFailure as exc:
                storage_failed(exc)
                return
            except Exception as exc:  # one question's failure never stops the run
                if cfg.run.fail_fast:
                    raise
                out.failed += 1
                out.errors.append(f"{inst.question_id}: {type(exc).__name__}: {exc}")
                progress.advance(shown, failed=True)
                stop_if_fatal(getattr(exc, "kind", None), f"ingest: {exc}")
                continue
            finally:
                budget.release(res)
            # the store is synchronous: one transaction per question, written from the event loop thread
            try:
                sink.write_question(key, res, replace=inst.question_id in retry)
            except StorageFailure as exc:
                storage_failed(exc)
                return
            out.computed += 1
            progress.advance(shown, result=res)
            if res.sample.error:
                stop_if_fatal(parse_error_text(res.sample.error)[1], res.sample.error)
            if out.stopped or out.storage_failure:
                return

    async def worker() -> None:
        # a fixed pool of workers pulls units: bounded concurrency, no coroutine per question
        while (unit := queue.take()) is not None:
            await run_unit(unit)
            if budget.stopped:
                return

    await asyncio.gather(*(worker() for _ in range(min(cfg.run.concurrency, max(1, len(todo_ids))))))
    if out.storage_failure is not None:
        progress.end_run(shown)
        try:
            sink.finish_run(key, status="stopped", notes=run_notes(out, f"storage: {out.storage_failure}"))
        except StorageFailure:
            pass  # the file that failed may refuse this too; the run's rows say what was stored
        raise out.storage_failure
    out.not_started = left[0] + queue.untaken(todo_ids)
    stop = f"error: {out.stopped}" if out.stopped else "budget: run.max_usd reached" if out.not_started else None
    sink.finish_run(key, status="stopped" if stop else "finished", notes=run_notes(out, stop))
    progress.end_run(shown)
    if out.not_started and not budget.announced:
        budget.announced = True
        progress.note(budget.stop_line(out.not_started))
    return out


class _Units:
    """The units left to compute, taken one at a time by the workers (never all read at once: a streamed dataset
    parses a unit when a worker takes it). `drop()` ends the queue (a run-fatal error); `untaken` counts the
    questions of `todo` in units never taken, unless the queue was dropped."""

    def __init__(self, units: Iterator[Unit]) -> None:
        self._units: Iterator[Unit] | None = units
        self._taken: set[str] = set()
        self._dropped = False

    def take(self) -> Unit | None:
        if self._units is None:
            return None
        unit = next(self._units, None)
        if unit is None:
            self._units = None
            return None
        self._taken.update(q.question_id for q in unit.questions)
        return unit

    def drop(self) -> None:
        self._units, self._dropped = None, True

    def untaken(self, todo: set[str]) -> int:
        return 0 if self._dropped else len(todo - self._taken)
