"""Deterministic keys: a run key per (job config, strategy) and an ingestion key per memory state.

The run key hashes everything that changes a sample's result, so re-running the same command finds its rows
and computes only what is missing. The ingestion key hashes only what changes the memory after replay, so a
new actor or judge reuses the same ingestion ("ingest once, answer many", as Mastra did). Neither ever sees a
secret (bench.secrets.without_secrets): a rotated key computes nothing again."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from typing import TYPE_CHECKING

from bench.roles import Role
from bench.secrets import without_secrets

if TYPE_CHECKING:
    from bench.assemble import Job
    from bench.config import RootCfg


def as_job(job: Job | RootCfg) -> Job:
    """The assembled job (a bare config is assembled: tests and tools may pass one)."""
    from bench.assemble import Job, assemble

    return job if isinstance(job, Job) else assemble(job)


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def short_hash(obj: Any, n: int = 16) -> str:
    return hashlib.sha256(canonical(obj).encode()).hexdigest()[:n]


Endpoints = dict[str, dict[str, str]]  # role -> {base, served}: a self-hosted server and the model it serves


def _role(job: Job, role: Role, endpoints: Endpoints | None = None) -> dict[str, Any]:
    rm = job.cfg.model.role(role)
    # a key or password among the params is not part of what ran: rotating it recomputes nothing
    out: dict[str, Any] = {"model": rm.model, "params": without_secrets(rm.params)}
    if endpoints and role.value in endpoints:  # another server, or another model behind the same name: new key
        out["endpoint"] = endpoints[role.value]
    return out


def ingest_spec(job: Job | RootCfg, strategy: str, dataset_sha: str, endpoints: Endpoints | None = None) -> dict[str, Any]:
    """What determines the memory state and the turn series after replaying a haystack.

    Read from the strategy's declarations (`bench.strategies.StrategyBase`), never from its name: its
    resolved key params, the models of the roles it calls (with the self-hosted server and served model behind
    each, `endpoints`), and the reader settings only when it renders the reader prompt; the cache profiles and
    the Actor's per-model cache settings (not its prices). Raises ConfigError for an unknown strategy or a bad
    param."""
    job = as_job(job)
    cfg, spec = job.cfg, job.spec(strategy)
    settings = spec.settings
    out: dict[str, Any] = {
        "dataset_sha256": dataset_sha,
        "strategy": spec.kind,
        "params": spec.key_params(),
        "models": {str(r): _role(job, r, endpoints) for r in sorted(spec.roles)},
        "replay": {"turn_offset_s": settings.turn_offset_s, "think_time_s": settings.think_time_s},
        "system_prompt": settings.system_prompt,
        "cachesim": {"profiles": cfg.cachesim.profiles, "params": cfg.cachesim.params,
                     # the Actor model only through what it changes in the simulated token counts (prices are
                     # applied per run, bench.cachesim.CachePricing)
                     "actor": job.cache.token_settings(settings.actor_model)},
    }
    if spec.cls.renders_reader_prompt:
        # the benchmark's reader prompt is cut to the Actor's window minus the answer budget: both shape the
        # prompts, and so does the prompt's own wording (its hash)
        from bench.benchmarks import reader_of

        sha = reader_of(settings).reader_text_sha256(getattr(spec.params, "method", settings.method),
                                                      getattr(spec.params, "history_format", settings.history_format))
        out["reader"] = {"window": settings.max_input_tokens, "output_budget": settings.output_budget,
                         "text_sha256": sha}
    return out


def judge_spec(job: Job | RootCfg, endpoints: Endpoints | None = None) -> dict[str, Any]:
    """What decides a label besides the answer: the judge's model and params (and the served model behind a
    local endpoint), the exact template text (builtin or the official file's, as a hash), the parse rule and
    the number of repeats. Reads the official file (a checkout, or the cached pinned download) when
    judge.source=official; raises ConfigError without it."""
    job = as_job(job)
    j = job.judge
    out = {**_role(job, Role.JUDGE, endpoints), "source": j.source, "templates_sha256": j.templates.sha256,
           "parse": j.parse, "repeats": j.repeats}
    if j.panel:  # only a panel run gets the key: every other run keeps its key
        out["panel"] = {"models": list(j.panel), "rule": "strict majority"}
    return out


def retry_policy(job: Job | RootCfg, strategy: str) -> Any:
    """answer.retries as it applies to `strategy` (bench.evaluate.retries.RetryPolicy; disabled for a strategy
    without a question thread of its own)."""
    from bench.evaluate.retries import RetryPolicy, strategy_retries

    job = as_job(job)
    if not strategy_retries(job.spec(strategy).params):
        return RetryPolicy()
    return RetryPolicy.of(job.cfg.answer.retries)


def run_spec(job: Job | RootCfg, strategy: str, dataset_sha: str, subset_ids: list[str] | None,
             endpoints: Endpoints | None = None) -> dict[str, Any]:
    job = as_job(job)
    cfg = job.cfg
    answer: dict[str, Any] = {"method": cfg.answer.method, "history_format": cfg.answer.history_format,
                              "max_tokens": cfg.answer.max_tokens, "temperature": cfg.answer.temperature}
    policy = retry_policy(job, strategy)
    if policy.enabled:  # only a retrying run gets the key: every other run keeps its key
        answer["retries"] = policy.spec()
    return {
        "ingest": ingest_spec(job, strategy, dataset_sha, endpoints),
        "dataset": {"name": cfg.dataset.name, "subset": subset_ids},
        "actor": _role(job, Role.ACTOR, endpoints),
        "judge": judge_spec(job, endpoints),
        "answer": answer,
        "epoch": cfg.run.epoch,
    }


def run_key(job: Job | RootCfg, strategy: str, dataset_sha: str, subset_ids: list[str] | None,
            endpoints: Endpoints | None = None) -> str:
    return f"{strategy}-{short_hash(run_spec(job, strategy, dataset_sha, subset_ids, endpoints))}"


def ingest_key(job: Job | RootCfg, strategy: str, dataset_sha: str, endpoints: Endpoints | None = None) -> str:
    return f"{strategy}-{short_hash(ingest_spec(job, strategy, dataset_sha, endpoints))}"
