"""One Hydra job: validate the config, preflight it, run (or dry-run) every configured strategy, write the
store, summarise. No data is loaded and no result written before the preflight passes (a failed one leaves
only its lines in the run log); Ctrl-C ends the job with one line saying what finished and how to resume."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from bench.config import RootCfg, report_folder, to_plain
from bench.errors import StorageFailure, UserError
from bench.secrets import guard_process, is_secret_key, secrets_in

if TYPE_CHECKING:  # the runner and the store import pandas and DuckDB: loaded once the preflight has passed
    from bench.assemble import Job
    from bench.data.dataset import Dataset
    from bench.runner.experiment import RunOutcome
    from bench.store.contract import QuestionResult, ResultSink, RunManifest


class Interrupted(Exception):
    """The job was interrupted (Ctrl-C); the message says what finished and how to resume."""


def _is_multirun() -> tuple[bool, Path | None, str]:
    """(multirun?, job output dir, the job's sweep overrides as text)."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        hc = HydraConfig.get()
        return hc.mode == RunMode.MULTIRUN, Path(hc.runtime.output_dir), str(hc.job.override_dirname or "")
    except Exception:  # not under Hydra (tests call run_job directly)
        return False, None, ""


def run_job(cfg: Any) -> list[RunOutcome]:
    """Run one composed config. Raises UserError (one line per problem) for a bad config or a failed
    preflight, Interrupted on Ctrl-C (finished questions are stored)."""
    try:
        raw: dict[str, Any] = to_plain(cfg)
        raw.pop("hydra", None)
        guard_process(raw)  # remember this config's secrets: no log line, console line or stored text shows them
        from bench.assemble import assemble

        job = assemble(raw)  # every value, every strategy resolved (params, engine config), once, before any data
        root = job.cfg
    except UserError as exc:
        from bench.runner.runlog import log

        for line in str(exc).splitlines():  # the run log says why nothing ran
            log.error("config: %s", line)
        raise
    if root.run.preflight:
        from bench.runner.preflight import PreflightError, preflight

        try:
            preflight(job, dry_run=root.dry_run)
        except PreflightError as exc:
            from bench.runner.runlog import log

            for finding in exc.findings:  # the run log says why nothing ran
                log.error("preflight: %s", finding.message)
            raise
    from bench.runner.runlog import log_config

    log_config(raw)
    if root.dry_run:
        from bench.runner.dryrun import dry_run

        try:
            dry_run(job, raw)
        except KeyboardInterrupt:
            raise Interrupted("interrupted: a dry run stores nothing; run it again for the estimate") from None
        return []
    multirun, job_dir, overrides = _is_multirun()
    if multirun:
        # jobs of one sweep share the experiment name: their overrides tell them apart in tables and plots
        # shards of one run (dataset.shard=i/n) are one run: the shard does not name it
        swept = ",".join(o for o in overrides.split(",") if o and not o.startswith(("experiment=", "dataset.shard="))
                         and not _holds_secret(o))
        root.experiment_name = f"{root.experiment_name}[{swept}]" if swept else root.experiment_name
    tally = _Tally()
    try:
        outcomes = asyncio.run(_run(job, raw, multirun, job_dir, tally))  # the replay under bench.replay_gc
    except KeyboardInterrupt:
        # a sweep job and a question shard write shard files, merged into the results file only at the end
        where = _stored_in(root, multirun, job_dir)
        raise Interrupted(tally.interrupted_line(
            where if where == root.output.db else f"the shard files in {where}")) from None
    except StorageFailure as exc:  # one line: what failed, what is stored, what to do
        where = _stored_in(root, multirun, job_dir)
        raise exc.with_safe(tally.stored_clause(where)) from None
    nothing = tally.nothing_answered(outcomes)
    if nothing:
        raise NothingAnswered(nothing, outcomes)
    return outcomes


class NothingAnswered(UserError):
    """Every question this job attempted failed and none of its runs holds an answered question: the command
    exits 1 (the reasons are printed above and stored with the run); a partial failure exits 0. `outcomes`: what
    `run_job` would have returned."""

    exit_code = 1

    def __init__(self, line: str, outcomes: list[RunOutcome]) -> None:
        super().__init__(line)
        self.outcomes = outcomes


def _holds_secret(override: str) -> bool:
    """A swept override that sets a secret key or holds a hidden value (`${oc.env:OMBENCH_SECRET_...}`): it
    names no run."""
    key, _, value = override.partition("=")
    return is_secret_key(key) or "OMBENCH_SECRET_" in value or bool(secrets_in({"v": value}))


class _Tally:
    """What this job has stored so far, per strategy: for the line a Ctrl-C prints."""

    def __init__(self) -> None:
        self.runs: dict[str, dict[str, Any]] = {}  # run_key -> {strategy, planned, done before, written}
        self.errors: list[str] = []  # the stored error of every question that failed in this job

    def wrap(self, sink: ResultSink) -> ResultSink:
        return _TallySink(sink, self)

    def stored_clause(self, where: str) -> str:
        """What a failed job leaves stored, per strategy (finished questions are never lost)."""
        if not self.runs:
            return "no question of this job was stored"
        parts = [f"{r['strategy']} {r['before'] + r['written']}/{r['planned']} (+{r['written']} now)"
                 for r in self.runs.values()]
        return f"questions stored per strategy: {', '.join(parts)}, in {where}"

    def nothing_answered(self, outcomes: list[RunOutcome]) -> str | None:
        """The one line of a job in which every attempted question failed and no run holds an answered question
        (stored by this command or an earlier one); None when anything was answered or nothing failed."""
        failed = len(self.errors) + sum(o.failed for o in outcomes)  # stored with an error + raised before storing
        answered = sum(r["before"] + r["written"] for r in self.runs.values())
        if failed == 0 or answered > 0:
            return None
        return (f"every question of this run failed ({failed} failed, none answered); the reasons are listed above, "
                "in the run log and in the results file; fix the cause and re-run the same command")

    def interrupted_line(self, where: str) -> str:
        """`where`: what holds the finished questions (the results file, or a sweep job's / shard's files)."""
        if not self.runs:
            return "interrupted before any question was answered; nothing was stored"
        parts = [f"{r['strategy']} {r['before'] + r['written']}/{r['planned']} (+{r['written']} now)"
                 for r in self.runs.values()]
        return (f"interrupted: questions done per strategy: {', '.join(parts)}; every finished question is stored in "
                f"{where}: re-run the same command to resume")


class _TallySink:
    """A ResultSink that counts what it stores, passing everything through."""

    def __init__(self, inner: ResultSink, tally: _Tally) -> None:
        self.inner, self.tally = inner, tally

    def upsert_run(self, run: RunManifest) -> None:
        self.inner.upsert_run(run)
        self.tally.runs.setdefault(run.run_key, {"strategy": run.strategy, "planned": run.n_questions_planned or 0,
                                                 "before": 0, "written": 0})

    def done_ids(self, run_key: str) -> set[str]:
        done = self.inner.done_ids(run_key)
        if run_key in self.tally.runs:
            self.tally.runs[run_key]["before"] = len(done - self.inner.errored_ids(run_key))
        return done

    def errored_ids(self, run_key: str) -> set[str]:
        return self.inner.errored_ids(run_key)

    def errors(self, run_key: str) -> dict[str, str]:
        return self.inner.errors(run_key)

    def unjudged_ids(self, run_key: str) -> set[str]:
        return self.inner.unjudged_ids(run_key)

    def write_question(self, run_key: str, result: QuestionResult, *, replace: bool = False) -> bool:
        wrote = self.inner.write_question(run_key, result, replace=replace)
        if result.sample.error:
            self.tally.errors.append(result.sample.error)
        elif run_key in self.tally.runs:
            self.tally.runs[run_key]["written"] += 1
        return wrote

    def finish_run(self, run_key: str, status: str = "finished", notes: Mapping[str, Any] | None = None) -> None:
        self.inner.finish_run(run_key, status, notes)

    def close(self) -> None:
        self.inner.close()


def open_sink(root: RootCfg, multirun: bool, job_dir: Path | None) -> ResultSink:
    from bench.store import Store, SweepSink

    if multirun and job_dir is not None:
        # jobs of a sweep may run in parallel processes: each writes Parquet shards, merged at the end
        return SweepSink(job_dir / "shards", root.output.db)
    if root.dataset.shard:
        # one part of a run split across processes or machines: Parquet shards, merged by `ombench merge`
        return SweepSink(shard_folder(root), root.output.db)
    return Store(root.output.db)


def shard_folder(root: RootCfg) -> Path:
    """Where a `dataset.shard=i/n` job (not a sweep) writes its Parquet shards: output.dir/shards/part-i-of-n."""
    from bench.config import parse_shard

    i, n = parse_shard(str(root.dataset.shard))
    return Path(root.output.dir) / "shards" / f"part-{i}-of-{n}"

def _stored_in(root: RootCfg, multirun: bool, job_dir: Path | None) -> str:
    """Where this job's finished questions are written (`open_sink`): a sweep job's or a question shard's shard
    folder, else the results file."""
    if multirun and job_dir is not None:
        return str(job_dir / "shards")
    return str(shard_folder(root)) if root.dataset.shard else root.output.db


def _audit_skipped(root: RootCfg, multirun: bool) -> str | None:
    """Why judge.audit is not run after this job (None: it runs, or is off): it audits one judge against one
    results file, which a sweep job, a question shard and a dry run do not have."""
    if root.judge.audit <= 0:
        return None
    if root.dry_run:
        return "in a dry run"
    if multirun:
        return "in a sweep job (each job would audit the same judge)"
    if root.dataset.shard:
        return f"in a question shard (dataset.shard={root.dataset.shard})"
    return None

async def _run(job: Job, raw: dict[str, Any], multirun: bool, job_dir: Path | None,
               tally: _Tally | None = None) -> list[RunOutcome]:
    from bench.replay_gc import replay_gc
    from bench.runner.experiment import load_data

    ds = load_data(job)
    with replay_gc():  # the loaded dataset frozen, young collections less often
        return await _run_loaded(job, ds, raw, multirun, job_dir, tally)


async def _run_loaded(job: Job, ds: Dataset, raw: dict[str, Any], multirun: bool, job_dir: Path | None,
                      tally: _Tally | None) -> list[RunOutcome]:
    from bench.runner.budget import Budget
    from bench.runner.experiment import run_strategy
    from bench.runner.progress import Progress

    root = job.cfg
    sink = open_sink(root, multirun, job_dir)
    if tally is not None:
        sink = tally.wrap(sink)
    gateway = job.make_gateway()
    outcomes: list[RunOutcome] = []
    budget = Budget(root.run.max_usd)  # run.max_usd caps the whole job, every strategy together
    failed = True
    audit: dict[str, Any] | None = None
    try:
        with Progress(root.run.progress, profile=_headline_profile(root)) as progress:
            for strategy in root.run_strategies:
                outcome = await run_strategy(job, ds, strategy, sink, gateway, raw, progress, budget=budget)
                outcomes.append(outcome)
                if outcome.stopped:  # the next strategies would call the same models
                    break
        skipped_audit = _audit_skipped(root, multirun)
        if skipped_audit:
            from bench.notices import warn

            warn(f"judge.audit={root.judge.audit} is not run {skipped_audit}; run `ombench judge-audit --n "
                 f"{root.judge.audit}` with the same judge settings once the results are in one file")
        elif root.judge.audit > 0:
            from bench.evaluate.judge_audit import audit_job

            _, audit = await audit_job(job, ds, gateway, n=root.judge.audit)  # judge.audit: stored below
        failed = False
    finally:
        await gateway.aclose()
        try:
            sink.close()
        except StorageFailure:
            if not failed:
                raise
            # else closing the file that failed: the failure that matters is already on its way
    from bench.runner.digest import print_digest

    if audit is not None:  # beside the accuracy it qualifies: the summary below reads it
        from bench.store import Store

        store = Store(root.output.db)
        try:
            store.record_judge_audit(audit)
        finally:
            store.close()

    if not multirun and root.dataset.shard:
        from bench.store.shards import merge_command

        print(f"shard {root.dataset.shard}: {sum(o.computed for o in outcomes)} questions written to "
              f"{shard_folder(root)}; when every shard has finished: "
              f"{merge_command(Path(root.output.dir) / 'shards', root.output.db)}")
    elif not multirun:
        from bench.runner.summary import print_summary

        print_summary(root.output.db, [o.run_key for o in outcomes], n_dataset=len(ds), split=ds.split,
                      profile=root.output.report_profile, failures=False)  # the digest says them
    print_digest(job, ds, outcomes, tally.errors if tally is not None else [])
    if not multirun and root.output.report and not root.dataset.shard:
        from bench.report import write_report

        write_report(root.output.db, report_folder(root.output), profile=root.output.report_profile)
    return outcomes


def _headline_profile(root: RootCfg) -> str:
    want = root.output.report_profile
    return want if want in root.cachesim.profiles else (root.cachesim.profiles[0] if root.cachesim.profiles else "")


__all__ = ["Interrupted", "run_job", "open_sink"]
