"""What simulated cache results cost, priced after the fact from their token counts.

A replay measures tokens (cached, prefill, written per profile) and keeps them in its ingestion checkpoint; the
checkpoint is shared by every Actor that answers from it. Prices are therefore applied when a run writes its
rows, at the list input price of the model each call went to (the run's Actor for its simulated prompts, the
Observer's model for an Observer call, ...), so a new Actor never inherits another model's prices.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from bench.cachesim.common import Pricing
from bench.cachesim.registry import make_config, price_per_token

# per cache profile: {"cached", "prefill", "write"} in tokens, plus "cost_usd" once priced
CacheByProfile = dict[str, dict[str, float]]


class CachePricing:
    """Input-side USD of simulated cache results, per profile, for any model.

    The base price of a call is, in order: the profile's `input_per_token_by_model[model]`, an explicit
    `input_per_token` in the profile's params, else litellm's list input price of the model (0 when litellm
    does not know it, e.g. the offline engine). Read and write multipliers are the profile's (per model for
    `openai`). Raises ValueError (one line) for a bad profile or parameter."""

    def __init__(self, profiles: Sequence[str], params: Mapping[str, Any] | None = None) -> None:
        given = {p: dict((params or {}).get(p) or {}) for p in profiles}
        self._configs: dict[str, Pricing] = {p: make_config(p, **given[p]) for p in profiles}
        self._explicit = {p for p in profiles if "input_per_token" in given[p]}
        self._list: dict[str, float] = {}

    def price(self, profile: str, model: str) -> float:
        """USD per uncached input token of `model` under `profile`."""
        cfg = self._configs[profile]
        if model in cfg.input_per_token_by_model:
            return cfg.input_per_token_by_model[model]
        if profile in self._explicit:
            return cfg.input_per_token
        if model not in self._list:
            self._list[model] = price_per_token(model) or 0.0
        return self._list[model]

    def cost(self, profile: str, model: str, tokens: Mapping[str, float]) -> float:
        """USD of one prompt's input under `profile`, from its {"cached", "prefill", "write"} token counts."""
        cached, prefill, write = (float(tokens.get(k) or 0) for k in ("cached", "prefill", "write"))
        return self._configs[profile].cost(model, cached, prefill, write, self.price(profile, model))

    def priced(self, cache: Mapping[str, Mapping[str, float]], model: str) -> CacheByProfile:
        """A copy of one call's per-profile token counts with `cost_usd` set for `model` (profiles this pricing
        does not know are copied unpriced)."""
        out: CacheByProfile = {}
        for profile, tokens in cache.items():
            row = {k: v for k, v in tokens.items() if k != "cost_usd"}
            if profile in self._configs:
                row["cost_usd"] = self.cost(profile, model, tokens)
            out[profile] = row
        return out


def token_settings(profiles: Sequence[str], params: Mapping[str, Any] | None, model: str) -> dict[str, dict[str, Any]]:
    """Per profile, the settings resolved for `model` that change which tokens hit (anthropic: the minimum
    cacheable prefix); profiles with none are left out. Whatever keys simulated token counts must include these
    for the model the simulated prompts are observed under."""
    out: dict[str, dict[str, Any]] = {}
    for p in profiles:
        s = make_config(p, **dict((params or {}).get(p) or {})).token_settings(model)
        if s:
            out[p] = s
    return out
