"""Reflection steps: background reflection at 50 %, activation of a buffered reflection at the threshold,
synchronous reflection above blockAfter (m11: whenever over the threshold).

Rules from mastra-ai/mastra, packages/memory/src/processors/observational-memory/reflector-runner.ts
(`maybeReflect`, background reflection) and packages/core/src/storage/domains/memory/inmemory.ts
(`createReflectionGeneration`, `swapBufferedReflectionToActive`). Steps see the orchestrator only as an
`EngineContext`.
"""

from __future__ import annotations

import asyncio
import logging
import math
from datetime import datetime
from typing import Any

from om_core.engine.state import EngineContext, Rejection, ScopeState, Stage, TurnLog
from om_core.errors import RejectedOutputError
from om_core.retrieval import reconcile_reflection_groups
from om_core.records import OMRecord
from om_core.reflector import ReflectionResult, reflect

log = logging.getLogger("om_core.memory")
BUFFERED_REFLECTION_WAIT_S = 5.0  # how long a threshold trigger waits for an in-flight background reflection
_GROUP_OPEN, _GROUP_CLOSE = "<observation-group ", "</observation-group>"


def _reflector_params(om: EngineContext) -> dict[str, Any]:
    r = om.config.reflection
    params: dict[str, Any] = {"temperature": r.temperature}
    if om.config.reflector_output_cap:
        params["max_tokens"] = om.config.reflector_output_cap
    return {**params, **dict(r.model_params)}


def _finish_text(om: EngineContext, text: str, source: str) -> str:
    return reconcile_reflection_groups(text, source) if om.config.retrieval.enabled else text


async def _run_reflector(om: EngineContext, log: TurnLog, stage: Stage, rec: OMRecord, text: str, target: int,
                         now: datetime, *, buffered: bool = False, thread_id: str | None = None) -> ReflectionResult | None:
    """One reflection (ladder or m11 retry) on the rejection path: the result, or None when no output was
    usable (recorded in `log` with the reason; memory untouched). A committed output that loops (m11 without
    the repetition check) is recorded as `degenerate_reflection`."""
    cfg = om.config
    # the current thread's hints: Mastra 1.31.0 shows them to a Reflector that is not buffered as prior extracted
    # values (reflector-runner.ts getThreadExtractedValues); only a prompts folder with its texts uses them
    meta = om.storage.get_thread(thread_id) if thread_id and not buffered else None
    prior = {"current_task": meta.current_task or "", "suggested_response": meta.suggested_response or ""} \
        if meta is not None else None
    try:
        result = await reflect(om.reflector, text, target_tokens=target, profile=cfg.profile,
                               model_name=cfg.reflector_model, counter=om.counter, model_params=_reflector_params(om),
                               buffered=buffered, prompts_folder=cfg.texts_folder(),
                               instruction=cfg.reflection.instruction, degenerate_check=cfg.degenerate_check,
                               prior_values=prior)
    except RejectedOutputError as exc:
        om.reject(log, Rejection(stage, exc.reason, rec.lookup_key, (), om.now(now)))
        return None
    if result.degenerate:
        om.reject(log, Rejection(stage, "degenerate_repetition", rec.lookup_key, (), om.now(now), committed=True))
    return result


async def maybe_reflect(om: EngineContext, rec: OMRecord, now: datetime, events: TurnLog, *,
                        idle: bool = False, provider_changed: bool = False, thread_id: str | None = None) -> OMRecord:
    """Run whichever reflection step the observation size calls for; returns the (possibly new) head.
    `thread_id`: the turn's thread, whose hints a synchronous Reflector may be shown."""
    cfg = om.config
    threshold = cfg.reflection.observation_tokens
    obs = rec.observation_token_count
    if cfg.profile == "m11":  # M11: strict ">" and always synchronous
        return await _sync_reflect(om, rec, now, events, thread_id) if obs > threshold else rec
    state = om.scope_state(rec.lookup_key)
    ratio = cfg.reflection_buffer_activation
    if ratio is not None and obs < threshold and _may_start(state, rec) and obs >= threshold * ratio:
        _start_background(om, rec, now, events)
    idle = idle and cfg.reflection_idle_ms is not None
    provider_changed = provider_changed and cfg.reflection.activate_on_provider_change
    if not (obs >= threshold or idle or provider_changed):
        return rec
    if rec.buffered_reflection or state.reflecting_busy():
        task = state.reflect_task
        if task is not None and not task.done() and obs >= threshold:  # an in-flight background reflection
            try:
                await asyncio.wait_for(asyncio.shield(task), BUFFERED_REFLECTION_WAIT_S)
            except (asyncio.TimeoutError, Exception):
                pass
            rec = om.storage.get_record(rec.lookup_key) or rec
        if rec.buffered_reflection and (obs >= threshold or _worth_activating(om, rec)):
            new = om.storage.swap_buffered_reflection_to_active(rec.id, count_tokens=om.counter.count_string, now=now)
            if new is not None:
                state.reflection_boundary = None
                events.append("activate_reflection")
                return new
    if obs < threshold:
        return rec
    block = cfg.reflection_block_after_tokens
    if block is not None and obs < block:
        if _may_start(state, rec):
            _start_background(om, rec, now, events)
        return rec
    return await _sync_reflect(om, rec, now, events, thread_id)


