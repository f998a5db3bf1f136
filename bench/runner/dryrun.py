"""Dry run: replay a sample with the offline engine, price every call with the configured real models, and
print the expected calls, tokens and dollars per role before any money is spent. Asks nothing of the network."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import replace
from typing import Any, Mapping

from bench.assemble import Job
from bench.roles import Role
from bench.runner.experiment import load_data, run_strategy
from bench.runner.progress import Progress
from bench.store.contract import CallRow, QuestionResult, RunManifest

# which simulated cache stands for a provider's real prompt cache when estimating the actor's cached tokens
_PROVIDER_PROFILE = {"openai": "openai", "anthropic": "anthropic", "deepseek": "openai", "gemini": None}


class _MemorySink:
    """A `ResultSink` that keeps the calls in memory: a dry run writes nothing to the results database."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, CallRow]] = []

    def upsert_run(self, run: RunManifest) -> None: ...

    def done_ids(self, run_key: str) -> set[str]:
        return set()

    def errored_ids(self, run_key: str) -> set[str]:
        return set()

    def errors(self, run_key: str) -> dict[str, str]:
        return {}

    def unjudged_ids(self, run_key: str) -> set[str]:
        return set()

    def write_question(self, run_key: str, result: QuestionResult, *, replace: bool = False) -> bool:
        self.calls.extend((run_key, c) for c in result.calls)
        return True

    def finish_run(self, run_key: str, status: str = "finished", notes: Mapping[str, Any] | None = None) -> None: ...

    def close(self) -> None: ...


def estimate(job: Job, calls: list[CallRow], scale: float) -> list[dict[str, Any]]:
    """Aggregate real (non-simulated) calls per role and price them with the configured models."""
    from bench.gateway.config import provider_of
    from bench.gateway.usage import estimate_cost

    acc: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    models: dict[str, str] = {}
    for c in calls:
        if c.simulated:
            continue  # turn prompts of the simulated live agent are measured, never sent
        role = Role.parse(c.role)
        label = role.value if role else c.role
        model = job.cfg.model.role(role).model if role else c.model
        models[label] = model
        prof = _PROVIDER_PROFILE.get(provider_of(model))
        cached = float((c.cache.get(prof) or {}).get("cached", 0)) if prof and role is Role.ACTOR else 0.0
        a = acc[label]
        a["calls"] += 1
        a["prompt"] += c.prompt_tokens
        a["cached"] += cached
        a["output"] += c.completion_tokens
        a["usd"] += estimate_cost(model, c.prompt_tokens, c.completion_tokens, int(cached))
    rows = []
    for label, a in sorted(acc.items()):
        rows.append({
            "role": label, "model": models[label],
            "calls": a["calls"] * scale, "prompt_tokens": a["prompt"] * scale, "cached_tokens": a["cached"] * scale,
            "prefill_tokens": (a["prompt"] - a["cached"]) * scale, "output_tokens": a["output"] * scale,
            "usd": a["usd"] * scale,
        })
    return rows


def retries_line(job: Job, strategy: str, calls: list[CallRow], n_replayed: int, ids: Any) -> str | None:
    """The worst case of answer.retries for `strategy` (None when it does not retry): every question that may
    retry answered wrongly every time, i.e. `max` more tries (Actor answer + judge) each, priced as the replayed
    first tries cost on average; beside it, the retries the table holds (those the offline engine's answers
    needed, scaled like the table)."""
    from bench.runner.keys import retry_policy

    policy = retry_policy(job, strategy)
    if not policy.enabled:
        return None
    first: list[CallRow] = []
    again: list[CallRow] = []
    last = ""
    for c in calls:  # a judge call belongs to the Actor call before it: the first answer's, or a retry's
        if c.phase in ("answer", "retry"):
            last = c.phase
        if c.phase in ("answer", "retry", "judge"):
            (first if last == "answer" else again).append(c)
    ids = list(ids)
    scale = len(ids) / max(1, n_replayed)
    one_try = sum(r["usd"] for r in estimate(job, first, 1.0)) / max(1, n_replayed)
    n = sum(1 for q in ids if policy.may_retry(q))
    which = "every question" if policy.flags is None else f"the {n} flagged questions (answer.retries.flags_file)"
    tries = sum(1 for c in again if c.phase == "retry") * scale
    in_table = sum(r["usd"] for r in estimate(job, again, scale))
    return (f"retries (answer.retries.max={policy.max}): worst case, {which} answered wrongly every time: "
            f"{policy.max * n:,} tries (answer + judge), ~${policy.max * n * one_try:,.2f}; the table holds the "
            f"{tries:,.0f} tries the offline engine's answers needed (~${in_table:,.2f}). run.max_usd plans for "
            "the worst case.")


