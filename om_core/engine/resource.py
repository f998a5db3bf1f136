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
from om_core.engine.observe import prior_metadata, run_observer
from om_core.engine.state import EngineContext, Rejection, Status, TurnLog
from om_core.engine.working import apply_updates, observer_working_memory
from om_core.observer import ObserverOutput, ThreadSection
from om_core.records import ThreadMeta
from om_core.scopes import display_id, merge_thread_sections, select_threads
from om_core.types import Message

MISSING_SECTION = "missing_thread_section"  # a multi-thread output without observations for a thread


async def observe_resource(om: EngineContext, st: Status, now: datetime, events: TurnLog) -> list[Message]:
    """Observe the largest threads of the resource until the threshold is covered. Returns the messages of
    the current thread that were observed.

    A thread advances its cursor only when the Observer returned observations for it: a batch whose output
    was refused, or a thread missing from the output (no `<thread id>` section), stays unobserved and is
    observed again at a later step; each is recorded as a rejection."""
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
    working = observer_working_memory(om, rec.resource_id)

    async def run(batch_ids: tuple[str, ...]) -> tuple[tuple[str, ...], ObserverOutput | None]:
        threads = {shown[t]: pending[t] for t in batch_ids}
        per_thread: dict[str, dict[str, str]] = {}
        if cfg.profile == "m31":  # each thread's prior hints (Mastra's multi-thread task prompt)
            per_thread = {shown[t]: hints for t in batch_ids if (hints := prior_metadata(metas.get(t)))}
        return batch_ids, await run_observer(om, events, "observation", rec.lookup_key, batch_ids, now,
                                             existing_observations=existing, threads=threads,
                                             thread_metadata=per_thread or None, **working)

    results = await asyncio.gather(*(run(b.thread_ids) for b in batches))

    sections: list[tuple[str, str]] = []
    boundaries: list[str] = []  # one per section, stamped with that thread's newest observed message
    new_metas: list[ThreadMeta] = []
    observed: list[str] = []  # threads whose messages became observations
    newest_all = rec.last_observed_at
    for batch_ids, out in results:
        if out is None:
            continue  # refused (recorded by run_observer): the whole batch stays unobserved
        parsed = dict(out.threads)
        if not parsed and out.observations.strip() and len(batch_ids) == 1:
            # a model that ignored the thread tags: one thread in the batch, so attribution is unambiguous
            parsed = {shown[batch_ids[0]]: ThreadSection(out.observations, out.current_task, out.suggested_response)}
        missing = []
        for tid in batch_ids:
            sec = parsed.get(shown[tid])
            if sec is None or not sec.observations.strip():
                missing.append(tid)
                continue
            newest = max(pending[tid], key=lambda m: m.created_at)
            body = om.group(sec.observations, pending[tid]) if cfg.retrieval.enabled else sec.observations
            sections.append((shown[tid], body))
            # m31 stamps each appended section with a message boundary; Mastra 1.1.0 appends with a blank line
            boundaries.append(message_boundary(newest.created_at) if cfg.profile == "m31" else "\n\n")
            newest_all = newest.created_at if newest_all is None else max(newest_all, newest.created_at)
            meta = metas.get(tid) or ThreadMeta(tid, rec.resource_id, now, now)
            new_metas.append(replace(meta, last_observed_at=newest.created_at, last_observed_message_cursor=newest.id,
                                     current_task=sec.current_task, suggested_response=sec.suggested_response,
                                     updated_at=now))
            observed.append(tid)
        if missing:
            om.reject(events, Rejection("observation", MISSING_SECTION, rec.lookup_key, tuple(missing), om.now(now)))
    if not observed:
        return []
    merged = merge_thread_sections(existing, sections, boundaries)
    tokens = om.counter.count_by_lines(merged)
    observed_ids = [m.id for t in observed for m in pending[t]]
    new = om.storage.update_active_observations(
        rec.id, observations=merged, token_count=tokens, last_observed_at=newest_all, now=now,
        observed_message_ids=observed_ids, expected_last_observed_at=rec.last_observed_at, thread_metas=new_metas)
    if new is None:
        return []
    events.append("observe")
    # working memory of the outputs that became observations, in batch order
    updates = [e for ids, out in results if out is not None and out.working_memory and set(ids) & set(observed)
               for e in out.working_memory]
    apply_updates(om, rec.resource_id, updates, now, events)
    return list(pending[st.thread_id]) if st.thread_id in observed else []
