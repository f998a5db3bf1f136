"""Usage normalisation across providers and USD cost from litellm's (local, pinned) price map.

`Usage.prompt_tokens` always *includes* cached-read and cache-write tokens (the OpenAI convention, and what
litellm reports after normalising Anthropic); cost is then
  uncached × input price + cached × cache-read price + written × cache-write price + completion × output price,
as `litellm.cost_per_token` computes it. Unknown models cost 0 with `known=False`, never an exception.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from om_core.llm import Usage

from bench.gateway.providers import provider_for

_PROMPT = ("prompt_tokens", "promptTokenCount", "prompt_token_count")
_COMPLETION = ("completion_tokens", "output_tokens", "candidatesTokenCount", "candidates_token_count")
_CACHED = ("cache_read_input_tokens", "prompt_cache_hit_tokens", "cached_content_token_count",
           "cachedContentTokenCount", "cached_tokens")
_WRITE = ("cache_creation_input_tokens", "cache_write_tokens", "cache_creation_tokens")
_DETAILS = ("prompt_tokens_details", "input_tokens_details")


def _as_dict(obj: Any) -> dict[str, Any]:
    if obj is None:
        return {}
    if isinstance(obj, Mapping):
        return {k: _as_dict(v) if hasattr(v, "model_dump") else v for k, v in obj.items()}
    if hasattr(obj, "model_dump"):
        try:
            return dict(obj.model_dump())
        except Exception:
            pass
    return {k: v for k, v in vars(obj).items() if not k.startswith("_")} if hasattr(obj, "__dict__") else {}


def _int(v: Any) -> int | None:
    if isinstance(v, bool) or v is None:
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _first(d: Mapping[str, Any], keys: Iterable[str]) -> int | None:
    for k in keys:
        v = _int(d.get(k))
        if v is not None:
            return v
    return None


def _largest(d: Mapping[str, Any], keys: Iterable[str]) -> int:
    vals = [_int(d.get(k)) for k in keys]
    for det in _DETAILS:
        sub = d.get(det)
        if isinstance(sub, Mapping) or hasattr(sub, "model_dump"):
            sub = _as_dict(sub)
            vals += [_int(sub.get(k)) for k in keys]
    return max([v for v in vals if v is not None], default=0)


def normalize_usage(raw: Any) -> Usage:
    """Usage from an OpenAI, Anthropic, Gemini or DeepSeek usage object/dict (raw or litellm-normalised)."""
    d = _as_dict(raw)
    for nested in ("usage_metadata", "usageMetadata", "usage"):  # a whole response was passed
        if d.get(nested) is not None and not any(k in d for k in (*_PROMPT, "input_tokens")):
            d = _as_dict(d[nested])
            break
    cached = _largest(d, _CACHED)
    write = _largest(d, _WRITE)
    prompt = _first(d, _PROMPT)
    if prompt is None:
        # raw Anthropic: input_tokens counts only the uncached remainder after the last breakpoint
        prompt = (_int(d.get("input_tokens")) or 0) + (cached if "cache_read_input_tokens" in d else 0) + write
    completion = _first(d, _COMPLETION) or 0
    return Usage(prompt_tokens=prompt, completion_tokens=completion, cached_tokens=min(cached, prompt),
                 cache_write_tokens=min(write, prompt))


@dataclass(frozen=True)
class Cost:
    usd: float
    known: bool  # False: the model is not in the price map (cost reported as 0)


FREE = Cost(0.0, True)


def cost_of(model: str, usage: Usage) -> Cost:
    """Cost from litellm's price map (custom providers' prices included once they are registered).

    A model of a registered custom provider whose price-map entry has every cost at zero (the offline engine's)
    costs 0.0, known, for any token counts, which is what `litellm.cost_per_token` answers for it: that call
    (about 0.3 ms) is skipped. The entry is read at every call, so a price registered later counts at once."""
    from bench.gateway.setup import ensure_litellm

    litellm = ensure_litellm()
    if _free_custom_model(litellm.model_cost, model):
        return FREE
    try:
        p, c = litellm.cost_per_token(
            model=model,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cache_read_input_tokens=usage.cached_tokens,
            cache_creation_input_tokens=usage.cache_write_tokens,
        )
        return Cost(float(p) + float(c), True)
    except Exception:
        return Cost(0.0, False)


def _free_custom_model(price_map: Mapping[str, Any], model: str) -> bool:
    """Whether `model` is served by a registered custom provider and its price-map entry (the one litellm prices
    it by: registered under the full name) sets some cost, every one zero (unset costs, None, count as none)."""
    if provider_for(model) is None:
        return False
    entry = price_map.get(model)
    if not isinstance(entry, Mapping):
        return False
    costs = [v for k, v in entry.items() if "cost" in k and v is not None]
    return bool(costs) and all(type(v) in (int, float) and v == 0 for v in costs)


def estimate_cost(model: str, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0,
                  cache_write_tokens: int = 0) -> float:
    """USD for a hypothetical call (dry-run estimates, cache simulators); 0.0 for unknown or free models."""
    usage = Usage(prompt_tokens, completion_tokens, cached_tokens, cache_write_tokens)
    return cost_of(model, usage).usd


def price_map_version() -> dict[str, Any]:
    """litellm version and where its price map came from, for run manifests."""
    from bench.gateway.setup import ensure_litellm

    ensure_litellm()
    out: dict[str, Any] = {"litellm_version": importlib.metadata.version("litellm")}
    try:
        from litellm.litellm_core_utils.get_model_cost_map import get_model_cost_map_source_info

        info = dict(get_model_cost_map_source_info())
        out.update({k: (str(v) if v is not None and k == "loaded_at" else v) for k, v in info.items()})
    except Exception as exc:  # older/newer litellm without source info
        out["source"] = f"unavailable ({type(exc).__name__})"
    return out


def price_snapshot(models: Iterable[str]) -> dict[str, dict[str, float]]:
    """The price-map entries (all *cost* fields) of the given models, to store next to a run's results."""
    from bench.gateway.setup import ensure_litellm

    litellm = ensure_litellm()
    snap: dict[str, dict[str, float]] = {}
    for m in models:
        entry = litellm.model_cost.get(m) or litellm.model_cost.get(m.split("/", 1)[-1]) or {}
        snap[m] = {k: v for k, v in entry.items() if "cost" in k and isinstance(v, (int, float))}
    return snap
