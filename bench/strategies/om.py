"""om: om_core's ObservationalMemory, set up as Mastra replayed LongMemEval (mastra-ai/mastra,
explorations/longmemeval/src/commands/prepare.ts and run.ts).

Resource scope, one thread per haystack session (thread id = the session's opaque label), thread ids
obscured in prompts, a fresh store per question (SQLite in memory, or a file for checkpoints). At each user
turn `prepare_turn` with the user message gives the Actor's context (prompt = system prompt + its messages,
keys and breakpoints kept); `finish_turn` then stores the assistant reply. At question time `context` on a
new thread renders memory with relative dates computed against the question date (never the wall clock),
followed by `Current Date: …\nQuestion: …`. With `await_background` (default) every turn waits for the
engine's background work, so a replay is deterministic, and what that work did (including refused outputs:
`observation_rejected`, `reflection_rejected`, `degenerate_reflection`...) is reported in the turn's events.

Beyond Mastra's replay (all off by default): `finalize` observes whatever is still unobserved before the
question (Mastra's benchmark had such a pass only in its shortcut config), `context_layout: stable_prefix`
moves the OTHER-conversations block after the observations, and `working_memory` has the Observer keep a short
block about the user that the Actor sees after the observations (om_core docs/om.md). The question prompt's
meta says whether memory was empty (`memory_empty`) and what the finalize pass did (`events`); with working
memory on, every prompt's meta has `working_memory_tokens` and a turn that changed it has the event
`working_memory`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, Mapping, Sequence

from bench.errors import ConfigError
from bench.prompt import Prompt
from bench.replay import ReplayTurn, as_utc
from bench.roles import Role
from bench.strategies.base import Range, ReplaySettings, StrategyBase, StrategyContext, TurnResult
from bench.strategies.history import SegmentCache, question_text, system_segments
from om_core.types import ContextMessage, Message
from om_core.types import Role as MessageRole

if TYPE_CHECKING:
    from bench.store.contract import MemoryRow
    from om_core import OMConfig


@dataclass
class OMParams:
    profile: Literal["m11", "m31"] = "m31"
    scope: Literal["resource", "thread"] = "resource"
    message_tokens: Annotated[int, Range(gt=0, unit="tokens")] = 30000  # unobserved messages before the Observer runs
    observation_tokens: Annotated[int, Range(gt=0, unit="tokens")] = 40000  # observations before the Reflector runs
    buffer_tokens: int | float | bool | None = None  # None: the profile/scope default (resource scope: off)
    obscure_thread_ids: bool = True
    # "packaged": om_core's own texts; "mastra": the pinned Mastra release's texts, read at run time from npm
    # (om_core.mastra_texts: profile m11 = @mastra/memory 1.1.0, m31 = 1.31.0; needs Node.js and npm on first use)
    prompt_source: Literal["packaged", "mastra"] = "packaged"
    await_background: bool = True
    storage: Literal["sqlite", "memory"] = "sqlite"
    # a file keeps the store for inspection ("{resource}" = the resource id); it is rebuilt by every replay
    storage_path: str = ":memory:"
    question_thread: str = "question"  # the new thread the question is asked in (Mastra: eval_<qid>_<ts>)
    finalize: bool = False  # observe everything still unobserved before the question (om_core finalize())
    context_layout: Literal["mastra", "stable_prefix"] = "mastra"  # stable_prefix: OTHER block after observations
    degenerate_guard: bool | None = None  # None: the profile's rule (m31 checks for loops, m11 does not)
    working_memory: bool = False  # the Observer keeps a working-memory block, shown after the observations
    working_memory_tokens: Annotated[int, Range(gt=0, unit="tokens")] = 400  # its token cap
    observation: dict[str, Any] | None = None  # further OMConfig.observation knobs
    reflection: dict[str, Any] | None = None  # further OMConfig.reflection knobs
    config: dict[str, Any] | None = None  # further top-level OMConfig knobs (temporal_markers, activate_after_idle, ...)


def om_config_dict(p: OMParams, actor_model: str, observer_model: str | None = None,
                   reflector_model: str | None = None) -> dict[str, Any]:
    obs: dict[str, Any] = {"message_tokens": p.message_tokens, **(p.observation or {})}
    if p.buffer_tokens is not None:
        obs["buffer_tokens"] = p.buffer_tokens
    refl: dict[str, Any] = {"observation_tokens": p.observation_tokens, **(p.reflection or {})}
    # the engine's model-dependent rules (the Reflector's start level is 2 for gemini-2.5-flash, else 1) must
    # see the models actually called through the gateway
    if observer_model:
        obs.setdefault("model", observer_model)
    if reflector_model:
        refl.setdefault("model", reflector_model)
    out = {
        "profile": p.profile,
        "scope": p.scope,
        "obscure_thread_ids": p.obscure_thread_ids,
        "prompt_source": p.prompt_source,
        "actor_model": actor_model,
        "context_layout": p.context_layout,
        "degenerate_guard": p.degenerate_guard,
        **(p.config or {}),
        "observation": obs,
        "reflection": refl,
    }
    if p.working_memory:
        out["working_memory"] = {"enabled": True, "max_tokens": p.working_memory_tokens}
    return out


def om_config(p: OMParams, actor_model: str, observer_model: str | None = None,
              reflector_model: str | None = None) -> OMConfig:
    """The engine's config for these params. Raises ConfigError (one line) on an invalid combination."""
    from om_core.config import OMConfig

    try:
        return OMConfig.from_dict(om_config_dict(p, actor_model, observer_model, reflector_model))
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"strategies.om.params: {exc}") from None


