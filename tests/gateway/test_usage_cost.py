"""Usage normalisation across providers and cost from litellm's price map (expectations from model_cost)."""

from __future__ import annotations

import importlib.metadata
from typing import Any

import pytest

from bench.gateway.setup import ensure_litellm
from bench.gateway.usage import estimate_cost, normalize_usage, price_map_version, price_snapshot
from om_core.llm import Usage


def prices(model: str) -> dict[str, Any]:
    return ensure_litellm().model_cost[model]


async def test_cached_call_cost_matches_hand_computation(make_gateway, fake_server, calls) -> None:
    def usage(body: dict[str, Any], text: str) -> dict[str, Any]:
        return {"prompt_tokens": 10_000, "completion_tokens": 100, "total_tokens": 10_100,
                "prompt_tokens_details": {"cached_tokens": 8_000}}

    fake_server.usage_fn = usage
    gw = make_gateway(model="openai/gpt-4o")
    out = await gw.model("actor").complete([{"role": "user", "content": "price me"}])
    p = prices("gpt-4o")
    expected = (2_000 * p["input_cost_per_token"] + 8_000 * p["cache_read_input_token_cost"]
                + 100 * p["output_cost_per_token"])
    assert expected == pytest.approx(0.016)
    assert out.usage == Usage(prompt_tokens=10_000, completion_tokens=100, cached_tokens=8_000)
    assert out.meta["cost_usd"] == pytest.approx(expected) and out.meta["cost_known"]
    rec = calls[0]
    assert (rec.prompt_tokens, rec.completion_tokens, rec.cached_tokens_reported) == (10_000, 100, 8_000)
    assert rec.cost_usd == pytest.approx(expected) and rec.model == "openai/gpt-4o"


def test_anthropic_cache_write_and_read_prices() -> None:
    p = prices("claude-sonnet-4-5")
    expected = (2_000 * p["cache_creation_input_token_cost"] + 8_000 * p["cache_read_input_token_cost"]
                + 100 * p["output_cost_per_token"])
    got = estimate_cost("anthropic/claude-sonnet-4-5", 10_000, 100, cached_tokens=8_000, cache_write_tokens=2_000)
    assert got == pytest.approx(expected)
    assert got == pytest.approx(0.0114)


def test_deepseek_and_gemini_cache_read_prices() -> None:
    d = prices("deepseek/deepseek-chat")
    expected = 2_000 * d["input_cost_per_token"] + 8_000 * d["cache_read_input_token_cost"] + 10 * d[
        "output_cost_per_token"]
    assert estimate_cost("deepseek/deepseek-chat", 10_000, 10, cached_tokens=8_000) == pytest.approx(expected)
    g = prices("gemini/gemini-2.5-flash")
    expected = 1_000 * g["input_cost_per_token"] + 4_000 * g["cache_read_input_token_cost"]
    assert estimate_cost("gemini/gemini-2.5-flash", 5_000, 0, cached_tokens=4_000) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ({"prompt_tokens": 10_000, "completion_tokens": 100, "prompt_tokens_details": {"cached_tokens": 8_000}},
         Usage(10_000, 100, 8_000, 0)),
        # raw Anthropic: input_tokens is only the uncached remainder
        ({"input_tokens": 21, "output_tokens": 7, "cache_creation_input_tokens": 188_086,
          "cache_read_input_tokens": 0}, Usage(188_107, 7, 0, 188_086)),
        ({"input_tokens": 21, "output_tokens": 7, "cache_creation_input_tokens": 0,
          "cache_read_input_tokens": 188_086}, Usage(188_107, 7, 188_086, 0)),
        # litellm-normalised Anthropic: prompt_tokens already includes both
        ({"prompt_tokens": 10_000, "completion_tokens": 5, "cache_creation_input_tokens": 2_000,
          "cache_read_input_tokens": 8_000, "prompt_tokens_details": {"cached_tokens": 8_000}},
         Usage(10_000, 5, 8_000, 2_000)),
        ({"usageMetadata": {"promptTokenCount": 5_000, "candidatesTokenCount": 20, "cachedContentTokenCount": 4_000}},
         Usage(5_000, 20, 4_000, 0)),
        ({"prompt_token_count": 5_000, "candidates_token_count": 20, "cached_content_token_count": 1_024},
         Usage(5_000, 20, 1_024, 0)),
        ({"prompt_tokens": 5_000, "completion_tokens": 20, "prompt_cache_hit_tokens": 4_096,
          "prompt_cache_miss_tokens": 904}, Usage(5_000, 20, 4_096, 0)),
        (None, Usage()),
    ],
)
def test_normalize_usage(raw: Any, want: Usage) -> None:
    assert normalize_usage(raw) == want


def test_normalize_litellm_usage_object() -> None:
    litellm = ensure_litellm()
    u = litellm.Usage(prompt_tokens=300, completion_tokens=4, total_tokens=304,
                      prompt_tokens_details={"cached_tokens": 256})
    assert normalize_usage(u) == Usage(300, 4, 256, 0)


async def test_unknown_model_costs_zero_with_a_flag(make_gateway, calls) -> None:
    gw = make_gateway(model="openai/no-such-model-xyz")
    out = await gw.model("actor").complete([{"role": "user", "content": "x"}])
    assert out.meta["cost_usd"] == 0.0 and out.meta["cost_known"] is False
    assert estimate_cost("nobody/knows", 1_000, 10) == 0.0
    assert estimate_cost("offline/reader", 1_000, 10) == 0.0


def test_price_map_version_and_snapshot() -> None:
    v = price_map_version()
    assert v["litellm_version"] == importlib.metadata.version("litellm")
    assert v["source"] == "local"
    snap = price_snapshot(["openai/gpt-4o", "offline/judge"])
    assert snap["openai/gpt-4o"]["input_cost_per_token"] == prices("gpt-4o")["input_cost_per_token"]
    assert snap["offline/judge"] == {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0}  # registered free


def test_a_free_custom_model_costs_what_litellm_says_without_asking_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.gateway.usage import cost_of
    from bench.offline import MODELS, register

    register()
    litellm = ensure_litellm()
    counts = [(0, 0, 0, 0), (1, 1, 0, 0), (1_234, 56, 7, 8), (987_654, 32_100, 500_000, 1_000)]
    expected = {}
    for name in MODELS:
        for c in counts:
            p, q = litellm.cost_per_token(model=f"offline/{name}", prompt_tokens=c[0], completion_tokens=c[1],
                                          cache_read_input_tokens=c[2], cache_creation_input_tokens=c[3])
            expected[name, c] = float(p) + float(q)
    assert set(expected.values()) == {0.0}

    def refuse(**kw: Any) -> Any:
        raise AssertionError("litellm.cost_per_token called for a free custom model")

    monkeypatch.setattr(litellm, "cost_per_token", refuse)
    for (name, c), usd in expected.items():
        got = cost_of(f"offline/{name}", Usage(*c))
        assert (got.usd, got.known) == (usd, True)
    # a priced or unknown model still asks litellm
    assert cost_of("openai/gpt-4o", Usage(10, 1)).known is False  # (refused above: counted as unknown)
