"""Memory strategies replayed through each haystack: full_context, rag, compaction, om, oracle.

`make_strategy(name, params, ctx)` builds one; each renders the Actor prompt at every user turn (a simulated
live agent: no Actor call during replay) and at question time, and can save/restore its memory state.
"""

from __future__ import annotations

import importlib
from typing import Any, Mapping

from bench.errors import ConfigError
from bench.strategies.base import COMMON_PARAMS, Strategy, StrategyContext, TurnResult

# name -> "module:Class"; imported on demand so e.g. om_core's engine loads only for the om strategy
STRATEGIES: dict[str, str] = {
    "full_context": "bench.strategies.full_context:FullContextStrategy",
    "rag": "bench.strategies.rag:RagStrategy",
    "compaction": "bench.strategies.compaction:CompactionStrategy",
    "om": "bench.strategies.om:OMStrategy",
    "oracle": "bench.strategies.oracle:OracleStrategy",
}


def strategy_class(name: str) -> type:
    target = STRATEGIES.get(name)
    if target is None:
        raise ConfigError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}")
    module, cls = target.split(":")
    return getattr(importlib.import_module(module), cls)


def make_strategy(name: str, params: Mapping[str, Any] | None, ctx: StrategyContext) -> Strategy:
    return strategy_class(name)(dict(params or {}), ctx)


__all__ = ["COMMON_PARAMS", "STRATEGIES", "Strategy", "StrategyContext", "TurnResult", "make_strategy", "strategy_class"]
