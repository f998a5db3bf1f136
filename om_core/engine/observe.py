"""Observation steps: background buffering, activation of buffered chunks, synchronous observation.

Rules from mastra-ai/mastra, packages/memory/src/processors/observational-memory/ (`om/` below):
buffering trigger om/buffering-coordinator.ts and `buffer()` in om/observational-memory.ts; activation
`swapBufferedToActive` (packages/core/src/storage/domains/memory/inmemory.ts, om/thresholds.ts); synchronous
observation om/observation-strategies/sync.ts. Steps see the orchestrator only as an `EngineContext`.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, Sequence

from om_core.activation import should_buffer
from om_core.context import message_boundary
from om_core.engine.state import EngineContext, Rejection, ScopeState, Stage, Status, TurnLog, safe_prefix
from om_core.engine.working import apply_updates, chunk_updates, observer_working_memory
from om_core.errors import RejectedOutputError
from om_core.observer import ObserverOutput, observe
from om_core.records import BufferedChunk, OMRecord, ThreadMeta
from om_core.types import Message


def join_observations(existing: str, new: str, ts: datetime, profile: str) -> tuple[str, str]:
    """(merged text, separator used). m31 writes a message boundary so earlier chunks keep their bytes;
    m11 (one system message, no chunking) joins with a blank line as Mastra 1.1 did."""
    if not existing.strip():
        return new, ""
    if not new.strip():
        return existing, ""
    sep = message_boundary(ts) if profile == "m31" else "\n\n"
    return existing + sep + new, sep


BUFFERED_SEPARATOR = "\n\n--- BUFFERED (pending activation) ---\n\n"


def buffering_context(active: str, buffered: str) -> str:
    """The previous observations a buffering Observer call is shown: the active observations, then Mastra's
    `--- BUFFERED (pending activation) ---` line, then the buffered chunks (either alone when the other is empty).
    From mastra-ai/mastra 1.31.0, packages/memory/src/processors/observational-memory, `combineObservationsForBuffering`."""
    if not active or not buffered:
        return active or buffered
    return active + BUFFERED_SEPARATOR + buffered


def observer_kwargs(om: EngineContext) -> dict[str, Any]:
    """Keyword arguments of `om_core.observer.observe` from the config (prompt options and model params)."""
    cfg = om.config
    kw = {"tz": om.tz, "counter": om.counter, "instruction": cfg.observation.instruction,
          "thread_title": cfg.observation.thread_title, "prompts_folder": cfg.texts_folder(),
          "degenerate_check": cfg.degenerate_check}
    params: dict[str, Any] = {"temperature": cfg.observation.temperature}
    if cfg.observer_output_cap:
        params["max_tokens"] = cfg.observer_output_cap
    params.update(cfg.observation.model_params)
    return {"model_params": params, **kw}


def prior_metadata(meta: ThreadMeta | None) -> dict[str, str]:
    if meta is None:
        return {}
    pairs = {"current_task": meta.current_task, "suggested_response": meta.suggested_response,
             "thread_title": meta.thread_title}
    return {k: v for k, v in pairs.items() if v}


async def run_observer(om: EngineContext, log: TurnLog, stage: Stage, key: str, thread_ids: Sequence[str],
                       now: datetime, **kw: Any) -> ObserverOutput | None:
    """One Observer call on the rejection path: the output, or None when it was refused after the retries
    the rules allow (recorded in `log` with its reason; nothing is written). An output committed although it
    loops (m11 without the repetition check) is recorded too, as `degenerate_observation`."""
    try:
        out = await observe(om.observer, om.config.profile, **kw, **observer_kwargs(om))
    except RejectedOutputError as exc:
        om.reject(log, Rejection(stage, exc.reason, key, tuple(thread_ids), om.now(now)))
        return None
    if out.degenerate:
        om.reject(log, Rejection(stage, "degenerate_repetition", key, tuple(thread_ids), om.now(now), committed=True))
    return out


def maybe_buffer(om: EngineContext, st: Status, state: ScopeState, now: datetime, events: TurnLog) -> None:
    """Start a background Observer call when pending tokens crossed a buffering interval."""
    bt = om.config.buffer_tokens
    rec = st.record
    if bt is None or state.buffering_busy():
        return
    last = max(rec.last_buffered_at_tokens, state.last_boundary)
    if not should_buffer(st.pending, last, st.threshold, bt):
        return
    state.last_boundary = st.pending  # set at trigger time, also when the candidates are too few
    buffered = rec.buffered_message_ids()
    since = max((t for t in (rec.last_buffered_at_time, rec.last_observed_at) if t is not None), default=None)
    candidates = [m for m in st.unobserved if m.id not in buffered and (since is None or m.created_at > since)]
    candidates = safe_prefix(candidates)
    if not candidates or om.tokens.total(candidates) < bt / 2:
        return
    existing = buffering_context(rec.active_observations,
                                 "\n\n".join(c.observations for c in rec.buffered_observation_chunks if c.observations.strip()))
    events.append("buffer")
    state.buffer_task = om.spawn(_buffer(om, rec.lookup_key, candidates, existing, st.pending, now, rec.resource_id,
                                         state.activations), rec.lookup_key)


async def _buffer(om: EngineContext, key: str, msgs: Sequence[Message], existing: str, pending: int,
                  now: datetime, resource_id: str, activations: int) -> None:
    out = await run_observer(om, om.background(key), "buffer", key, sorted({m.thread_id or "" for m in msgs}), now,
                             existing_observations=existing, messages=list(msgs), buffered=True,
                             **observer_working_memory(om, resource_id))
    if out is None:  # refused: no chunk; the messages stay unbuffered and are buffered or observed later
        return
    text = om.group(out.observations, msgs)
    newest = max(m.created_at for m in msgs)
    cycle = uuid.uuid4().hex
    chunk = BufferedChunk(
        id=f"ombuf-{cycle}", cycle_id=cycle, observations=text, token_count=om.counter.count_string(text),
        message_ids=tuple(m.id for m in msgs), message_tokens=om.tokens.total(msgs),
        last_observed_at=newest + timedelta(milliseconds=1), created_at=om.now(now),
        # the hints a buffered call returns anyway are kept and applied to the thread at activation (Mastra 1.31.0
        # stores them with the chunk: observational-memory.ts, the async buffer's `persist`)
        first_message_at=min(m.created_at for m in msgs), current_task=out.current_task,
        suggested_continuation=out.suggested_response,
        thread_title=out.thread_title,
        working_memory=tuple(out.working_memory) if out.working_memory and om.config.working_memory.enabled else None)
    # `pending` counted tokens before any activation that happened while the Observer ran: written back, it would
    # set the stored boundary above the (shifted) current one and pause buffering for intervals; keep the stored one
    stale = om.scope_state(key).activations != activations
    om.storage.append_buffered_chunk(key, chunk, last_buffered_at_tokens=None if stale else pending, now=om.now(now))


async def wait_for_buffering(state: ScopeState) -> None:
    task = state.buffer_task
    if task is not None and not task.done():
        try:
            await task
        except Exception:  # already recorded by the task wrapper; the turn continues without that chunk
            pass


def activate(om: EngineContext, st: Status, thread_id: str, now: datetime, events: TurnLog, *,
             everything: bool = False) -> bool:
    """Swap a prefix of buffered chunks into the active observations (`everything`: all of them); True when
    some were activated. The in-process buffering boundary restarts from 0 afterwards, as Mastra clears it
    (`cleanupStaticMaps` in om/observational-memory.ts); storage shifts the stored one down."""
    cfg = om.config
    rec = st.record
    if not rec.buffered_observation_chunks or cfg.activation_ratio is None:
        return False
    block = cfg.block_after_tokens
    # m31 chooses the prefix from the pending count stored at the end of the scope's previous step, else the
    # chunks' own message tokens: Mastra 1.31.0 passes `freshRecord.pendingMessageTokens || totalChunkMessageTokens`
    # (observational-memory.ts activate()), which processor.ts sets from the step's status at the end of each
    # step, so it does not count the messages of the step that activates. m11 has no buffering.
    stale = (rec.pending_message_tokens or sum(c.message_tokens for c in rec.buffered_observation_chunks)) \
        if cfg.profile == "m31" and not everything else None
    res = om.storage.swap_buffered_to_active(
        rec.id, activation_ratio=1.0 if everything else cfg.activation_ratio, threshold=st.threshold,
        pending_tokens=st.pending, force_max=everything or (block is not None and st.pending >= block), now=now,
        thread_id=thread_id, plan_pending=stale)
    if res.activated:
        events.append("activate")
        state = om.scope_state(rec.lookup_key)
        state.last_boundary, state.activations = 0, state.activations + 1
        apply_updates(om, rec.resource_id, chunk_updates(rec.buffered_observation_chunks, res.cycle_ids), now, events)
    return res.activated


async def observe_thread(om: EngineContext, st: Status, meta: ThreadMeta | None, now: datetime,
                         events: TurnLog) -> list[Message]:
    """Synchronous observation of all unobserved messages of a thread. Returns what it observed (nothing when
    the Observer's output was refused: the messages stay unobserved and the next step tries again)."""
    rec: OMRecord = st.record
    msgs = list(st.unobserved)
    if not msgs:
        return []
    cfg = om.config
    out = await run_observer(om, events, "observation", rec.lookup_key, [st.thread_id], now,
                             existing_observations=rec.active_observations, messages=msgs,
                             prior_metadata=prior_metadata(meta) if cfg.profile == "m31" else None,
                             **observer_working_memory(om, rec.resource_id))
    if out is None:
        return []
    text = om.group(out.observations, msgs)
    newest = max(msgs, key=lambda m: m.created_at)
    # the boundary carries the newest message time of the observations after it, as Mastra stamps it
    merged, _ = join_observations(rec.active_observations, text, newest.created_at, cfg.profile)
    # the whole merged text is counted, as Mastra does (BPE merges across the join make a sum drift)
    tokens = om.counter.count_by_lines(merged) if merged != rec.active_observations else rec.observation_token_count
    metas = []
    if meta is not None:
        metas.append(replace(meta, current_task=out.current_task, suggested_response=out.suggested_response,
                             thread_title=out.thread_title or meta.thread_title,
                             last_observed_message_cursor=newest.id, updated_at=now))
    new = om.storage.update_active_observations(
        rec.id, observations=merged, token_count=tokens, last_observed_at=newest.created_at, now=now,
        observed_message_ids=[m.id for m in msgs], expected_last_observed_at=rec.last_observed_at, thread_metas=metas)
    if new is None:  # another writer observed meanwhile: its result stands, ours is dropped
        return []
    om.scope_state(rec.lookup_key).last_boundary = 0  # everything pending was observed: buffering restarts
    events.append("observe")
    apply_updates(om, rec.resource_id, out.working_memory, now, events)
    return msgs
