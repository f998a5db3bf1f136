"""`ObservationalMemory`: the per-turn orchestrator.

Control flow from mastra-ai/mastra, packages/memory/src/processors/observational-memory/: processor.ts,
observation-turn/step.ts and observational-memory.ts (m11: observational-memory.ts of @mastra/memory 1.1.0).

A caller drives it turn by turn: `prepare_turn` before the Actor call (stores the user input, activates or
observes at the threshold, starts background buffering, returns the Actor context) and `finish_turn` after
it (stores the output; m11 observes here, at "step > 0"). Background Observer / Reflector calls are asyncio
tasks that never block a turn; `wait_idle` awaits them for deterministic replays. Storage is the only
durable state: in-process state (locks, running tasks, the buffering boundary) can be lost at any time.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import sys
from collections import deque
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from operator import is_
from types import MappingProxyType
from typing import Any, Callable, Coroutine, Mapping, Sequence
from zoneinfo import ZoneInfo

from om_core.activation import dynamic_threshold
from om_core.config import OMConfig
from om_core.context import build_actor_context
from om_core.dates import temporal_gap_marker, temporal_gap_text
from om_core.engine.observe import activate, maybe_buffer, observe_thread, wait_for_buffering
from om_core.engine.others import OtherConversations
from om_core.engine.reflect import maybe_reflect
from om_core.engine.resource import observe_resource
from om_core.engine.working import actor_text, replace_block
from om_core.engine.state import (
    TEMPORAL_MARKER_PREFIX,
    MessageTokens,
    Rejection,
    ScopeState,
    Status,
    TurnContext,
    TurnLog,
    has_pending_tool_call,
    retention_tail,
)
from om_core.errors import InputError
from om_core.llm import ChatModel
from om_core.retrieval import (
    parse_observation_groups,
    render_observation_groups,
    retrieval_instructions,
    wrap_observation_group,
)
from om_core.records import OMRecord, ThreadMeta, iso, lookup_key
from om_core.storage.base import Storage
from om_core.tokens import CONVERSATION_OVERHEAD, TokenCounter, default_counter
from om_core.types import Message
from om_core.working_memory import Entry, WorkingMemory

__all__ = ["ObservationalMemory", "TurnContext", "Status", "Rejection"]
log = logging.getLogger("om_core.memory")
REJECTIONS_KEPT = 1000  # newest refused outputs kept in `ObservationalMemory.rejections`
VISIBLE_MEMO_THREADS = 4096  # resources / readers whose unobserved tails and status are remembered


@dataclass(frozen=True)
class _Tail:
    """One thread's unobserved tail as status uses it: the storage entry it came from, its messages without
    system ones, the running sum of their tokens (`MessageTokens.one`, added in order, as `MessageTokens.total`
    adds them) and how many there are."""

    entry: tuple[ThreadMeta, Sequence[Message]]
    msgs: tuple[Message, ...]
    tokens: float

    @property
    def thread_id(self) -> str:
        return self.entry[0].thread_id

    def total(self) -> int:
        """`MessageTokens.total(self.msgs)`, from the kept sum."""
        return round(self.tokens + (CONVERSATION_OVERHEAD if self.msgs else 0))

    @staticmethod
    def of(entry: tuple[ThreadMeta, Sequence[Message]], prev: _Tail | None, tokens: MessageTokens) -> _Tail:
        """The tail of `entry`; when it extends `prev`'s messages (the thread was written to), only the new
        messages are counted and added to `prev`'s sum: the same additions in the same order, so the same sum."""
        stored = entry[1]
        if prev is not None and prev.entry[1] is stored:
            return _Tail(entry, prev.msgs, prev.tokens)
        msgs = tuple(m for m in stored if m.role != "system")
        if prev is not None and len(prev.msgs) <= len(msgs) and msgs[: len(prev.msgs)] == prev.msgs:
            s, new = prev.tokens, msgs[len(prev.msgs):]
        else:
            s, new = 0.0, msgs
        for m in new:
            s += tokens.one(m)
        return _Tail(entry, msgs, s)