class OMStrategy(StrategyBase):
    name = "om"
    params_type = OMParams
    roles = frozenset({Role.OBSERVER, Role.REFLECTOR})

    def __init__(self, p: OMParams, ctx: StrategyContext) -> None:
        self.p = p
        self.ctx = ctx
        self.observer = ctx.model(Role.OBSERVER, self.name)
        self.reflector = ctx.model(Role.REFLECTOR, self.name)
        self.config = _engine_config(p, ctx)
        self._counts: dict[str, int] = {}  # messages stored per thread, for ids "<thread>-<k>"
        self._segs = SegmentCache()
        self._open(None)

    def _open(self, state: dict[str, Any] | None) -> None:
        from om_core.memory import ObservationalMemory
        from bench.errors import storage_failure
        from om_core.errors import FormatVersionError, StorageError
        from om_core.storage import InMemoryStorage, SQLiteStorage

        path = self.p.storage_path.replace("{resource}", self.ctx.resource_id)
        old = getattr(self, "storage", None)
        if old is not None:
            old.close()
        try:
            storage = SQLiteStorage(path) if self.p.storage == "sqlite" else InMemoryStorage()
            # a storage file is a cache of this replay, never a source of truth: a replay that was killed leaves its
            # rows behind, so a replay starts from nothing and a checkpoint restores exactly its snapshot
            if state is not None:
                storage.import_state(state)
            else:
                storage.forget_resource(self.ctx.resource_id)
        except StorageError as exc:
            if path == ":memory:" or isinstance(exc, FormatVersionError):
                raise
            # a damaged file fails this question on every re-run: stop with one line, file and fix (exit 1)
            raise storage_failure(exc, f"opening the OM storage file {path} (strategies.om.params.storage_path)",
                                  safe="the results stored so far are intact",
                                  fix="move the file aside (it only caches the replay), then re-run the same "
                                      "command: a fresh file is made at the same path") from exc
        self.storage = storage
        self.memory = ObservationalMemory(self.config, storage, self.observer, self.reflector, counter=self.ctx.counter)

    def _message(self, thread: str, role: MessageRole, content: str, at: datetime) -> Message:
        k = self._counts.get(thread, 0)
        self._counts[thread] = k + 1
        rid = self.ctx.resource_id
        return Message(f"{thread}-{k}", role, content, at, thread_id=thread, resource_id=rid)

    # ---- protocol ---------------------------------------------------------------------------------------
    async def add_turn(self, turn: ReplayTurn) -> TurnResult:
        rid, tid = self.ctx.resource_id, turn.thread_id
        result = TurnResult(prompt=None)
        if turn.user is not None:
            user = self._message(tid, "user", turn.user, turn.user_at)
            tc = await self.memory.prepare_turn(rid, tid, [user], turn.user_at)
            result.events.extend(tc.events)
            result.prompt = self._prompt(tc.messages, user)
            memory_tokens, raw_tokens = prompt_split(result.prompt, self.ctx.segment_tokens(result.prompt))  # what the Actor saw
            result.prompt.meta.update(
                observation_tokens=tc.observation_tokens, pending_tokens=tc.pending_tokens, generation=tc.generation,
                memory_tokens=memory_tokens, raw_tokens=raw_tokens,  # the split the report and viewer draw
                **self._working_meta(),
            )
        if turn.assistant is not None:
            reply = self._message(tid, "assistant", turn.assistant, turn.assistant_at)
            result.events.extend(await self.memory.finish_turn(rid, tid, [reply], turn.assistant_at))
        if self.p.await_background:
            await self.memory.wait_idle()
            result.events.extend(self.memory.take_background_events(rid, tid))
        return result

    async def question_prompt(self, question: str, question_date: datetime, question_date_str: str) -> Prompt:
        now = as_utc(question_date)
        tid = self.p.question_thread
        # not counted: rendering the question is read-only and may be repeated
        text = question_text(question, question_date_str)
        q = Message(f"{tid}-0", "user", text, now, thread_id=tid, resource_id=self.ctx.resource_id)
        events: list[str] = []
        if self.p.finalize:  # writes memory once; a repeated call finds nothing left to observe
            threads = [tid] if self.config.scope == "resource" else list(self._counts)
            for t in threads:
                events += await self.memory.finalize(self.ctx.resource_id, t, now)
        tc = await self.memory.context(self.ctx.resource_id, tid, now, extra_messages=(q,))
        prompt = self._prompt(tc.messages, q)
        prompt.meta.update(memory_empty=tc.observation_tokens == 0, observation_tokens=tc.observation_tokens,
                           events=events, **self._working_meta())
        return prompt

    def _working_meta(self) -> dict[str, Any]:
        if not self.config.working_memory.enabled:
            return {}
        wm = self.memory.working_memory(self.ctx.resource_id)
        return {"working_memory_tokens": wm.token_count if wm is not None else 0}

    def state(self) -> dict[str, Any]:
        return {"om": self.storage.export_state(self.ctx.resource_id), "counts": dict(self._counts)}

    def load_state(self, state: dict[str, Any]) -> None:
        self._counts = dict(state.get("counts", {}))
        self._open(state.get("om"))

    @classmethod
    def memory_view(cls, state: Mapping[str, Any]) -> list[MemoryRow]:
        from bench.strategies.om_memory import memory_view  # the reading of om_core's records lives there

        return memory_view(state)

    @classmethod
    def resolve(cls, p: OMParams, settings: ReplaySettings) -> OMConfig:
        """The engine's config, built once per job: every rule om_core's OMConfig enforces is checked here, and
        the models of the Observer and Reflector are the ones the gateway will call (`settings.role_models`).
        Raises ConfigError (one line)."""
        return om_config(p, settings.actor_model, settings.role_model(Role.OBSERVER),
                         settings.role_model(Role.REFLECTOR))

    @classmethod
    def check(cls, p: OMParams, settings: ReplaySettings, resolved: Any = None) -> None:
        # the thresholds as the engine resolved them: `message_tokens` or its spelling under
        # `observation.message_tokens`, whichever the config set (the nested one wins, as in OMConfig)
        config = resolved if resolved is not None else cls.resolve(p, settings)
        actor = config.observation.message_tokens + config.reflection.observation_tokens
        if actor > settings.max_input_tokens:
            raise ConfigError(
                f"strategies.om.params: message_tokens + observation_tokens = {actor:,} tokens can reach the Actor, "
                f"more than its window (model.actor_max_input_tokens={settings.max_input_tokens:,}); lower them")

    @classmethod
    def call_inputs(cls, p: OMParams, settings: ReplaySettings, resolved: Any = None) -> dict[Role, int]:
        # the Observer reads at least `message_tokens` of raw messages, the Reflector at least
        # `observation_tokens` of observations, and the Actor may hold both (observations + unobserved tail);
        # read from the resolved engine config, so a threshold set as observation.message_tokens counts too
        config = resolved if resolved is not None else cls.resolve(p, settings)
        obs, refl = config.observation.message_tokens, config.reflection.observation_tokens
        return {Role.OBSERVER: obs, Role.REFLECTOR: refl, Role.ACTOR: obs + refl}

    @classmethod
    def key_params(cls, p: OMParams, settings: ReplaySettings, resolved: Any = None) -> dict[str, Any]:
        """The engine's resolved config (every OMConfig knob, defaults filled in), not the params as spelled.

        The models of the observer and reflector key the checkpoint through their roles; the actor model only
        through what it resolves (the idle TTL of activate_after_idle="auto"). The storage backend and its
        path hold the same memory, so they are left out, and so is working memory while it is off (keys of runs
        from before it existed stay valid)."""
        config = resolved if resolved is not None else cls.resolve(p, settings)
        d = asdict(config)
        d.pop("actor_model")
        # the Observer's and Reflector's models key the checkpoint through their roles: only a model spelled
        # in the params is part of them
        d["observation"]["model"] = (p.observation or {}).get("model")
        d["reflection"]["model"] = (p.reflection or {}).get("model")
        if not config.working_memory.enabled:
            d.pop("working_memory")
        if config.prompt_source == "packaged":
            d.pop("prompt_source")  # keys of runs from before the option existed stay valid
        else:
            d["prompt_texts"] = config.texts_source()  # the texts' hash keys the run, not where they are cached
        return {"config": d, "idle_ms": config.idle_ms, "reflection_idle_ms": config.reflection_idle_ms,
                "await_background": p.await_background, "question_thread": p.question_thread, "finalize": p.finalize}

    # ---- rendering --------------------------------------------------------------------------------------
    def _prompt(self, messages: list[ContextMessage], new: Message) -> Prompt:
        # One segment (and chat message) per context message. Segment objects are reused across turns while
        # unchanged (self._segs), so the rendering and the simulators skip the unchanged prefix.
        segs = system_segments(self.ctx.system_prompt)
        get = self._segs.get
        for i, m in enumerate(messages):
            segs.append(get(m.role, _text(m), m.key or f"om:{i}", m.breakpoint, len(segs)))
        if not messages or messages[-1].content != new.content:
            # engines that leave the new message to the caller
            segs.append(get("user", new.content, f"msg:{new.id}", False, len(segs)))
        last = segs[-1]  # the engine's breakpoints, plus the last message (moved each turn)
        segs[-1] = get(last.role, last.text, last.key, True, last.message_index)
        return Prompt(segments=segs)


