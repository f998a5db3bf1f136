"""What every memory strategy is: the declarations its class makes (`StrategyBase`), the protocol its instances
implement (`Strategy`), the context and job settings it is built with, and its param parsing."""

from __future__ import annotations

import abc
import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Awaitable, Callable, ClassVar, Mapping, Protocol

from bench.errors import ConfigError
from bench.prompt import Prompt
from bench.replay import ReplayTurn
from bench.roles import Role
from bench.store.contract import MemoryRow
from bench.strategies.params import Range, parse_params
from om_core.llm import ChatModel
from om_core.tokens import TokenCounter

EmbedFn = Callable[[list[str]], Awaitable[list[list[float]]]]


@dataclass
class TurnResult:
    """What the live agent would have sent to the Actor at this user turn, and what memory did."""

    prompt: Prompt | None  # None when the turn has no user message (nothing would be sent)
    events: list[str] = field(default_factory=list)  # buffer | activate | observe | reflect | compact | retrieve | truncate


@dataclass
class StrategyContext:
    """Everything a strategy may use besides its params: background models, tokenizer, the Actor's window."""

    models: Mapping[str, ChatModel]  # the chat roles the strategy declared (observer, reflector, summarizer)
    embed: EmbedFn | None  # set when it declared Role.EMBEDDER
    counter: TokenCounter
    actor_model: str
    max_input_tokens: int
    output_budget: int
    system_prompt: str
    resource_id: str
    # what the class's `resolve` made of its params for this job, built once (OM: the engine's OMConfig)
    resolved: Any = None
    # the benchmark's reader prompt layout (bench.benchmarks.base.Reader), for strategies that render it
    reader: Any = None

    def model(self, role: str, strategy: str) -> ChatModel:
        m = self.models.get(role)
        if m is None:
            raise ConfigError(f"strategy {strategy!r} needs a model for role {role!r}; configure model.{role}")
        return m

    def tokens(self, text: str) -> int:
        # encode() shares its memo with the rendering (bench.render.prompt_units), so counting a segment never tokenises it twice
        return len(self.counter.encode(text)) if text else 0

    def line_tokens(self, text: str) -> int:
        """tokens(text), tokenised by line pieces (`TokenCounter.encode_by_lines`, exact; its ids memoised as
        encode's): a later text that holds this one's lines (a request or document quoting the message) finds
        all of them but the last in the piece memo instead of tokenising them again."""
        return len(self.counter.encode_by_lines(text, keep_pieces=True)) if text else 0

    def renders_with_counter(self) -> bool:
        """Whether the default renderer tokenises with this context's counter (always in a run), so ids this
        counter memoises are the ones a prompt's rendering reuses."""
        from bench.render import default_renderer

        return bool(default_renderer().tokenizer == self.counter.encode)

    def segment_tokens(self, prompt: Prompt) -> list[int]:
        """Tokens of each segment's text of `prompt` (no message headers), as `tokens(seg.text)` would give them.
        When the default renderer tokenises with this context's counter (always in a run), the counts come from
        its rendering, which the simulators reuse and which tokenises a long segment that changed only from
        where it changed; counting the texts first would tokenise each such segment whole."""
        from bench.render import default_renderer

        renderer = default_renderer()
        if renderer.tokenizer == self.counter.encode:
            return renderer.segment_tokens(prompt)
        return [self.tokens(s.text) for s in prompt.segments]


@dataclass(frozen=True)
class ReplaySettings:
    """The job-level settings every question's replay shares (`bench.assemble.replay_settings(cfg)` reads them
    from the config once per job; `ombench run`, `ombench perf` and the dry run all go through it)."""

    actor_model: str = "gpt-4o"  # the Actor's model: its simulated prompts are observed under it; OM's auto idle TTL
    max_input_tokens: int = 128000  # the Actor's context window (tokens)
    output_budget: int = 800  # tokens reserved for the answer (answer.max_tokens)
    system_prompt: str = ""  # the Actor's system prompt, first in every prompt
    method: str = "con"  # reader prompt: chain-of-note or direct (answer.method)
    history_format: str = "json"  # reader prompt: session format (answer.history_format)
    await_background: bool = True  # wait for background memory work after each turn (deterministic)
    turn_offset_s: float = 5.0  # seconds between consecutive messages of a session
    think_time_s: float = 0.0  # seconds from a user message (or the question) to the Actor call
    benchmark: str = "longmemeval"  # whose reader prompt strategies render (bench.benchmarks)
    reader_prompt: str = "packaged"  # answer.prompt: "official" = the benchmark's own reader text (reader_of)
    official_repo: str | None = None  # judge.official_repo: where the official texts are read from
    # (role, model) of the background roles, as the gateway will call them: model-dependent engine rules
    # (OM's Reflector start level) see the models actually called
    role_models: tuple[tuple[str, str], ...] = ()

    def role_model(self, role: Role) -> str | None:
        return dict(self.role_models).get(role.value)

    def common_params(self) -> dict[str, Any]:
        """The params every strategy is offered (COMMON_PARAMS); a strategy's own config value wins."""
        return {"method": self.method, "history_format": self.history_format,
                "await_background": self.await_background}


