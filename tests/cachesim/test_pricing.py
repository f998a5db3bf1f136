"""Simulated cache results priced after the fact (bench.cachesim.CachePricing): the same formula as the
simulators' own cost, at the list price of the model called; per-model cache settings that change hits."""

from __future__ import annotations

import os

import pytest

from bench.cachesim import PROFILES, CachePricing, make_simulator, token_settings
from tests.helpers.words import W, prompt

pytestmark = pytest.mark.usefixtures("words")


def _list_price(model: str) -> float:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    return float(litellm.model_cost[model]["input_cost_per_token"])


@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize("model", ["gpt-4o", "gpt-5-mini", "claude-sonnet-4-5"])
def test_pricing_token_counts_later_gives_the_simulators_own_cost(profile: str, model: str) -> None:
    params = {"input_per_token": 2e-6, "ttl_s": 600} if profile.startswith("openai") else {"input_per_token": 2e-6}
    sim = make_simulator(profile, **params)
    pricing = CachePricing([profile], {profile: params})
    system = ("system", W("sys", 1500), True)
    seen = 0
    for t, text in enumerate([W("a", 300), W("a", 300) + " " + W("b", 700), W("c", 2000), W("d", 10)]):
        r = sim.observe(t * 30, prompt(system, ("user", text, True)), model=model)
        tokens = {"cached": r.cached_tokens, "prefill": r.prefill_tokens, "write": r.write_tokens}
        assert pricing.cost(profile, model, tokens) == pytest.approx(r.cost_usd, rel=1e-12)
        seen += r.cached_tokens
    assert seen > 0  # some of it was read from the cache, so the read multiplier was exercised


def test_each_call_is_priced_at_the_list_price_of_its_own_model() -> None:
    pricing = CachePricing(["openai", "vllm"])
    tokens = {"cached": 1024, "prefill": 2000, "write": 0}
    p4o, pmini = _list_price("gpt-4o"), _list_price("gpt-4o-mini")
    assert p4o != pmini
    # openai: cached tokens at 0.5x for the gpt-4o family
    assert pricing.cost("openai", "openai/gpt-4o", tokens) == pytest.approx(p4o * (2000 + 0.5 * 1024))
    assert pricing.cost("openai", "openai/gpt-4o-mini", tokens) == pytest.approx(pmini * (2000 + 0.5 * 1024))
    assert pricing.cost("vllm", "openai/gpt-4o", tokens) == pytest.approx(p4o * 2000)  # reads cost nothing
    assert pricing.cost("openai", "offline/reader", tokens) == 0.0  # not in litellm's map: no price
    priced = pricing.priced({"openai": {**tokens, "cost_usd": 123.0}, "vllm": tokens}, "openai/gpt-4o-mini")
    assert priced["openai"] == {**tokens, "cost_usd": pytest.approx(pmini * (2000 + 0.5 * 1024))}
    assert priced["vllm"]["cost_usd"] == pytest.approx(pmini * 2000)


def test_configured_prices_win_over_list_prices() -> None:
    pricing = CachePricing(["openai", "ideal"], {"openai": {"input_per_token": 1e-6},
                                                 "ideal": {"input_per_token_by_model": {"m": 3e-6}}})
    tokens = {"cached": 0, "prefill": 100, "write": 0}
    assert pricing.cost("openai", "openai/gpt-4o", tokens) == pytest.approx(1e-4)  # input_per_token, any model
    assert pricing.cost("ideal", "m", tokens) == pytest.approx(3e-4)  # this model's own price
    assert pricing.cost("ideal", "gpt-4o", tokens) == pytest.approx(_list_price("gpt-4o") * 100)


def test_token_settings_name_the_model_dependent_minimum_prefix() -> None:
    profiles = ["ideal", "openai", "anthropic", "vllm"]
    assert token_settings(profiles, None, "anthropic/claude-opus-4-5") == {"anthropic": {"min_prefix": 4096}}
    assert token_settings(profiles, None, "anthropic/claude-sonnet-4-5") == {"anthropic": {"min_prefix": 1024}}
    assert token_settings(profiles, {"anthropic": {"min_prefix": 2048}}, "openai/gpt-4o") == \
        {"anthropic": {"min_prefix": 2048}}
    assert token_settings(["ideal", "openai", "vllm"], None, "anthropic/claude-opus-4-5") == {}
