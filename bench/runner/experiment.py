"""Run the configured strategies over the dataset: resumable, bounded-concurrency, one transaction per question."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from bench.config import RootCfg
from bench.data.dataset import Dataset
from bench.data.schema import Instance
from bench.errors import StorageFailure
from bench.gateway.errors import RUN_FATAL_KINDS, parse_error_text
from bench.assemble import cache_pricing, cache_simulators, configured_strategy
from bench.roles import Role
from bench.runner.budget import Budget
from bench.runner.checkpoint import CheckpointStore
from bench.runner.keys import ingest_key, run_key
from bench.runner.manifest import build_manifest
from bench.runner.progress import Progress
from bench.runner.question import QuestionEnv, process_question
from bench.store.contract import QuestionResult, ResultSink

SECOND_JUDGE = "second_judge"  # the gateway role of judge.second_model

if TYPE_CHECKING:  # the gateway imports litellm: load it only when a run starts
    from bench.gateway import Gateway
    from bench.gateway.config import CachePolicy


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


def load_data(cfg: RootCfg) -> Dataset:
    """The configured dataset and subset; prints one warning when the subset loses question types and one
    note when the file's dates are not in the official format."""
    from bench.benchmarks.longmemeval.loader import load_dataset

    ds = load_dataset(cfg.dataset.name, cfg.dataset.data_dir)
    d = cfg.dataset
    for note in ds.format_notes:
        print(f"ombench: note: {note}", file=sys.stderr)
    if d.limit or d.per_type or d.ids or d.sample or d.stratified:
        full = ds
        ds = ds.subset(first_n=d.limit or None, per_type=d.per_type, ids=d.ids, sample=d.sample, seed=d.seed,
                       stratified=d.stratified, names=SUBSET_KEYS)
        warning = ds.coverage_warning(full, knobs=_subset_knobs(d))
        if warning:
            print(f"ombench: warning: {warning}", file=sys.stderr)
    return ds


# Dataset.subset's arguments as `ombench run` names them (its errors and the subset's note say these)
SUBSET_KEYS = {"first_n": "dataset.limit", "per_type": "dataset.per_type", "ids": "dataset.ids",
               "sample": "dataset.sample", "seed": "dataset.seed", "stratified": "dataset.stratified"}


def _subset_knobs(d: Any) -> str:
    names = ("limit", "stratified", "per_type", "ids", "sample")
    return " ".join(f"dataset.{n}={getattr(d, n) if n != 'ids' else len(d.ids)}" for n in names if getattr(d, n))


def make_gateway(cfg: RootCfg, *, offline_roles: bool = False) -> Gateway:
    """One gateway for the job: a model per role (`model.<role>`). `offline_roles` swaps every role for the
    offline engine (dry runs)."""
    from bench import offline
    from bench.gateway import Gateway, GatewayConfig, RoleModel

    offline.register()  # the offline engine is one of the application's providers

    roles = {}
    for r in Role:
        rm = cfg.model.role(r)
        model = rm.model
        if offline_roles and not model.startswith("offline/"):
            model = r.offline_model
        roles[r.value] = RoleModel(model=model, params=dict(rm.params) if not offline_roles else {})
    if cfg.judge.second_model:  # judge.second_model: its own role, so its calls are told apart
        second = cfg.judge.second_model
        roles[SECOND_JUDGE] = RoleModel(model=Role.JUDGE.offline_model if offline_roles and not second.startswith(
            "offline/") else second, params=dict(cfg.model.judge.params) if not offline_roles else {})
    policy = cast("CachePolicy", cfg.output.response_cache_policy)  # validated with the config
    if policy != "off":
        Path(cfg.output.response_cache).parent.mkdir(parents=True, exist_ok=True)
    return Gateway(
        GatewayConfig(
            roles=roles,
            cache_path=cfg.output.response_cache,
            cache_policy=policy,
            max_attempts=cfg.gateway.max_attempts,
            rpm=dict(cfg.gateway.rpm),
            tpm=dict(cfg.gateway.tpm),
            max_concurrency=cfg.gateway.max_concurrency,
            timeout_s=cfg.gateway.timeout_s,
            api_base=dict(cfg.gateway.api_base),
            api_key_env=dict(cfg.gateway.api_key_env),
            local_defaults=cfg.gateway.local_defaults,
            local_max_concurrency=cfg.gateway.local_max_concurrency,
            local_timeout_s=cfg.gateway.local_timeout_s,
            context_window=dict(cfg.gateway.context_window),
        )
    )


async def served_endpoints(gateway: Gateway, roles: set[Role]) -> dict[str, dict[str, str]]:
    """role -> {base, served} for the roles sent to a self-hosted server (asked once per server): the run and
    ingestion keys change with the server and with the model it serves."""
    out = {}
    for role in sorted(roles):
        ep = await gateway.endpoint(role.value)
        if ep:
            out[role.value] = ep
    return out


