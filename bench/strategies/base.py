"""The one protocol every memory strategy implements, the context it is built with, and its param parsing."""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Awaitable, Callable, Literal, Mapping, Protocol, TypeVar, get_args

from bench.errors import ConfigError
from bench.prompt import Prompt
from bench.replay import ReplayTurn
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

    models: Mapping[str, ChatModel]  # roles: observer, reflector, summarizer
    embed: EmbedFn | None
    counter: TokenCounter
    actor_model: str
    max_input_tokens: int
    output_budget: int
    system_prompt: str
    resource_id: str

    def model(self, role: str, strategy: str) -> ChatModel:
        m = self.models.get(role)
        if m is None:
            raise ConfigError(f"strategy {strategy!r} needs a model for role {role!r}; configure model.{role}")
        return m

    def tokens(self, text: str) -> int:
        # encode() shares its memo with Prompt.units(), so counting a segment never tokenises it twice
        return len(self.counter.encode(text)) if text else 0


class Strategy(Protocol):
    name: str
    uses_oracle_view: bool  # True only for oracle: the runner then replays Instance.oracle_view()

    async def add_turn(self, turn: ReplayTurn) -> TurnResult:
        """Render the Actor prompt at this user turn (history so far + the user message), then commit the pair.

        Background model calls (observer, summariser, embeddings) go through the gateway, which records
        them in bench.records.current_calls.
        """
        ...

    async def question_prompt(self, question: str, question_date: datetime, question_date_str: str) -> Prompt:
        """The Actor prompt at question time (the answering call)."""
        ...

    def state(self) -> dict[str, Any]:
        """JSON-serialisable memory state after ingestion (for ingestion checkpoints)."""
        ...

    def load_state(self, state: dict[str, Any]) -> None: ...

    def ingest_key_params(self) -> dict[str, Any]:
        """The params (resolved) that change the memory state after ingestion; checkpoints are keyed on them."""
        ...


# ---- params ---------------------------------------------------------------------------------------------

# Set by the runner for every strategy; a strategy that has no use for one ignores it.
COMMON_PARAMS = ("method", "history_format", "await_background")

P = TypeVar("P")


def parse_params(cls: type[P], params: Mapping[str, Any] | None, strategy: str) -> P:
    """Build a params dataclass from a config dict: unknown knobs and wrong types are one-line ConfigErrors.

    Field types come from the dataclass annotations (str, int, float, bool, Literal[...], X | None).
    """
    data = dict(params or {})
    known = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            if key in COMMON_PARAMS:
                continue
            raise ConfigError(
                f"strategies.{strategy}.params.{key}: unknown parameter; valid: {', '.join(sorted(known))}"
            )
        kwargs[key] = _check(value, hints[key], f"strategies.{strategy}.params.{key}")
    return cls(**kwargs)


def _check(value: Any, hint: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if origin is Literal:
        choices = get_args(hint)
        if value not in choices:
            raise ConfigError(f"{where}={value!r}: choose one of {', '.join(map(repr, choices))}")
        return value
    if origin in (typing.Union, types.UnionType):
        args = get_args(hint)
        if value is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _check(value, a, where)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(errors[0] if len(errors) == 1 else f"{where}={value!r}: expected {_name(hint)}")
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}={value!r}: expected true or false")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}={value!r}: expected an integer")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}={value!r}: expected a number")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}={value!r}: expected a string")
        return value
    return value  # dicts and other structured knobs are checked by their consumer


def _name(hint: Any) -> str:
    return " or ".join(getattr(a, "__name__", str(a)) for a in get_args(hint) if a is not type(None))

