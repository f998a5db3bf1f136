"""Helpers shared by the simulators: the clock, per-model lookups and the input-side cost formula."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from datetime import datetime
from typing import Any, Mapping

from bench.cachesim.base import CacheResult


def to_seconds(t: datetime | float | int) -> float:
    """Simulated time as seconds; naive datetimes are read in local time (consistent within a run)."""
    return t.timestamp() if isinstance(t, datetime) else float(t)


def normalise_model(model: str) -> str:
    """'anthropic/claude-opus-4.5-2025' -> 'claude-opus-4-5-2025' (provider prefix dropped, dots as dashes)."""
    return model.rsplit("/", 1)[-1].lower().replace(".", "-")


def lookup_by_model(table: Mapping[str, float] | tuple[tuple[str, float], ...], model: str, default: float) -> float:
    """Value of the longest table key contained in the normalised model name, else `default`."""
    if isinstance(table, tuple):  # the usual case (config tables are tuples): memoised, asked every observe
        try:
            return _lookup_cached(table, model, default)
        except TypeError:  # an unhashable entry
            pass
    return _lookup(table, model, default)


@lru_cache(maxsize=1024)
def _lookup_cached(table: tuple[tuple[str, float], ...], model: str, default: float) -> float:
    return _lookup(table, model, default)


def _lookup(table: Mapping[str, float] | tuple[tuple[str, float], ...], model: str, default: float) -> float:
    name = normalise_model(model)
    items = table.items() if isinstance(table, Mapping) else table
    best, best_len = default, -1
    for k, v in items:
        kk = normalise_model(k)
        if kk in name and len(kk) > best_len:
            best, best_len = v, len(kk)
    return best


@dataclass
class Pricing:
    """Input-side prices of one profile. Multipliers are relative to the base input price."""

    input_per_token: float = 0.0  # USD per uncached input token; 0 => costs are reported as 0
    input_per_token_by_model: dict[str, float] = field(default_factory=dict)  # exact model name overrides

    def base(self, model: str) -> float:
        return self.input_per_token_by_model.get(model, self.input_per_token)

    def multipliers(self, model: str) -> tuple[float, float]:
        """(read, write) prices of `model`'s cached and cache-written tokens, relative to its input price. Each
        profile's config defines them."""
        raise NotImplementedError

    def token_settings(self, model: str) -> dict[str, Any]:
        """The settings resolved for `model` that change which tokens hit (not what they cost); none by default."""
        return {}

    def cost(self, model: str, cached: float, prefill: float, write: float, price: float) -> float:
        """Input-side USD of one prompt of `model` at `price` USD per uncached input token (prefill = prompt -
        cached, so it includes the written tokens)."""
        read_mult, write_mult = self.multipliers(model)
        return price * ((prefill - write) + write_mult * write + read_mult * cached) if price else 0.0


def result(
    prompt_tokens: int, cached: int, write: int, price: float, read_mult: float, write_mult: float
) -> CacheResult:
    """CacheResult with cost = price * (uncached + write_mult*write + read_mult*cached) (`Pricing.cost` prices
    the same tokens after the fact); prefill = prompt - cached."""
    uncached = prompt_tokens - cached - write
    cost = price * (uncached + write_mult * write + read_mult * cached) if price else 0.0
    return CacheResult(
        prompt_tokens=prompt_tokens,
        cached_tokens=cached,
        prefill_tokens=prompt_tokens - cached,
        write_tokens=write,
        cost_usd=cost,
    )


def check_positive(owner: str, **values: float) -> None:
    for name, v in values.items():
        if v is None or v < 0:
            raise ValueError(f"{owner}: {name} must be >= 0 (got {v!r}); fix the cache profile config")