class Strategy(Protocol):
    """A strategy instance: one per question, fed the haystack turn by turn (its class: `StrategyBase`)."""

    async def add_turn(self, turn: ReplayTurn) -> TurnResult:
        """Render the Actor prompt at this user turn (history so far + the user message), then commit the pair.

        Background model calls (observer, summariser, embeddings) go through the gateway, which records
        them with bench.records.record_call (collected by the replay driver with collect_calls()).
        """
        ...

    async def question_prompt(self, question: str, question_date: datetime, question_date_str: str) -> Prompt:
        """The Actor prompt at question time (the answering call)."""
        ...

    def state(self) -> dict[str, Any]:
        """JSON-serialisable memory state after ingestion (for ingestion checkpoints)."""
        ...

    def load_state(self, state: dict[str, Any]) -> None: ...


class StrategyBase(abc.ABC):
    """The declarations every strategy class makes, read without building it (by the ingestion key, the replay
    pipeline and perf). A strategy subclasses this, sets the class attributes and implements `Strategy`.

    - `params_type`: its params dataclass; field defaults are the documented defaults.
    - `roles`: the model roles it calls in the background (`model_roles` may narrow them by params).
    - `renders_reader_prompt`: its prompts use the benchmark's reader layout cut to the Actor's window, so the
      window and output budget shape them (they join the ingestion key).
    - `uses_oracle_view`: replay `Instance.oracle_view()` (evidence sessions only) instead of `view()`.
    - `key_params`: the params, resolved, that key its ingestion checkpoint.
    - `resolve`: what the params resolve to under the job's settings, built once per job and handed to
      `check`, `call_inputs`, `key_params` (as `resolved`) and to every instance (`StrategyContext.resolved`).
    """

    name: ClassVar[str]
    params_type: ClassVar[type[Any]]
    roles: ClassVar[frozenset[Role]] = frozenset()
    renders_reader_prompt: ClassVar[bool] = False
    uses_oracle_view: ClassVar[bool] = False

    @abc.abstractmethod
    def __init__(self, p: Any, ctx: StrategyContext) -> None:
        """Build for one question from the parsed params (`parse`) and the context."""

    # the instance side: the `Strategy` protocol
    @abc.abstractmethod
    async def add_turn(self, turn: ReplayTurn) -> TurnResult: ...

    @abc.abstractmethod
    async def question_prompt(self, question: str, question_date: datetime, question_date_str: str) -> Prompt: ...

    @abc.abstractmethod
    def state(self) -> dict[str, Any]: ...

    @abc.abstractmethod
    def load_state(self, state: dict[str, Any]) -> None: ...

    @classmethod
    def parse(cls, params: Mapping[str, Any] | None) -> Any:
        """The params dataclass from a config dict (defaults filled in). Raises ConfigError naming a bad knob."""
        return parse_params(cls.params_type, params, cls.name, ignore=COMMON_PARAMS)

    @classmethod
    def resolve(cls, p: Any, settings: ReplaySettings) -> Any:
        """What these params resolve to under the job's settings (OM: the engine's `OMConfig`), built once per
        job. Raises ConfigError (one line) for a combination that cannot resolve. Default: nothing (None)."""
        return None

    @classmethod
    def check(cls, p: Any, settings: ReplaySettings, resolved: Any = None) -> None:
        """Rules across params and the job's settings, checked with the config before any question (each
        param's own range is declared with it: `Annotated[int, Range(...)]`, bench.strategies.params). Raises
        ConfigError (one line naming `strategies.<name>.params.<knob>` and the fix). Default: none."""
        return None

    @classmethod
    def model_roles(cls, p: Any) -> frozenset[Role]:
        """The roles these params call (default: all of `roles`)."""
        return cls.roles

    @classmethod
    def memory_view(cls, state: Mapping[str, Any]) -> list[MemoryRow]:
        """The memory a question is answered from, read from `state()` (a checkpoint's state): the items the
        results viewer shows (OM: the active observation log, earlier reflections, buffered chunks). Default:
        nothing to show. Never raises on a state it does not recognise (returns [])."""
        return []

    @classmethod
    def call_inputs(cls, p: Any, settings: ReplaySettings, resolved: Any = None) -> dict[Role, int]:
        """Prompt tokens (at least) that one call to each of its roles carries under these params: the thresholds
        a model's context window must hold. The preflight compares them with the configured models' windows
        before any question. Default: none declared."""
        return {}

    @classmethod
    def key_params(cls, p: Any, settings: ReplaySettings, resolved: Any = None) -> dict[str, Any]:
        """What of the params changes the replay (memory, prompts, turn series), as resolved values: a value
        spelled out equal to its default gives the same dict. Default: every field of the params dataclass;
        a strategy overrides this to resolve derived values (a fraction of the window into tokens, ...)."""
        return dataclasses.asdict(p)


# Offered to every strategy from the job settings (ReplaySettings.common_params); one that has no use for a
# knob ignores it.
COMMON_PARAMS = tuple(ReplaySettings().common_params())

__all__ = ["COMMON_PARAMS", "Range", "ReplaySettings", "Strategy", "StrategyBase", "StrategyContext", "TurnResult",
           "parse_params"]
