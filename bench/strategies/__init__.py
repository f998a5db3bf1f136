"""Memory strategies replayed through each haystack, and the one registry of their names.

Each strategy renders the Actor prompt at every user turn (a simulated live agent: no Actor call during replay)
and at question time, and can save/restore its memory state. Its class declares what it needs
(`StrategyBase`: params dataclass, model roles, ingestion-key params); `resolve_strategy` reads those
declarations for a configured strategy, and `StrategySpec.build` makes an instance for one question.

Adding a strategy: its module here (a `StrategyBase` subclass), its `bench/conf/strategy/<name>.yaml`, and one line
in `STRATEGIES`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from bench.errors import ConfigError
from bench.registry import Registry
from bench.roles import Role
from bench.strategies.base import (
    COMMON_PARAMS,
    ReplaySettings,
    Strategy,
    StrategyBase,
    StrategyContext,
    TurnResult,
)

# The registry (bench.registry): name -> "module:Class", imported on first use (so om_core's engine loads only
# for om).
STRATEGIES: Registry[type[StrategyBase]] = Registry("strategy", {
    "full_context": "bench.strategies.full_context:FullContextStrategy",
    "rag": "bench.strategies.rag:RagStrategy",
    "compaction": "bench.strategies.compaction:CompactionStrategy",
    "om": "bench.strategies.om:OMStrategy",
    "oracle": "bench.strategies.oracle:OracleStrategy",
    "decay": "bench.strategies.decay:DecayStrategy",
})
STRATEGY_NAMES: tuple[str, ...] = STRATEGIES.names()


def strategy_class(name: str) -> type[StrategyBase]:
    """The class registered under `name`. Raises ConfigError (one line, listing the names) when unknown."""
    return STRATEGIES.get(name)


@dataclass(frozen=True)
class StrategySpec:
    """A configured strategy, resolved from its declarations: what the replay builds and the ingestion key hashes.

    `name` is the configured name (the key under `strategies:`), `cls` the registered class (`kind`), `params`
    its params dataclass with defaults and the job's common params filled in, `roles` the model roles it calls.
    """

    name: str
    cls: type[StrategyBase]
    params: Any
    roles: frozenset[Role]
    settings: ReplaySettings
    resolved: Any = None  # the class's `resolve` of the params, built once (OM: its OMConfig)

    @property
    def kind(self) -> str:
        return self.cls.name

    def key_params(self) -> dict[str, Any]:
        """The resolved params that key the ingestion checkpoint (see `StrategyBase.key_params`)."""
        return self.cls.key_params(self.params, self.settings, self.resolved)

    def call_inputs(self) -> dict[Role, int]:
        """Tokens one call to each role carries at least (see `StrategyBase.call_inputs`)."""
        return self.cls.call_inputs(self.params, self.settings, self.resolved)

    def build(self, ctx: StrategyContext) -> Strategy:
        """A fresh instance for one question."""
        return self.cls(self.params, ctx)


def resolve_strategy(kind: str, params: Mapping[str, Any] | None, settings: ReplaySettings | None = None,
                     *, name: str | None = None) -> StrategySpec:
    """Resolve a strategy of registered `kind` with its config `params` under the job's `settings`.

    The job's common params (answer.method, answer.history_format, replay.await_background) are offered first,
    so a strategy's own value for one wins. Raises ConfigError for an unknown kind, a bad param (its type or
    declared range) or a combination the strategy's `check` refuses."""
    cls = strategy_class(kind)
    settings = settings or ReplaySettings()
    try:
        p = cls.parse({**settings.common_params(), **dict(params or {})})
        resolved = cls.resolve(p, settings)
        cls.check(p, settings, resolved)
    except ConfigError as exc:
        if not name or name == kind:
            raise
        # a variant (`om_small: {name: om}`) is configured under its own key: the message names that key
        raise ConfigError(re.sub(rf"\bstrategies\.{re.escape(kind)}(?=[.:\s]|$)", f"strategies.{name}", str(exc))) from None
    return StrategySpec(name or kind, cls, p, cls.model_roles(p), settings, resolved)


def make_strategy(name: str, params: Mapping[str, Any] | None, ctx: StrategyContext) -> Strategy:
    """One instance of the registered strategy `name` with these params (defaults for the rest)."""
    cls = strategy_class(name)
    return cls(cls.parse(params), ctx)


__all__ = [
    "COMMON_PARAMS", "STRATEGIES", "STRATEGY_NAMES", "ReplaySettings", "Strategy", "StrategyBase", "StrategyContext",
    "StrategySpec", "TurnResult", "make_strategy", "resolve_strategy", "strategy_class",
]
