"""The protocol every cache simulator implements."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from bench.prompt import Prompt


@dataclass(frozen=True)
class CacheResult:
    prompt_tokens: int
    cached_tokens: int  # tokens served from cache (read)
    prefill_tokens: int  # tokens computed: prompt - cached (+ forced recompute for vLLM)
    write_tokens: int  # tokens written to cache at a premium (Anthropic, GPT-5.6+); 0 where writes are free
    cost_usd: float = 0.0  # input-side cost under this profile's prices (0 when no price given)


class CacheSimulator(Protocol):
    name: str

    def observe(self, t: datetime, prompt: Prompt, model: str = "", stream: str = "actor") -> CacheResult:
        """Submit one prompt at simulated time t; update the cache state; return what hit.

        `stream` separates caches that never share a prefix (actor vs observer prompts) when the profile
        models per-model caches.
        """
        ...
