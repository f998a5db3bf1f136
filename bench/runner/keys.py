"""Deterministic keys: a run key per (job config, strategy) and an ingestion key per memory state.

The run key hashes everything that changes a sample's result, so re-running the same command finds its rows
and computes only what is missing. The ingestion key hashes only what changes the memory after replay, so a
new actor or judge reuses the same ingestion ("ingest once, answer many", as Mastra did)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from bench.config import RootCfg


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def short_hash(obj: Any, n: int = 16) -> str:
    return hashlib.sha256(canonical(obj).encode()).hexdigest()[:n]


def _role(cfg: RootCfg, role: str) -> dict[str, Any]:
    rm = getattr(cfg.model, role)
    return {"model": rm.model, "params": rm.params}


def ingest_spec(cfg: RootCfg, strategy: str, dataset_sha: str) -> dict[str, Any]:
    """What determines the memory state after replaying a haystack."""
    s = cfg.strategies[strategy]
    spec: dict[str, Any] = {
        "dataset_sha256": dataset_sha,
        "strategy": strategy,
        "params": s.params,
        "replay": {"turn_offset_s": cfg.replay.turn_offset_s, "await_background": cfg.replay.await_background},
        "system_prompt": cfg.answer.system_prompt,
        "think_time_s": cfg.replay.think_time_s,
        "cachesim": {"profiles": cfg.cachesim.profiles, "params": cfg.cachesim.params},
    }
    if strategy in ("full_context", "oracle"):
        # these render the official reader prompt and truncate to the actor's window: both shape the prompts
        spec["reader"] = {"method": cfg.answer.method, "history_format": cfg.answer.history_format,
                          "window": cfg.model.actor_max_input_tokens, "output_budget": cfg.answer.max_tokens}
    if strategy == "om":
        spec["observer"] = _role(cfg, "observer")
        spec["reflector"] = _role(cfg, "reflector")
    elif strategy == "compaction":
        spec["summarizer"] = _role(cfg, "summarizer")
    elif strategy == "rag" and s.params.get("retriever") == "dense":
        spec["embedder"] = _role(cfg, "embedder")
    return spec


def run_spec(cfg: RootCfg, strategy: str, dataset_sha: str, subset_ids: list[str] | None) -> dict[str, Any]:
    return {
        "ingest": ingest_spec(cfg, strategy, dataset_sha),
        "dataset": {"name": cfg.dataset.name, "subset": subset_ids},
        "actor": _role(cfg, "actor"),
        "judge": {**_role(cfg, "judge"), "source": cfg.judge.source, "repeats": cfg.judge.repeats},
        "answer": {"method": cfg.answer.method, "history_format": cfg.answer.history_format,
                   "max_tokens": cfg.answer.max_tokens, "temperature": cfg.answer.temperature},
        "epoch": cfg.run.epoch,
    }


def run_key(cfg: RootCfg, strategy: str, dataset_sha: str, subset_ids: list[str] | None) -> str:
    return f"{strategy}-{short_hash(run_spec(cfg, strategy, dataset_sha, subset_ids))}"


def ingest_key(cfg: RootCfg, strategy: str, dataset_sha: str) -> str:
    return f"{strategy}-{short_hash(ingest_spec(cfg, strategy, dataset_sha))}"
