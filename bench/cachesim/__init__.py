"""Provider-faithful prefix-cache simulators driven by the replay clock.

Profiles: ideal | openai (+ openai_24h, openai_gpt56) | anthropic (+ anthropic_1h) | vllm.
Build one with `make_simulator(name, **overrides)`; each keeps a cache per (model, stream). `CachePricing` prices
measured token counts after the fact, at the list price of the model called.
"""

from bench.cachesim.base import CacheResult, CacheSimulator
from bench.cachesim.pricing import CachePricing, token_settings
from bench.cachesim.registry import PROFILES, cache_read_multiplier, make_config, make_simulator, price_per_token

__all__ = ["CacheResult", "CacheSimulator", "CachePricing", "PROFILES", "make_config", "make_simulator",
           "price_per_token", "cache_read_multiplier", "token_settings"]