def dry_run(job: Job, raw: dict[str, Any]) -> list[dict[str, Any]]:
    """Replay a sample with the offline engine in every role (`Job.offline`: the strategies resolved for the
    models now called, no response cache, no checkpoints, the builtin judge wording when the official file is
    not at hand) and print the expected calls, tokens and dollars per role of the configured models."""
    root = job.cfg
    ds_full = load_data(job)
    n_total = len(ds_full)
    ds = ds_full
    if root.dry_run_sample and root.dry_run_sample < n_total:
        ds = ds_full.subset(sample=root.dry_run_sample, seed=root.dataset.seed)
    scale = n_total / max(1, len(ds))
    offline = job.offline(output=replace(root.output, response_cache_policy="off"),
                          run=replace(root.run, checkpoints=False))
    store = _MemorySink()

    async def go() -> None:
        gw = offline.make_gateway()
        try:
            with Progress(root.run.progress) as progress:
                for s in root.run_strategies:
                    await run_strategy(offline, ds, s, store, gw, raw, progress, dry_run=True)
        finally:
            await gw.aclose()

    from bench.replay_gc import replay_gc

    with replay_gc():  # the loaded dataset frozen, young collections less often
        asyncio.run(go())
    rows_all: list[dict[str, Any]] = []
    print(f"\nDRY RUN — experiment {root.experiment_name}: {n_total} questions of {ds_full.name} ({ds_full.split}); "
          f"replayed {len(ds)} with the offline engine (not an LLM), scaled ×{scale:.2f}.")
    print("Token counts come from the offline engine's real inputs; output tokens of real models may differ "
          f"(actor: {'no cap (answer.max_tokens=null)' if root.answer.max_tokens is None else f'at most {root.answer.max_tokens}'} per answer). Prices: litellm's local price map.")
    for s in root.run_strategies:
        calls = [c for k, c in store.calls if k.startswith(f"dryrun-{s}-")]
        rows = estimate(job, calls, scale)
        rows_all.extend({**r, "strategy": s} for r in rows)
        print(f"\n[{s}]")
        resolved = job.spec(s).resolved
        if hasattr(resolved, "texts_source"):
            print(f"Observer/Reflector texts: {resolved.texts_source()}")
        print(f"{'role':<11}{'model':<34}{'calls':>9}{'prompt':>14}{'cached':>13}{'prefill':>14}{'output':>12}{'USD':>11}")
        tot: defaultdict[str, float] = defaultdict(float)
        for r in rows:
            print(f"{r['role']:<11}{r['model'][:33]:<34}{r['calls']:>9.0f}{r['prompt_tokens']:>14,.0f}{r['cached_tokens']:>13,.0f}"
                  f"{r['prefill_tokens']:>14,.0f}{r['output_tokens']:>12,.0f}{r['usd']:>11.2f}")
            for k in ("calls", "prompt_tokens", "cached_tokens", "prefill_tokens", "output_tokens", "usd"):
                tot[k] += r[k]
        print(f"{'total':<45}{tot['calls']:>9.0f}{tot['prompt_tokens']:>14,.0f}{tot['cached_tokens']:>13,.0f}"
              f"{tot['prefill_tokens']:>14,.0f}{tot['output_tokens']:>12,.0f}{tot['usd']:>11.2f}")
        line = retries_line(job, s, calls, len(ds), ds_full.question_ids())
        if line:
            print(line)
    return rows_all
