"""The reproducibility manifest stored with every run: code, packages, data, tokenizer, prices, config."""

from __future__ import annotations

import importlib.metadata as md
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.runner.keys import run_spec
from bench.store.contract import RunManifest
from bench.secrets import redact

if TYPE_CHECKING:
    from bench.assemble import Job
    from bench.data.dataset import Dataset

_PACKAGES = ("om-bench", "litellm", "tiktoken", "duckdb", "hydra-core", "pandas", "matplotlib", "rank-bm25")
TOKENIZER = "o200k_base"  # om_core.tokens counts every prompt with it


def git_state(root: Path | None = None) -> tuple[str | None, bool | None]:
    """(commit sha, dirty?) of the checkout the code runs from; (None, None) outside a git checkout."""
    root = root or Path(__file__).resolve().parents[2]
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                    capture_output=True, text=True, timeout=10).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return None, None
    return (sha, dirty) if sha else (None, None)


def package_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for p in _PACKAGES:
        try:
            out[p] = md.version(p)
        except md.PackageNotFoundError:
            out[p] = None
    return out


def price_map_label(info: dict[str, Any]) -> str:
    """A short, stable name of the price map in use, e.g. `litellm-1.110.2/local@c8f11f1b697e`."""
    rev = info.get("source_revision")
    return f"litellm-{info.get('litellm_version')}/{info.get('source')}" + (f"@{str(rev)[:12]}" if rev else "")


def build_manifest(job: Job, ds: Dataset, strategy: str, key: str, raw_cfg: dict[str, Any]) -> RunManifest:
    """The `runs` row of one strategy over one dataset under one job config."""
    from bench.evaluate.judge import judge_protocol
    from bench.gateway.usage import price_map_version
    from bench.store.run_names import new_run_name

    cfg = job.cfg
    commit, dirty = git_state()
    prices = price_map_version()
    from bench.evaluate.judge import PANEL_RULE

    judge = judge_protocol(job.judge.templates, job.judge.parse)
    panel = {"judge_panel": {"models": [cfg.model.judge.model, *job.judge.panel], "rule": PANEL_RULE}} \
        if job.judge.panel else {}
    return RunManifest(
        run_key=key, name=cfg.experiment_name, strategy=strategy, config=redact(raw_cfg),
        git_commit=commit, git_dirty=dirty, package_versions=package_versions(),
        dataset_name=ds.name, dataset_sha256=ds.sha256, dataset_split=ds.split,
        n_questions_planned=ds.planned, tokenizer=TOKENIZER, price_map_version=price_map_label(prices),
        actor_model=cfg.model.actor.model, judge_model=cfg.model.judge.model,
        extra={"spec": redact(run_spec(job, strategy, ds.sha256, ds.subset_ids)), "dataset_official": ds.official,
               "benchmark": cfg.dataset.benchmark, "isolation_unit": job.benchmark.isolation_unit,
               "dataset_path": str(ds.path) if ds.path else None, "subset_ids": ds.subset_ids, "price_map": prices,
               "judge": judge, **panel, "run_name": new_run_name(key, cfg.experiment_name, strategy, ds.split or ds.name,
                                                          len(ds.subset_ids) if ds.subset_ids else None),
               # a part of a run split across processes: merge_shards combines the parts' rows (bench.store.shard_runs)
               **({"shard": f"{ds.shard[0]}/{ds.shard[1]}"} if ds.shard else {})},
    )