async def run_strategy(cfg: RootCfg, ds: Dataset, strategy: str, sink: ResultSink, gateway: Gateway,
                       raw_cfg: dict[str, Any], progress: Progress, *, dry_run: bool = False,
                       budget: Budget | None = None) -> RunOutcome:
    """Compute the questions of `ds` the sink has not stored (or stored with an error) and write each one.

    `budget` (one per job, shared by its strategies; default: a fresh one from run.max_usd) stops scheduling
    questions at the cap: the run is left `stopped` and the next run of the same command continues it."""
    from bench.evaluate.judge import Judge
    from om_core.tokens import default_counter

    spec = configured_strategy(cfg, strategy)
    endpoints = await served_endpoints(gateway, {Role.ACTOR, Role.JUDGE, *spec.roles})
    key = run_key(cfg, strategy, ds.sha256, ds.subset_ids, endpoints)
    if dry_run:
        key = "dryrun-" + key
    sink.upsert_run(build_manifest(cfg, ds, strategy, key, raw_cfg))
    done = sink.done_ids(key)
    retry = sink.errored_ids(key) & done  # a failed call (rate limit, outage) is retried on the next run
    done -= retry
    todo = [i for i in ds.instances if i.question_id not in done]
    judge = Judge(gateway.model(Role.JUDGE), source=cfg.judge.source, official_repo=cfg.judge.official_repo,
                  repeats=cfg.judge.repeats, model_name=cfg.model.judge.model, parse=cfg.judge.parse,
                  ask_reason=cfg.judge.ask_reason)
    env = QuestionEnv(
        cfg=cfg, strategy=spec, gateway=gateway, counter=default_counter(), judge=judge,
        checkpoints=CheckpointStore(cfg.output.checkpoint_dir,
                                    ingest_key(cfg, strategy, ds.sha256, endpoints) + ("-dry" if dry_run else ""))
        if cfg.run.checkpoints else None,
        make_sims=cache_simulators(cfg.cachesim.profiles, cfg.cachesim.params),
        pricing=cache_pricing(cfg.cachesim.profiles, cfg.cachesim.params),
        judge_model_name=cfg.model.judge.model,
        # the second judge reads the same template text with the same parse rule: only the model differs
        second_judge=Judge(gateway.model(SECOND_JUDGE), source=cfg.judge.source, official_repo=cfg.judge.official_repo,
                           model_name=cfg.judge.second_model, role=SECOND_JUDGE, parse=cfg.judge.parse,
                           template_set=judge.template_set) if cfg.judge.second_model else None,
    )
    budget = budget or Budget(cfg.run.max_usd)
    out = RunOutcome(key, strategy, len(ds.instances), 0, len(ds.instances) - len(todo), 0)
    progress.start_run(strategy, total=len(ds.instances), done=out.skipped)
    queue: asyncio.Queue[Instance] = asyncio.Queue()
    for inst in todo:
        queue.put_nowait(inst)

    def drain() -> None:
        while not queue.empty():
            queue.get_nowait()

    def stop_if_fatal(kind: str | None, text: str) -> None:
        # a missing key, an exhausted quota or an unknown model fails every later question the same way
        if kind in RUN_FATAL_KINDS and out.stopped is None:
            out.stopped = text
            drain()

    def storage_failed(exc: StorageFailure) -> None:
        # a full disk or a file that cannot be written fails every later question: stop, keep the first cause
        out.storage_failure = out.storage_failure or exc
        drain()

    async def worker() -> None:
        # a fixed pool of workers pulls questions: bounded concurrency, no coroutine per question
        while not queue.empty():
            if not await budget.acquire():
                return
            try:
                inst = queue.get_nowait()
            except asyncio.QueueEmpty:
                budget.release(None)
                return
            res: QuestionResult | None = None
            try:
                res = await process_question(inst, env)
            except StorageFailure as exc:
                storage_failed(exc)
                return
            except Exception as exc:  # one question's failure never stops the run
                if cfg.run.fail_fast:
                    raise
                out.failed += 1
                out.errors.append(f"{inst.question_id}: {type(exc).__name__}: {exc}")
                progress.advance(strategy, failed=True)
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
            progress.advance(strategy, result=res)
            if res.sample.error:
                stop_if_fatal(parse_error_text(res.sample.error)[1], res.sample.error)

    await asyncio.gather(*(worker() for _ in range(min(cfg.run.concurrency, max(1, len(todo))))))
    if out.storage_failure is not None:
        progress.end_run(strategy)
        try:
            sink.finish_run(key, status="stopped")
        except StorageFailure:
            pass  # the file that failed may refuse this too; the run's rows say what was stored
        raise out.storage_failure
    out.not_started = queue.qsize()
    sink.finish_run(key, status="stopped" if out.not_started or out.stopped else "finished")
    progress.end_run(strategy)
    if out.not_started and not budget.announced:
        budget.announced = True
        progress.note(budget.stop_line(out.not_started))
    return out