_FRAMING = frozenset({"om:preamble", "om:open", "om:continuation"})  # OM's instructions, neither memory nor messages


def prompt_split(prompt: Prompt, counts: Sequence[int]) -> tuple[int, int]:
    """(memory, raw) tokens of an Actor prompt as om_core laid it out (keys of om_core.context): memory = the
    observation chunks, working memory and task hints (`om:*`; under m11 the one system message that holds the
    observations); raw = the messages themselves (`msg:*`: this thread's unobserved tail and the new message) and
    the other threads' unobserved messages (`om:other`). The system prompt, OM's instructions and message headers
    are neither (the rest of the prompt). Before OM's first observation this is (0, the thread's messages): not
    the resource's unobserved tokens (`pending_tokens`), most of which the Actor never sees. `counts`: the
    tokens of each segment's text (`StrategyContext.segment_tokens`)."""
    memory = raw = 0
    for seg, n in zip(prompt.segments, counts):
        if seg.key.startswith("msg:") or seg.key == "om:other":
            raw += n
        elif seg.key.startswith("om:") and seg.key not in _FRAMING:
            memory += n
    return memory, raw


def _text(m: ContextMessage) -> str:
    """A context message as prompt text: its content, then its tool calls (arguments and results) as JSON, so an
    exchange with tools is counted and cached like the tokens it would send."""
    if not m.tool_calls:
        return m.content
    calls = [{"id": c.id, "name": c.name, "args": c.args, "state": c.state, "result": c.result} for c in m.tool_calls]
    return (m.content + "\n" if m.content else "") + json.dumps(calls, ensure_ascii=False, default=str)


def _engine_config(p: OMParams, ctx: StrategyContext) -> OMConfig:
    """The job's resolved config (`ctx.resolved`, built once) when it was resolved for the models this question
    calls, else one built for them (a strategy built outside a job, with other models)."""
    observer = getattr(ctx.models.get(Role.OBSERVER), "model_name", None)
    reflector = getattr(ctx.models.get(Role.REFLECTOR), "model_name", None)
    got = ctx.resolved
    if got is not None and got.actor_model == ctx.actor_model and (
            got.observation.model == ((p.observation or {}).get("model") or observer)
            and got.reflection.model == ((p.reflection or {}).get("model") or reflector)):
        return got
    return om_config(p, ctx.actor_model, observer, reflector)
