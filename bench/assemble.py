"""Assembling a job: the validated config turned into the objects a run uses.

Set-up functions shared by `ombench run` and `ombench perf`: the job's replay settings, a configured strategy
resolved with them, the cache simulators' factory, their pricing and the Actor's per-model cache settings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from bench.cachesim.base import CacheSimulator
from bench.config import RootCfg, StrategyCfg
from bench.errors import ConfigError
from bench.strategies import ReplaySettings, StrategySpec, resolve_strategy

if TYPE_CHECKING:
    from bench.cachesim.pricing import CachePricing


def replay_settings(cfg: RootCfg) -> ReplaySettings:
    """The job-level replay settings of a validated config."""
    return ReplaySettings(
        actor_model=cfg.model.actor.model,
        max_input_tokens=cfg.model.actor_max_input_tokens,
        output_budget=cfg.answer.max_tokens,
        system_prompt=cfg.answer.system_prompt,
        method=cfg.answer.method,
        history_format=cfg.answer.history_format,
        await_background=cfg.replay.await_background,
        turn_offset_s=cfg.replay.turn_offset_s,
        think_time_s=cfg.replay.think_time_s,
    )


def configured_strategy(cfg: RootCfg, key: str, settings: ReplaySettings | None = None) -> StrategySpec:
    """The strategy configured under `strategies.<key>` (its `name:` or else `key` names the registered class),
    resolved with the job's settings. Raises ConfigError for an unknown strategy or a bad param."""
    s = cfg.strategies.get(key) or StrategyCfg()
    return resolve_strategy(s.name or key, s.params, settings or replay_settings(cfg), name=key)


def cache_simulators(profiles: Sequence[str], params: Mapping[str, Any] | None) -> Callable[[], dict[str, CacheSimulator]]:
    """A factory of fresh simulators (one per profile; a question starts with empty caches). They measure tokens;
    what those cost depends on the model answering and is priced when a run writes its rows
    (`cache_pricing`). Checks the settings once: a bad profile or knob is a one-line ConfigError."""
    from bench.cachesim import make_simulator

    per = {p: dict((params or {}).get(p) or {}) for p in profiles}

    def factory() -> dict[str, CacheSimulator]:
        return {p: make_simulator(p, **per[p]) for p in profiles}

    try:
        factory()
    except (TypeError, ValueError, KeyError) as exc:
        raise ConfigError(f"cachesim: {exc} (check cachesim.profiles / cachesim.params)") from None
    return factory


def cache_pricing(profiles: Sequence[str], params: Mapping[str, Any] | None) -> CachePricing:
    """Prices for the simulated cache results of these profiles (bench.cachesim.CachePricing). A bad profile or
    knob is a one-line ConfigError."""
    from bench.cachesim.pricing import CachePricing

    try:
        return CachePricing(profiles, params)
    except (TypeError, ValueError, KeyError) as exc:
        raise ConfigError(f"cachesim: {exc} (check cachesim.profiles / cachesim.params)") from None


def cache_token_settings(profiles: Sequence[str], params: Mapping[str, Any] | None, model: str) -> dict[str, Any]:
    """Per profile, the settings resolved for `model` that change which tokens hit (bench.cachesim.token_settings).
    A bad profile or knob is a one-line ConfigError."""
    from bench.cachesim.pricing import token_settings

    try:
        return token_settings(profiles, params, model)
    except (TypeError, ValueError, KeyError) as exc:
        raise ConfigError(f"cachesim: {exc} (check cachesim.profiles / cachesim.params)") from None
