"""Profiles, factory overrides and litellm price look-ups (litellm replaced by a stub: no slow import)."""

from __future__ import annotations

import sys
import types

import pytest

from bench.cachesim import PROFILES, cache_read_multiplier, make_simulator, price_per_token


def test_every_profile_builds() -> None:
    for name in PROFILES:
        assert make_simulator(name).name == name


def test_overrides_reach_the_config() -> None:
    sim = make_simulator("openai", ttl_s=300.0, min_prefix=2048)
    assert (sim.config.idle_s, sim.config.min_prefix) == (300.0, 2048)  # type: ignore[attr-defined]
    assert make_simulator("openai_24h").config.idle_s == 86400.0  # type: ignore[attr-defined]
    a1h = make_simulator("anthropic_1h").config  # type: ignore[attr-defined]
    assert (a1h.ttl_s, a1h.write_multiplier) == (3600.0, 2.0)
    with pytest.raises(ValueError, match="retention"):
        make_simulator("openai", retention="1w")


def test_prices_from_litellm_cost_map(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("litellm")
    fake.model_cost = {  # type: ignore[attr-defined]
        "gpt-4o": {"input_cost_per_token": 2.5e-6, "cache_read_input_token_cost": 1.25e-6},
        "claude-sonnet-4-5": {"input_cost_per_token": 3e-6},
    }
    monkeypatch.setitem(sys.modules, "litellm", fake)
    assert price_per_token("gpt-4o") == 2.5e-6
    assert price_per_token("anthropic/claude-sonnet-4-5") == 3e-6  # provider prefix dropped
    assert price_per_token("unknown-model") is None
    assert cache_read_multiplier("gpt-4o") == 0.5  # 1.25e-6 / 2.5e-6
    assert cache_read_multiplier("claude-sonnet-4-5") is None
