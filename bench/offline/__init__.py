"""The offline engine: a deterministic, rule-based dry-run stand-in for every model role.

Its outputs are well-formed (observation logs, yes/no verdicts, short answers) and its usage numbers are
real o200k counts, but its accuracy is not an LLM's. Use it for pipeline tests and cost/cache dry runs,
never for headline accuracy numbers.

It is a model provider like any other: `register()` adds it to the gateway's registry of custom providers,
which installs it into litellm (`custom_provider_map`) as the models `offline/<role>` (chat) and
`offline/embedder` (embeddings), at zero prices and without response caching (recomputing is cheaper than a
cache look-up, and a change of the rules shows at once), with a direct route the gateway takes instead of
litellm's call machinery (`bench.offline.direct`: the same replies, usage and records). Whoever builds a
gateway that may route to it calls `register()` first (the runner's `make_gateway`, `ombench perf`); the
gateway never imports this package.
Model: inspect_ai's mockllm (`model/_providers/mockllm.py`), a provider among the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bench.offline.engine import MODELS, PROVIDER, ROLES, canonical_role, run_role

if TYPE_CHECKING:
    from bench.gateway.providers import DirectModel

_ZERO = {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0}


def register() -> None:
    """Make `offline/<role>` models callable through any `bench.gateway.Gateway` built afterwards.

    Idempotent and cheap: litellm is not imported here; the provider's handler is built when it is."""
    from bench.gateway.providers import CustomProvider, register_provider

    prices = {m: {**_ZERO, "mode": "embedding" if m == "embedder" else "chat"} for m in MODELS}
    register_provider(CustomProvider(PROVIDER, _handler, models=MODELS, response_cache=False, prices=prices,
                                     direct=_direct))


def _handler() -> object:
    from bench.offline.provider import OfflineLLM  # subclasses litellm.CustomLLM: imported once litellm is

    return OfflineLLM()


def _direct() -> DirectModel:
    from bench.offline.direct import OfflineDirect  # free of litellm: the gateway's direct route

    return OfflineDirect()


__all__ = ["MODELS", "PROVIDER", "ROLES", "canonical_role", "register", "run_role"]