def _may_start(state: ScopeState, rec: OMRecord) -> bool:
    """A background reflection may start: none running, none buffered, and no boundary recorded
    (reflector-runner.ts), except that a failed one may be retried once the observations have grown."""
    if state.reflecting_busy() or rec.buffered_reflection:
        return False
    return state.reflection_boundary is None or rec.observation_token_count > state.reflection_boundary


def _worth_activating(om: EngineContext, rec: OMRecord) -> bool:
    """Guards for idle / provider-change activation of a buffered reflection (reflector-runner.ts)."""
    tail = rec.observation_token_count - rec.buffered_reflection_input_tokens
    combined = tail + rec.buffered_reflection_tokens
    ratio = om.config.reflection.buffer_activation
    floor = 0.75 * om.config.reflection.observation_tokens * (1 - ratio)
    return not (tail < rec.buffered_reflection_tokens or combined < floor)


async def _sync_reflect(om: EngineContext, rec: OMRecord, now: datetime, events: TurnLog,
                        thread_id: str | None = None) -> OMRecord:
    state = om.scope_state(rec.lookup_key)
    digest = hash(rec.active_observations)
    if state.suppressed_reflection == digest:  # same text already failed to get under the target
        return rec
    if state.refused_reflection == digest:  # its output was refused: no paid retry on the same text
        events.append("reflection_deferred")
        return rec
    result = await _run_reflector(om, events, "reflection", rec, rec.active_observations,
                                  om.config.reflection.observation_tokens, now, thread_id=thread_id)
    if result is None:  # nothing usable: keep the memory, and do not retry on the same text
        state.refused_reflection = digest
        return rec
    text = _finish_text(om, result.text, rec.active_observations)
    tokens = result.tokens if text == result.text else om.counter.count_by_lines(text)
    new = om.storage.create_reflection_generation(rec.id, reflection=text, token_count=tokens, now=now)
    if new is None:
        return om.storage.get_record(rec.lookup_key) or rec
    state.reflection_boundary = None
    if result.over_target:
        state.suppressed_reflection = hash(new.active_observations)
    events.append("reflect")
    return new


def _reflect_slice(lines: list[str], count: int) -> int:
    """Move a slice end so that it does not cut an observation group in two (retrieval mode)."""
    def open_at(n: int) -> bool:
        depth = 0
        for line in lines[:n]:
            s = line.strip()
            depth += s.startswith(_GROUP_OPEN) - (s == _GROUP_CLOSE)
        return depth > 0

    n = count
    while n > 0 and open_at(n):
        n -= 1
    if n == 0:
        n = count
        while n < len(lines) and open_at(n):
            n += 1
    return n


def _start_background(om: EngineContext, rec: OMRecord, now: datetime, events: TurnLog) -> None:
    cfg = om.config
    lines = rec.active_observations.split("\n")
    if not rec.active_observations.strip() or rec.observation_token_count <= 0:
        return
    avg = rec.observation_token_count / len(lines)
    count = min(math.floor(cfg.reflection.observation_tokens * cfg.reflection.buffer_activation / avg), len(lines))
    if cfg.retrieval.enabled:
        count = _reflect_slice(lines, count)
    if count <= 0:
        return
    slice_tokens = round(avg * count)
    target = max(1, round(slice_tokens * 0.75))  # the slice must shrink below 75 % of its size
    events.append("buffer_reflection")
    state = om.scope_state(rec.lookup_key)
    state.reflection_boundary = rec.observation_token_count  # kept when it fails: no restart at every step
    state.reflect_task = om.spawn(_background(om, rec, "\n".join(lines[:count]), count, slice_tokens, target, now),
                                  rec.lookup_key)


async def _background(om: EngineContext, rec: OMRecord, text: str, count: int, slice_tokens: int,
                      target: int, now: datetime) -> None:
    result = await _run_reflector(om, om.background(rec.lookup_key), "buffer_reflection", rec, text, target, now, buffered=True)
    if result is None:
        return
    out = _finish_text(om, result.text, text)
    tokens = result.tokens if out == result.text else om.counter.count_by_lines(out)
    om.storage.update_buffered_reflection(rec.id, reflection=out, token_count=tokens, input_tokens=slice_tokens,
                                          line_count=count, now=om.now(now))
