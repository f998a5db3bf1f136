"""Profiles by name, the factory, and litellm price look-ups (imported lazily: litellm is slow to import)."""

from __future__ import annotations

import os
from dataclasses import fields
from typing import Any

from bench.cachesim.anthropic_cache import AnthropicConfig, AnthropicSimulator
from bench.cachesim.base import CacheSimulator
from bench.cachesim.common import Pricing
from bench.cachesim.ideal import IdealConfig, IdealSimulator
from bench.cachesim.openai_cache import OpenAIConfig, OpenAISimulator
from bench.cachesim.vllm_cache import VLLMConfig, VLLMSimulator
from bench.registry import Registry

# Simulator kinds (bench.registry): kind -> (simulator class, its config dataclass)
KINDS: Registry[tuple[type, type]] = Registry("cache simulator kind", {
    "ideal": (IdealSimulator, IdealConfig),
    "openai": (OpenAISimulator, OpenAIConfig),
    "anthropic": (AnthropicSimulator, AnthropicConfig),
    "vllm": (VLLMSimulator, VLLMConfig),
})

# Profiles: name -> default parameters; "kind" picks the simulator, anything else overrides its config.
PROFILES: Registry[dict[str, Any]] = Registry("cache profile", {
    "ideal": {"kind": "ideal"},
    "openai": {"kind": "openai"},
    "openai_24h": {"kind": "openai", "retention": "24h"},
    "openai_gpt56": {"kind": "openai", "write_multiplier": 1.25},
    "anthropic": {"kind": "anthropic"},
    "anthropic_1h": {"kind": "anthropic", "ttl": "1h"},
    "vllm": {"kind": "vllm"},
}, key="cachesim.profiles")


def _resolve(name: str, params: dict[str, Any]) -> tuple[type, Pricing]:
    if name not in PROFILES:
        raise ValueError(f"unknown cache profile {name!r}; choose one of {', '.join(PROFILES)}")
    merged = {**PROFILES.get(name), **params}
    kind = merged.pop("kind")
    if kind not in KINDS:
        raise ValueError(f"cache profile {name!r}: unknown kind {kind!r}; choose one of {', '.join(KINDS)}")
    sim_cls, cfg_cls = KINDS.get(kind)
    allowed = {f.name for f in fields(cfg_cls)}
    bad = sorted(set(merged) - allowed)
    if bad:
        raise ValueError(f"cache profile {name!r}: unknown parameter(s) {bad}; allowed: {sorted(allowed)}")
    config: Pricing = cfg_cls(**merged)
    return sim_cls, config


def make_config(name: str, **params: Any) -> Pricing:
    """The config of profile `name` with `params` overriding its defaults (prices, multipliers, per-model
    settings). Raises ValueError (one line) for an unknown profile or parameter, or a bad value."""
    return _resolve(name, params)[1]


def make_simulator(name: str, **params: Any) -> CacheSimulator:
    """A fresh simulator for profile `name` (or a bare kind), with `params` overriding its defaults."""
    sim_cls, config = _resolve(name, params)
    sim: CacheSimulator = sim_cls(config, name=name)
    return sim


def _model_info(model: str) -> dict[str, Any] | None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm  # lazy: only where prices are needed

    cost = litellm.model_cost
    for k in (model, model.split("/", 1)[-1]):
        if k in cost:
            return cost[k]
    return None


def price_per_token(model: str) -> float | None:
    """Base input price (USD/token) from litellm's cost map, None when the model is unknown."""
    info = _model_info(model)
    v = info.get("input_cost_per_token") if info else None
    return float(v) if v is not None else None


def cache_read_multiplier(model: str) -> float | None:
    """cache_read_input_token_cost / input_cost_per_token from litellm, None when either is missing."""
    info = _model_info(model)
    if not info:
        return None
    base, read = info.get("input_cost_per_token"), info.get("cache_read_input_token_cost")
    return round(float(read) / float(base), 9) if base and read is not None else None