@dataclass
class _TailView:
    """A resource's unobserved tails: the entries storage handed back, and each thread's `_Tail` (same order).
    `base` is the view this one was built from (cleared when a newer one is built from this, so at most one is
    kept) and `changed` the threads whose tail is not `base`'s object (None: a thread left, or no base)."""

    entries: list[tuple[ThreadMeta, Sequence[Message]]]
    threads: dict[str, _Tail]
    order: list[_Tail]
    base: _TailView | None = None
    changed: frozenset[str] | None = None


class ObservationalMemory:
    """Observational Memory over one `Storage`, for any number of resources and threads; implements
    `engine.state.EngineContext` for the engine steps.

    `observer` / `reflector` are `ChatModel`s; `counter` counts tokens (default: the shared o200k_base
    counter); `clock` stamps what background work writes (default: the `now` of the turn that started it).
    Turn methods raise `InputError` for messages they cannot store (naive `created_at`, another thread or
    resource) and `StorageError` when storage fails; an error of a model call itself (the provider failed)
    propagates from a synchronous call. A model output that memory refuses never raises: the messages stay
    unobserved, memory stays as it was, and the turn's `events` / `rejections` say so (the history is in
    `rejections`). Background failures go to `errors`. Docs: docs/om-engine.md.
    """

    def __init__(self, config: OMConfig, storage: Storage, observer: ChatModel, reflector: ChatModel, *,
                 counter: TokenCounter | None = None, clock: Callable[[], datetime] | None = None) -> None:
        self.config = config
        self.storage = storage
        self.observer = observer
        self.reflector = reflector
        self.counter = counter or default_counter()
        self.tokens = MessageTokens(self.counter, config.profile)
        self.tz = ZoneInfo(config.timezone)
        self._clock = clock
        self._scopes: dict[str, ScopeState] = {}
        self._others = OtherConversations(config.profile, self.tz, self.counter, config.obscure_thread_ids)
        # resource scope: per resource, its threads' unobserved tails (`_view`); per reader, the last status
        # and the record and view it was computed from (`status`)
        self._views: dict[str, _TailView] = {}
        # (record, view, status, tokens of its OTHER-conversations part)
        self._status_memo: dict[tuple[str, str], tuple[OMRecord, _TailView, Status, int]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.errors: list[BaseException] = []  # background failures (logged; a turn never raises them)
        self.rejections: deque[Rejection] = deque(maxlen=REJECTIONS_KEPT)  # refused outputs, newest last

    # ---- public API ------------------------------------------------------------------------------
    async def prepare_turn(self, resource_id: str, thread_id: str, new_messages: Sequence[Message], now: datetime,
                           *, provider: str | None = None) -> TurnContext:
        """Step 0 of a turn: store the input, run activation/reflection/buffering/threshold observation,
        and return the Actor's context (the new messages come last).

        System messages in `new_messages` are this call's instructions: shown in this turn's context (before
        the turn's other new messages) but never stored, counted or observed (mastra-ai/mastra,
        om/observational-memory.ts, `getUnobservedMessages` drops system messages)."""
        cfg = self.config
        own = self._own(new_messages, resource_id, thread_id)
        system = [m for m in own if m.role == "system"]
        msgs = [m for m in own if m.role != "system"]
        key = self.key(resource_id, thread_id)
        state = self.scope_state(key)
        events = self._turn_log(state)
        async with state.lock:
            meta = self._ensure_thread(resource_id, thread_id, now)
            gap = self._idle_gap(resource_id, thread_id, msgs, now)
            changed = provider is not None and meta.last_provider is not None and provider != meta.last_provider
            if provider is not None and provider != meta.last_provider:
                meta = replace(meta, last_provider=provider, updated_at=now)
                self.storage.save_thread(meta)
            markers = self._temporal_marker(resource_id, thread_id, msgs, events)
            self.storage.add_messages([*markers, *msgs])
            rec = self._head(key, resource_id, thread_id, now)
            tail: list[Message] = []
            if cfg.profile == "m31":
                st = self.status(rec, thread_id)
                idle = gap is not None and cfg.idle_ms is not None and gap >= timedelta(milliseconds=cfg.idle_ms)
                obs_changed = changed and cfg.provider_change_activates
                if rec.buffered_observation_chunks and (st.pending >= st.threshold or idle or obs_changed):
                    activate(self, st, thread_id, now, events)
                    rec = self._head(key, resource_id, thread_id, now)
                refl_idle = gap is not None and cfg.reflection_idle_ms is not None and \
                    gap >= timedelta(milliseconds=cfg.reflection_idle_ms)
                await maybe_reflect(self, rec, now, events, idle=refl_idle, provider_changed=changed,
                                    thread_id=thread_id)
                tail = await self._step(key, state, resource_id, thread_id, now, events, {m.id for m in msgs})
                self._store_pending(key, resource_id, thread_id, now)
            return self._render(resource_id, thread_id, now, events, tail=tail, system=system,
                                first_new={m.id for m in msgs})

    async def finish_turn(self, resource_id: str, thread_id: str, new_messages: Sequence[Message],
                          now: datetime) -> list[str]:
        """After the Actor answered: store its messages; m11 observes here when over the threshold, m31 runs
        the same per-step checks as `prepare_turn` (buffering, threshold). Returns the turn's event names
        (its refused outputs are in `rejections`). System messages are dropped, as in `prepare_turn`."""
        msgs = [m for m in self._own(new_messages, resource_id, thread_id) if m.role != "system"]
        key = self.key(resource_id, thread_id)
        state = self.scope_state(key)
        events = self._turn_log(state)
        async with state.lock:
            self._ensure_thread(resource_id, thread_id, now)
            self.storage.add_messages(msgs)
            rec = self._head(key, resource_id, thread_id, now)
            if self.config.profile == "m31":
                await self._step(key, state, resource_id, thread_id, now, events, set())
                self._store_pending(key, resource_id, thread_id, now)
            else:
                st = self.status(rec, thread_id)
                if st.pending >= st.threshold and not has_pending_tool_call(st.unobserved):
                    if await self._observe(st, resource_id, thread_id, now, events) or "observe" in events:
                        await maybe_reflect(self, self._head(key, resource_id, thread_id, now), now, events,
                                    thread_id=thread_id)
        return list(events)

    async def finalize(self, resource_id: str, thread_id: str, now: datetime) -> list[str]:
        """Observe everything still unobserved in this scope now, whatever the threshold (resource scope: every
        thread of the resource; buffered chunks are activated first), then reflect if the observations call
        for it. Mastra's benchmark used such a pass (`finalize()` in mastra-ai/mastra,
        explorations/longmemeval/src/commands/prepare.ts) for its shortcut config; nothing calls it on its
        own. `thread_id` is the thread the status is read from (it need not exist). Returns the event names."""
        await self.wait_idle()
        key = self.key(resource_id, thread_id)
        state = self.scope_state(key)
        events = self._turn_log(state)
        async with state.lock:
            rec = self._head(key, resource_id, thread_id, now)
            st = self.status(rec, thread_id)
            if st.record.buffered_observation_chunks and activate(self, st, thread_id, now, events, everything=True):
                st = self.status(self._head(key, resource_id, thread_id, now), thread_id)
            if st.unobserved or st.others:
                await self._observe(replace(st, threshold=sys.maxsize), resource_id, thread_id, now, events,
                                    force=True)
            if "observe" in events or "activate" in events:
                await maybe_reflect(self, self._head(key, resource_id, thread_id, now), now, events,
                                    thread_id=thread_id)
        return list(events)

    def take_background_events(self, resource_id: str, thread_id: str) -> list[str]:
        """Event names of background work (buffering, background reflection) of this scope that finished since
        its last turn; they are also reported with the scope's next turn unless taken here."""
        return list(self._turn_log(self.scope_state(self.key(resource_id, thread_id))))

    async def context(self, resource_id: str, thread_id: str, now: datetime, *,
                      extra_messages: Sequence[Message] = ()) -> TurnContext:
        """Read-only render (e.g. at question time): no model calls, nothing written."""
        return self._render(resource_id, thread_id, now, None, extra=tuple(extra_messages), write=False)

    async def wait_idle(self) -> None:
        """Await every in-flight background operation (buffering, background reflection)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def record(self, resource_id: str, thread_id: str) -> OMRecord | None:
        """The head generation of this scope, or None before anything was stored."""
        return self.storage.get_record(self.key(resource_id, thread_id))

    def working_memory(self, resource_id: str) -> WorkingMemory | None:
        """The resource's working memory (om_core.working_memory); None before one was written."""
        return self.storage.get_working_memory(resource_id)

    def set_working_memory(self, resource_id: str, block: str | Sequence[Entry], now: datetime) -> WorkingMemory:
        """Replace it (a user's edit): `label: value` lines or pairs, capped; shown from the next render on."""
        return replace_block(self, resource_id, block, now)

    # ---- helpers used by the engine modules ----------------------------------------------------------
    def key(self, resource_id: str, thread_id: str) -> str:
        return lookup_key(self.config.scope, resource_id, thread_id)

    def scope_state(self, key: str) -> ScopeState:
        state = self._scopes.get(key)
        if state is None:
            state = self._scopes[key] = ScopeState()
        return state

    def now(self, default: datetime) -> datetime:
        return self._clock() if self._clock is not None else default

    def spawn(self, coro: Coroutine[Any, Any, None], key: str | None = None) -> asyncio.Task[None]:
        async def guarded() -> None:
            try:
                await coro
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # background work must never break a turn; storage stays consistent
                self.record_error(exc)
                if key is not None:
                    self.background(key).append("background_error")

        task = asyncio.get_running_loop().create_task(guarded())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def record_error(self, exc: BaseException) -> None:
        log.warning("observational memory background operation failed: %r", exc)
        self.errors.append(exc)

    def background(self, key: str) -> TurnLog:
        return self.scope_state(key).background

    def reject(self, log_: TurnLog, rejection: Rejection) -> None:
        log.warning("observational memory %s output %s: %s (threads %s)", rejection.stage,
                    "committed although flagged" if rejection.committed else "refused", rejection.reason,
                    ", ".join(rejection.thread_ids) or "-")
        log_.reject(rejection)
        self.rejections.append(rejection)

    @staticmethod
    def _turn_log(state: ScopeState) -> TurnLog:
        """A new turn's log, starting with what background work of the scope did since the last turn."""
        events = TurnLog()
        events.merge(state.background)
        state.background = TurnLog()
        return events

    def group(self, text: str, messages: Sequence[Message]) -> str:
        return wrap_observation_group(text, messages) if self.config.retrieval.enabled and text.strip() else text

    def status(self, rec: OMRecord, thread_id: str) -> Status:
        """Pending work of `rec`'s scope as seen from `thread_id`. Resource scope: kept per reader and reused
        while the record and the storage's unobserved tails are the same objects; otherwise rebuilt from each
        thread's tail, which is itself rebuilt only for the threads written since (its tokens summed on from
        the tail it extends). The returned status is read-only (its sequences are a tuple and a read-only
        mapping) and may be shared by later calls."""
        cfg = self.config
        if cfg.scope == "thread":
            skip = set(rec.observed_message_ids)
            unobserved = tuple(m for m in self.storage.list_messages(rec.resource_id, thread_id,
                                                                     after=rec.last_observed_at)
                               if m.id not in skip and m.role != "system")
            return self._make_status(rec, thread_id, unobserved, self.tokens.total(unobserved), {}, "", 0)
        # one (cached) read: only the threads with unobserved messages, however long the history
        view = self._view(rec.resource_id, self.storage.list_unobserved(rec.resource_id))
        key = (rec.resource_id, thread_id)
        hit = self._status_memo.get(key)
        if hit is not None and hit[0] is rec and hit[1] is view:
            return hit[2]
        own = view.threads.get(thread_id)
        others: Mapping[str, Sequence[Message]]
        if hit is not None and view.base is hit[1] and view.changed is not None and view.changed <= {thread_id}:
            # only this reader's own tail changed since its last status: every other thread's tail is the same
            # object in the same order, so the OTHER-conversations part is the same
            others, other_text, other_tokens = hit[2].others, hit[2].other_text, hit[3]
        else:
            # newest thread first, as Mastra lists them (listThreads' default order, createdAt DESC; 1.1.0 and
            # 1.31.0)
            others = MappingProxyType(
                {t.thread_id: t.msgs for t in reversed(view.order) if t.msgs and t.thread_id != thread_id})
            other_text, other_tokens = self._others.block(rec.resource_id, thread_id, others)
        unobserved = own.msgs if own is not None else ()
        st = self._make_status(rec, thread_id, unobserved, own.total() if own is not None else 0,
                               others, other_text, other_tokens)
        if len(self._status_memo) >= VISIBLE_MEMO_THREADS:
            self._status_memo.clear()
        self._status_memo[key] = (rec, view, st, other_tokens)
        return st

    def _make_status(self, rec: OMRecord, thread_id: str, unobserved: tuple[Message, ...], own_tokens: int,
                     others: Mapping[str, Sequence[Message]], other_text: str, other_tokens: int) -> Status:
        cfg = self.config
        threshold = dynamic_threshold(cfg.observation.message_tokens, cfg.reflection.observation_tokens,
                                      rec.observation_token_count, cfg.share_token_budget)
        return Status(rec, thread_id, unobserved, others, other_text, own_tokens + other_tokens, threshold)

    def _view(self, resource_id: str, entries: list[tuple[ThreadMeta, Sequence[Message]]]) -> _TailView:
        """The resource's unobserved tails as status uses them: the same view while storage hands back the same
        entries (object for object), else a new one that keeps every unchanged thread's tail."""
        view = self._views.get(resource_id)
        if view is not None and len(view.entries) == len(entries) and all(map(is_, view.entries, entries)):
            return view
        old = view.threads if view is not None else {}
        threads: dict[str, _Tail] = {}
        changed: set[str] = set()
        added = 0
        for e in entries:
            prev = old.get(e[0].thread_id)
            if prev is not None and prev.entry is e:
                threads[e[0].thread_id] = prev
            else:
                threads[e[0].thread_id] = _Tail.of(e, prev, self.tokens)
                changed.add(e[0].thread_id)
                added += prev is None
        if len(self._views) >= VISIBLE_MEMO_THREADS:
            self._views.clear()
        kept = view is not None and len(threads) - added == len(old)  # no thread left the view
        if view is not None:
            view.base = None  # only the newest view keeps the one it was built from
        new = self._views[resource_id] = _TailView(list(entries), threads, list(threads.values()), base=view,
                                                   changed=frozenset(changed) if kept else None)
        return new

    # ---- turn internals ----------------------------------------------------------------------------
    def _store_pending(self, key: str, resource_id: str, thread_id: str, now: datetime) -> None:
        """m31 with buffering: keep the step's final pending count on the record, as Mastra 1.31.0 does at the
        end of every step (processor.ts `setPendingMessageTokens(ctx.status.pendingTokens)`); the next
        activation chooses its chunks from it (engine.observe.activate)."""
        if self.config.activation_ratio is None:
            return
        rec = self._head(key, resource_id, thread_id, now)
        pending = self.status(rec, thread_id).pending
        if pending != rec.pending_message_tokens:
            self.storage.patch_record(rec.id, now=now, pending_message_tokens=pending)

    async def _step(self, key: str, state: ScopeState, resource_id: str, thread_id: str, now: datetime,
                    events: TurnLog, keep_ids: set[str]) -> list[Message]:
        """Every-step checks (Mastra's om/observation-turn/step.ts): buffering trigger, then the threshold
        pipeline. Returns the raw tail of just-observed messages that stays in this turn's context.

        Beyond Mastra: when activation leaves more than `block_after` tokens pending (a large message arrived
        while a buffer call ran), the remaining chunks are activated and the rest observed synchronously, so
        the Actor is never handed a raw tail above `block_after` (docs/om.md, deliberate differences)."""
        st = self.status(self._head(key, resource_id, thread_id, now), thread_id)
        maybe_buffer(self, st, state, now, events)
        if st.pending < st.threshold or has_pending_tool_call(st.unobserved):
            return []
        await wait_for_buffering(state)
        st = self.status(self._head(key, resource_id, thread_id, now), thread_id)
        if st.pending < st.threshold:
            return []
        activated = bool(st.record.buffered_observation_chunks) and activate(self, st, thread_id, now, events)
        if activated:
            st = self.status(self._head(key, resource_id, thread_id, now), thread_id)
            block = self.config.block_after_tokens
            if block is None or st.pending < block or has_pending_tool_call(st.unobserved):
                await maybe_reflect(self, self._head(key, resource_id, thread_id, now), now, events,
                                    thread_id=thread_id)
                return []
            if st.record.buffered_observation_chunks and activate(self, st, thread_id, now, events, everything=True):
                st = self.status(self._head(key, resource_id, thread_id, now), thread_id)
        observed = await self._observe(st, resource_id, thread_id, now, events)
        if observed or activated:
            await maybe_reflect(self, self._head(key, resource_id, thread_id, now), now, events,
                                    thread_id=thread_id)
        return retention_tail(observed, self.config.retention_floor, self.tokens, keep_ids)

    async def _observe(self, st: Status, resource_id: str, thread_id: str, now: datetime,
                       events: TurnLog, *, force: bool = False) -> list[Message]:
        """Synchronous observation, unless the last one was refused and the input has not changed materially
        since (`engine.state.RefusalBackoff`; event `observation_deferred`, no call). `force` (finalize, an
        explicit request) always tries."""
        backoff = self.scope_state(st.record.lookup_key).observation_backoff
        if not force and not backoff.due(st.pending, st.threshold):
            events.append("observation_deferred")
            return []
        seen, observed_before = len(events.rejections), events.events.count("observe")
        if self.config.scope == "resource":
            observed = await observe_resource(self, st, now, events)
        else:
            observed = await observe_thread(self, st, self.storage.get_thread(thread_id), now, events)
        if events.events.count("observe") > observed_before:
            backoff.clear()
        elif any(r.stage == "observation" and not r.committed for r in events.rejections[seen:]):
            backoff.refused(st.pending)
        return observed

    def _render(self, resource_id: str, thread_id: str, now: datetime, events: TurnLog | None, *,
                tail: Sequence[Message] = (), extra: Sequence[Message] = (), write: bool = True,
                system: Sequence[Message] = (), first_new: set[str] | None = None) -> TurnContext:
        cfg = self.config
        key = self.key(resource_id, thread_id)
        rec = self._head(key, resource_id, thread_id, now) if write else self.storage.get_record(key)
        if rec is None:  # nothing stored yet: a blank record that is not written
            rec = OMRecord(id="", lookup_key=key, scope=cfg.scope, resource_id=resource_id,
                           thread_id=thread_id, created_at=now, updated_at=now)
        st = self.status(rec, thread_id)
        meta = self.storage.get_thread(thread_id)
        seen = {m.id for m in st.unobserved} if tail else set()
        raw = [*(m for m in tail if m.id not in seen), *st.unobserved, *extra]
        if system:  # this call's system messages, just before its other new messages
            at = next((i for i, m in enumerate(raw) if first_new and m.id in first_new), len(raw))
            raw[at:at] = system
        observations = rec.active_observations
        instructions = None
        grouped = False
        if cfg.retrieval.enabled:
            # Mastra shows rendered groups as they are; only text without groups goes through the optimiser
            grouped = bool(parse_observation_groups(observations))
            observations = render_observation_groups(observations)
            instructions = retrieval_instructions(cfg.retrieval.scope, cfg.retrieval.instructions)
        messages = build_actor_context(
            profile=cfg.profile, observations=observations, now=now,
            current_task=meta.current_task if meta else None,
            suggested_response=meta.suggested_response if meta else None,
            other_conversations=st.other_text or None, retrieval_instructions=instructions, unobserved=raw,
            prompts_folder=cfg.texts_folder(), optimize=not grouped, layout=cfg.context_layout,
            working_memory=actor_text(self, resource_id))
        return TurnContext(messages=messages, events=list(events or ()), pending_tokens=st.pending,
                           observation_tokens=rec.observation_token_count, generation=rec.generation_count,
                           rejections=list(events.rejections) if events is not None else [])

    def _own(self, messages: Sequence[Message], resource_id: str, thread_id: str) -> list[Message]:
        out = []
        for m in messages:
            if m.thread_id not in (None, thread_id) or m.resource_id not in (None, resource_id):
                raise InputError(f"message {m.id!r}: belongs to thread {m.thread_id!r}/resource {m.resource_id!r}, "
                                 f"not {thread_id!r}/{resource_id!r}")
            if m.created_at.tzinfo is None:
                raise InputError(f"message {m.id!r}: created_at must be timezone-aware (use UTC)")
            out.append(replace(m, thread_id=thread_id, resource_id=resource_id))
        return out

    def _ensure_thread(self, resource_id: str, thread_id: str, now: datetime) -> ThreadMeta:
        meta = self.storage.get_thread(thread_id)
        if meta is None:
            meta = ThreadMeta(thread_id=thread_id, resource_id=resource_id, created_at=now, updated_at=now)
            self.storage.save_thread(meta)
        elif meta.resource_id != resource_id:
            raise InputError(f"thread {thread_id!r} belongs to resource {meta.resource_id!r}, not {resource_id!r}")
        return meta

    def _head(self, key: str, resource_id: str, thread_id: str, now: datetime) -> OMRecord:
        rec = self.storage.get_record(key)
        if rec is not None:
            return rec
        return self.storage.initialize_record(
            lookup_key=key, scope=self.config.scope, resource_id=resource_id,
            thread_id=thread_id if self.config.scope == "thread" else None, now=now, timezone=self.config.timezone)

    def _idle_gap(self, resource_id: str, thread_id: str, msgs: Sequence[Message], now: datetime) -> timedelta | None:
        """Time since the thread's last assistant message (the provider-cache idle clock of Mastra's
        activation-ttl.ts)."""
        if self.config.idle_ms is None and self.config.reflection_idle_ms is None:
            return None
        first = min((m.created_at for m in msgs), default=now)
        recent = self.storage.list_messages(resource_id, thread_id, before=first, limit=20, direction="backward")
        last = next((m for m in reversed(recent) if m.role == "assistant"), None)
        return None if last is None else first - last.created_at

    def _temporal_marker(self, resource_id: str, thread_id: str, msgs: Sequence[Message],
                         events: TurnLog) -> list[Message]:
        """A `<system-reminder>` gap message before user input that follows a pause of ≥ 10 minutes (Mastra's
        temporal-markers.ts)."""
        if not self.config.temporal_markers:
            return []
        first = next((m for m in msgs if m.role == "user"), None)
        if first is None:
            return []
        new_ids = {m.id for m in msgs}
        recent = self.storage.list_messages(resource_id, thread_id, before=first.created_at, limit=10,
                                            direction="backward")
        prev = [m for m in recent if not m.id.startswith(TEMPORAL_MARKER_PREFIX) and m.id not in new_ids]
        if not prev or temporal_gap_text(prev[-1].created_at, first.created_at) is None:
            return []
        text = temporal_gap_marker(prev[-1].created_at, first.created_at, tz=self.tz)
        digest = hashlib.sha1(f"{thread_id}|{iso(first.created_at)}".encode()).hexdigest()[:12]
        events.append("temporal_marker")
        return [Message(id=f"{TEMPORAL_MARKER_PREFIX}{digest}", role="user",
                        content=f"<system-reminder>{text}</system-reminder>",
                        created_at=first.created_at - timedelta(milliseconds=1),
                        thread_id=thread_id, resource_id=resource_id)]
