"""One Hydra job: validate the config, run (or dry-run) every configured strategy, write the store, summarise."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from bench.config import RootCfg, validate
from bench.runner.experiment import RunOutcome, load_data, make_gateway, run_strategy
from bench.runner.progress import Progress


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

    raw = OmegaConf.to_container(cfg, resolve=True) if not isinstance(cfg, dict) else dict(cfg)
    raw.pop("hydra", None)
    root = validate(raw)
    if root.dry_run:
        from bench.runner.dryrun import dry_run

        dry_run(root, raw)
        return []
    multirun, job_dir, overrides = _is_multirun()
    if multirun:
        # jobs of one sweep share the experiment name: their overrides tell them apart in tables and plots
        swept = ",".join(o for o in overrides.split(",") if o and not o.startswith("experiment="))
        root.experiment_name = f"{root.experiment_name}[{swept}]" if swept else root.experiment_name
    return asyncio.run(_run(root, raw, multirun, job_dir))


def open_store(root: RootCfg, multirun: bool, job_dir: Path | None):
    from bench.store import Store

    if multirun and job_dir is not None:
        # jobs of a sweep may run in parallel processes: each writes Parquet shards, merged at the end
        return ResumingShardWriter(job_dir / "shards", root.output.db)
    Path(root.output.db).parent.mkdir(parents=True, exist_ok=True)
    return Store(root.output.db)


async def _run(root: RootCfg, raw: dict[str, Any], multirun: bool, job_dir: Path | None) -> list[RunOutcome]:
    ds = load_data(root)
    gateway = make_gateway(root)
    store = open_store(root, multirun, job_dir)
    outcomes: list[RunOutcome] = []
    try:
        with Progress(root.run.progress, profile=_headline_profile(root)) as progress:
            for strategy in root.run_strategies:
                outcomes.append(await run_strategy(root, ds, strategy, store, gateway, raw, progress))
    finally:
        await gateway.aclose()
        store.close()
    for o in outcomes:
        for e in o.errors[:5]:
            print(f"[{o.strategy}] failed {e}", file=sys.stderr)
    if not multirun:
        from bench.runner.summary import print_summary

        print_summary(root.output.db, [o.run_key for o in outcomes], n_dataset=len(ds.instances), split=ds.split)
        if root.output.report:
            from bench.report import build_report

            build_report(root.output.db, root.output.report_dir)
            print(f"report: {Path(root.output.report_dir) / 'report.md'}")
    return outcomes


def _headline_profile(root: RootCfg) -> str:
    return "openai" if "openai" in root.cachesim.profiles else (root.cachesim.profiles[0] if root.cachesim.profiles else "")


class ResumingShardWriter:
    """Shard writer whose 'done' set also includes questions already merged into the results database, so a
    re-run sweep whose shards were cleaned up still computes nothing twice."""

    def __init__(self, folder: Path, db_path: str) -> None:
        from bench.store import ShardWriter

        self._w = ShardWriter(folder)
        self._db = db_path

    def done_question_ids(self, run_key: str) -> set[str]:
        done = set(self._w.done_question_ids(run_key))
        if Path(self._db).exists():
            import duckdb

            try:
                con = duckdb.connect(self._db, read_only=True)
            except duckdb.Error:  # locked by a writer: shards alone decide
                return done
            try:
                done |= {r[0] for r in con.execute("SELECT question_id FROM samples WHERE run_key = ?", [run_key]).fetchall()}
            except duckdb.Error:
                pass
            finally:
                con.close()
        return done

    def __getattr__(self, name: str):
        return getattr(self._w, name)
