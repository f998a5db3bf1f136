"""One Hydra job: validate the config, run (or dry-run) every configured strategy, write the store, summarise."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any, cast

from bench.config import RootCfg, validate
from bench.runner.budget import Budget
from bench.runner.experiment import RunOutcome, load_data, make_gateway, run_strategy
from bench.runner.progress import Progress
from bench.runner.runlog import log_config
from bench.store.contract import ResultSink


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
    from omegaconf import OmegaConf

    raw: dict[str, Any] = dict(cfg) if isinstance(cfg, dict) else cast(dict[str, Any], OmegaConf.to_container(cfg, resolve=True))
    raw.pop("hydra", None)
    root = validate(raw)
    log_config(raw)
    if root.dry_run:
        from bench.runner.dryrun import dry_run

        dry_run(root, raw)
        return []
    from bench.runner.local_servers import check_local_servers

    for warning in check_local_servers(root):  # self-hosted servers: what they serve, and whether calls fit
        print(f"ombench: warning: {warning}", file=sys.stderr)
    multirun, job_dir, overrides = _is_multirun()
    if multirun:
        # jobs of one sweep share the experiment name: their overrides tell them apart in tables and plots
        swept = ",".join(o for o in overrides.split(",") if o and not o.startswith("experiment="))
        root.experiment_name = f"{root.experiment_name}[{swept}]" if swept else root.experiment_name
    return asyncio.run(_run(root, raw, multirun, job_dir))


def open_sink(root: RootCfg, multirun: bool, job_dir: Path | None) -> ResultSink:
    from bench.store import Store, SweepSink

    if multirun and job_dir is not None:
        # jobs of a sweep may run in parallel processes: each writes Parquet shards, merged at the end
        return SweepSink(job_dir / "shards", root.output.db)
    return Store(root.output.db)


async def _run(root: RootCfg, raw: dict[str, Any], multirun: bool, job_dir: Path | None) -> list[RunOutcome]:
    ds = load_data(root)
    gateway = make_gateway(root)
    sink = open_sink(root, multirun, job_dir)
    outcomes: list[RunOutcome] = []
    budget = Budget(root.run.max_usd)  # run.max_usd caps the whole job, every strategy together
    try:
        with Progress(root.run.progress, profile=_headline_profile(root)) as progress:
            for strategy in root.run_strategies:
                outcomes.append(await run_strategy(root, ds, strategy, sink, gateway, raw, progress, budget=budget))
    finally:
        await gateway.aclose()
        sink.close()
    for o in outcomes:
        for e in o.errors[:5]:
            print(f"[{o.strategy}] failed {e}", file=sys.stderr)
    if not multirun:
        from bench.runner.summary import print_summary

        print_summary(root.output.db, [o.run_key for o in outcomes], n_dataset=len(ds.instances), split=ds.split,
                      profile=root.output.report_profile)
        if root.output.report:
            from bench.report import write_report

            write_report(root.output.db, root.output.report_dir, profile=root.output.report_profile)
    return outcomes


def _headline_profile(root: RootCfg) -> str:
    want = root.output.report_profile
    return want if want in root.cachesim.profiles else (root.cachesim.profiles[0] if root.cachesim.profiles else "")
