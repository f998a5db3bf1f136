"""Resource-scope observation: one record per resource, per-thread cursors, parallel batches of threads
observed with the multi-thread Observer prompt, results merged as `<thread id>` sections.

Rules from mastra-ai/mastra, packages/memory/src/processors/observational-memory/observation-strategies/
resource-scoped.ts. The step sees the orchestrator only as an `EngineContext`.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import datetime

from om_core.context import message_boundary
from om_core.engine.observe import observer_kwargs, prior_metadata
from om_core.engine.state import EngineContext, Status
from om_core.observer import ObserverOutput, ThreadSection, observe
from om_core.records import ThreadMeta
from om_core.scopes import display_id, merge_thread_sections, select_threads
from om_core.types import Message


async def observe_resource(om: EngineContext, st: Status, now: datetime, events: list[str]) -> list[Message]:
    """Observe the largest threads of the resource until the threshold is covered. Returns the messages of
    the current thread that were observed."""
    cfg = om.config
    rec = st.record
    pending = {st.thread_id: list(st.unobserved), **{t: list(ms) for t, ms in st.others.items()}}
    pending = {t: ms for t, ms in pending.items() if ms}
    if not pending:
        return []
    counts = {t: om.tokens.total(ms) for t, ms in pending.items()}
    oldest = {t: ms[0].created_at for t, ms in pending.items()}
    batches = select_threads(counts, oldest, st.threshold, cfg.observation.max_tokens_per_batch)
    metas = {t.thread_id: t for t in om.storage.list_threads(rec.resource_id)}
    obscure = cfg.obscure_thread_ids
    shown = {t: display_id(t, obscure) for t in pending}
    existing = rec.active_observations
    kw = observer_kwargs(om)

    async def run(batch_ids: tuple[str, ...]) -> tuple[tuple[str, ...], ObserverOutput]:
        threads = {shown[t]: pending[t] for t in batch_ids}
        prior: dict[str, str] = {}
        if cfg.profile == "m31" and len(batch_ids) == 1:
            prior = prior_metadata(metas.get(batch_ids[0]))
        return batch_ids, await observe(om.observer, cfg.profile, existing_observations=existing, threads=threads,
                                        prior_metadata=prior or None, **kw)

    results = await asyncio.gather(*(run(b.thread_ids) for b in batches))

    sections: list[tuple[str, str]] = []
    boundaries: list[str] = []  # one per section, stamped with that thread's newest observed message
    new_metas: list[ThreadMeta] = []
    newest_all = rec.last_observed_at
    for batch_ids, out in results:
        parsed = dict(out.threads)
        if not parsed and out.observations.strip() and len(batch_ids) == 1:
            # a model that ignored the thread tags: one thread in the batch, so attribution is unambiguous
            parsed = {shown[batch_ids[0]]: ThreadSection(out.observations, out.current_task, out.suggested_response)}
        for tid in batch_ids:
            sec = parsed.get(shown[tid])
            newest = max(pending[tid], key=lambda m: m.created_at)
            if sec is not None and sec.observations.strip():
                body = sec.observations
                if cfg.retrieval.enabled:
                    body = om.group(body, pending[tid])
                sections.append((shown[tid], body))
                boundaries.append(message_boundary(newest.created_at))
            newest_all = newest.created_at if newest_all is None else max(newest_all, newest.created_at)
            meta = metas.get(tid) or ThreadMeta(tid, rec.resource_id, now, now)
            meta = replace(meta, last_observed_at=newest.created_at, last_observed_message_cursor=newest.id,
                           updated_at=now)
            if sec is not None:
                meta = replace(meta, current_task=sec.current_task, suggested_response=sec.suggested_response)
            new_metas.append(meta)
    merged = merge_thread_sections(existing, sections, boundaries)
    tokens = om.counter.count_string(merged)
    observed_ids = [m.id for b in batches for t in b.thread_ids for m in pending[t]]
    new = om.storage.update_active_observations(
        rec.id, observations=merged, token_count=tokens, last_observed_at=newest_all, now=now,
        observed_message_ids=observed_ids, expected_last_observed_at=rec.last_observed_at, thread_metas=new_metas)
    if new is None:
        return []
    events.append("observe")
    chosen = {t for b in batches for t in b.thread_ids}
    return list(pending.get(st.thread_id, [])) if st.thread_id in chosen else []
