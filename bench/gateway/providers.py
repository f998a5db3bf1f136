"""In-process model providers plugged into litellm, and the registry through which the gateway knows them.

A `CustomProvider` is a litellm custom provider (a `litellm.CustomLLM` handler serving `<name>/<model>`
models) plus what the gateway needs to know about it: which model names it serves, whether its responses may
be cached, and its prices. Whoever assembles the application registers its providers before building a
`Gateway` (the benchmark runner and `ombench perf` call `bench.offline.register()`); the gateway itself
imports none of them. `ensure_litellm` installs every registered provider into `litellm.custom_provider_map`
and its prices into litellm's price map; a provider registered after that is installed at once.

Model: inspect_ai's provider registry (`model/_providers/providers.py`), where a mock model is one provider
among the others.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Mapping, Protocol

from om_core.llm import Usage

from bench.errors import ConfigError
from bench.registry import Registry

# Held while litellm is set up (bench.gateway.setup.ensure_litellm) and while a custom provider is registered,
# so a provider registered during the set-up is installed either way. The set-up module imports this one,
# never the reverse.
LITELLM_LOCK = threading.RLock()
_LITELLM: ModuleType | None = None


def loaded_litellm() -> ModuleType | None:
    """litellm if `ensure_litellm` has set it up in this process, else None (without importing it)."""
    return _LITELLM


def mark_loaded(lib: ModuleType) -> None:
    """Called by `ensure_litellm` (under LITELLM_LOCK) once litellm is set up and every registered provider
    installed: a provider registered later is installed at once."""
    global _LITELLM
    _LITELLM = lib


@dataclass(frozen=True)
class DirectReply:
    """A chat reply of a direct route: what the gateway reads from a litellm response (`_parse_chat`)."""

    text: str
    usage: Usage
    model: str  # the model the provider says answered
    finish_reason: str | None = None


@dataclass(frozen=True)
class DirectEmbedding:
    vectors: list[list[float]]  # one per input, in input order
    usage: Usage
    model: str


class ProviderCallError(Exception):
    """A direct route's refusal of a request, with the HTTP status a server would answer (the gateway classifies
    it as it classifies a provider's error: 400 is a bad request, never retried)."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message


class DirectModel(Protocol):
    """An in-process provider's direct route: its replies without litellm. `model` is the name after
    `<provider>/`; `params` the call's params (the role's, the call's, the output cap fitted to the context
    window). Raises ProviderCallError for a request it refuses."""

    def chat(self, model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> DirectReply: ...

    def embed(self, model: str, texts: list[Any], params: dict[str, Any]) -> DirectEmbedding: ...


@dataclass(frozen=True)
class CustomProvider:
    """A provider served in this process through litellm's `custom_provider_map`.

    `handler` builds the `litellm.CustomLLM` (called once, after litellm is imported, so registering a
    provider costs no litellm import). `models` lists the model names after `<name>/` that it serves (empty:
    any name); a role configured with another name is a `ConfigError` when the `Gateway` is built.
    `response_cache=False` makes the gateway recompute every response instead of caching it (for providers
    that are deterministic, free and faster than a cache look-up; also, a change of their rules shows at
    once). `prices` maps a model name to its litellm price-map entry (`input_cost_per_token`, ... in USD per
    token, `mode`); priced models report a known cost, others cost 0 with `cost_known=False`. `direct` builds
    the provider's `DirectModel` (called once per gateway): the gateway then calls it instead of litellm's
    `acompletion`/`aembedding` (unless `GatewayConfig.direct_providers` is False), keeping its own caching,
    retries, usage, cost and records; its replies must equal what the litellm handler returns.
    """

    name: str
    handler: Callable[[], Any]
    models: tuple[str, ...] = ()
    response_cache: bool = True
    prices: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    direct: Callable[[], DirectModel] | None = None

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name:
            raise ConfigError(f"custom provider name {self.name!r} must be non-empty and free of '/'")

    def serves(self, model: str) -> bool:
        """Whether `model` (`<name>/<model>`) is routed to this provider."""
        return model.startswith(self.name + "/")


# name -> provider (bench.registry); read by the gateway for routing, prices and caching
PROVIDERS: Registry[CustomProvider] = Registry("custom model provider")


def register_provider(provider: CustomProvider) -> None:
    """Register (or replace) a custom provider; installs it into litellm at once if litellm is set up."""
    with LITELLM_LOCK:  # so that a concurrent ensure_litellm() installs it either way
        PROVIDERS.register(provider.name, provider)
        litellm = loaded_litellm()
        if litellm is not None:
            install_provider(litellm, provider)


def registered_providers() -> tuple[CustomProvider, ...]:
    with LITELLM_LOCK:
        return tuple(PROVIDERS.values())


def provider_for(model: str) -> CustomProvider | None:
    """The registered provider that serves `model`, or None (a litellm built-in provider, or none)."""
    prefix = model.split("/", 1)[0] if "/" in model else ""
    return PROVIDERS.get(prefix) if prefix in PROVIDERS else None  # dict reads are atomic


def check_model(role: str, model: str) -> None:
    """Raise ConfigError when `model` is routed to a registered provider that does not serve that name."""
    provider = provider_for(model)
    if provider is None or not provider.models:
        return
    name = model[len(provider.name) + 1 :]
    if name not in provider.models:
        key = "judge.second_model" if role == "second_judge" else "judge.panel" if role.startswith("panel_judge_") \
            else f"model.{role}.model"  # as `ombench run` names it
        raise ConfigError(f"{key}={model!r}: the {provider.name} provider has no model {name!r}; "
                          f"use {provider.name}/<one of {', '.join(provider.models)}>")


def install_provider(lib: Any, provider: CustomProvider) -> None:
    """Put `provider` into litellm's custom_provider_map (replacing an entry of the same name) and its prices
    into litellm's price map."""
    entries = [e for e in (lib.custom_provider_map or []) if e.get("provider") != provider.name]
    lib.custom_provider_map = entries + [{"provider": provider.name, "custom_handler": provider.handler()}]
    lib.utils.custom_llm_setup()  # adds the provider to litellm's provider lists
    if provider.prices:
        lib.register_model({f"{provider.name}/{model}": {**entry, "litellm_provider": provider.name}
                                for model, entry in provider.prices.items()})
