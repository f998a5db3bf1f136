"""Provider-faithful prefix-cache simulators driven by the replay clock.

Profiles: ideal | openai (+ openai_24h, openai_gpt56) | anthropic (+ anthropic_1h) | vllm.
Build one with `make_simulator(name, **overrides)`; each keeps a cache per (model, stream).
"""

from bench.cachesim.base import CacheResult, CacheSimulator
from bench.cachesim.registry import PROFILES, cache_read_multiplier, make_simulator, price_per_token

__all__ = ["CacheResult", "CacheSimulator", "PROFILES", "make_simulator", "price_per_token", "cache_read_multiplier"]
