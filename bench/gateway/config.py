"""Typed gateway configuration: one model (+ params) per role, cache, limits and retry settings."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal, Mapping

from bench.errors import ConfigError

CachePolicy = Literal["rw", "ro", "off"]
CACHE_POLICIES = ("rw", "ro", "off")
# aliases a caller may ask for when only the other name is configured
ROLE_ALIASES = {"actor": "reader", "reader": "actor", "answerer": "actor", "summariser": "summarizer"}


@dataclass(frozen=True)
class RoleModel:
    """A litellm model string (`openai/gpt-4o`, `anthropic/claude-sonnet-4-5`, `offline/observer` from a
    registered custom provider) and its
    default call params (temperature, max_tokens, ...). Per-call params override these."""

    model: str
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model.strip():
            raise ConfigError("GatewayConfig: a role has an empty model; give roles[<role>] a litellm model such as "
                              "'openai/gpt-4o' (ombench run: model.<role>.model)")


@dataclass
class GatewayConfig:
    roles: dict[str, RoleModel]
    cache_path: str | None = "results/response_cache.sqlite"
    cache_policy: CachePolicy = "rw"
    max_attempts: int = 6
    rpm: dict[str, int] = field(default_factory=dict)  # provider -> requests per period (waits, never fails)
    tpm: dict[str, int] = field(default_factory=dict)  # provider -> tokens per period (prompt + max_tokens estimate)
    max_concurrency: int = 16  # per provider; adapts down on 429 (AIMD) and back up
    timeout_s: float = 120.0
    api_base: dict[str, str] = field(default_factory=dict)  # role or provider -> base URL
    # additions beyond the list, all with production defaults
    api_key_env: dict[str, str] = field(default_factory=dict)  # role or provider -> env var holding the key
    backoff_base_s: float = 1.0  # first retry waits ~base (with jitter), doubling up to backoff_max_s
    backoff_max_s: float = 60.0
    limit_period_s: float = 60.0  # the window of rpm/tpm; tests shrink it
    aimd_grow_after: int = 10  # successes after a cut before the concurrency limit grows by one
    embed_batch_size: int = 256
    # self-hosted servers (an api_base on this machine or a private network; bench.gateway.local)
    local_defaults: bool = True  # False: treat such servers like a provider (its concurrency, timeout, retries)
    local_max_concurrency: int | None = None  # None: the parallel slots the server reports (llama.cpp), else 1
    # a small server may take minutes: for a local server (local_defaults) local_timeout_s wins over timeout_s
    # (None: timeout_s applies there too); a role's params.timeout wins over both
    local_timeout_s: float | None = 600.0
    local_retry_timeouts: bool = False  # True: a timed-out request to a local server is retried (max_attempts)
    context_window: dict[str, int] = field(default_factory=dict)  # role or provider -> tokens (when servers don't say)
    # in-process providers with a direct route (the offline engine) are called without litellm's machinery;
    # False: through litellm.acompletion/aembedding like any provider (same replies, usage and records)
    direct_providers: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.roles, Mapping) or not self.roles:
            raise ConfigError("gateway: no roles configured; add roles: {actor: {model: ...}, ...}")
        self.roles = {str(k): _role_model(k, v) for k, v in self.roles.items()}
        if self.cache_policy not in CACHE_POLICIES:
            raise ConfigError(f"GatewayConfig.cache_policy={self.cache_policy!r} is invalid; use one of rw, ro, off "
                              "(ombench run: output.response_cache_policy)")
        if self.cache_policy != "off" and not self.cache_path:
            raise ConfigError("GatewayConfig.cache_path is empty while cache_policy is on; set a path or cache_policy=off "
                              "(ombench run: output.response_cache, output.response_cache_policy)")
        _positive("max_attempts", self.max_attempts, integer=True)
        _positive("max_concurrency", self.max_concurrency, integer=True)
        _positive("timeout_s", self.timeout_s)
        _positive("limit_period_s", self.limit_period_s)
        _positive("aimd_grow_after", self.aimd_grow_after, integer=True)
        _positive("embed_batch_size", self.embed_batch_size, integer=True)
        if self.local_timeout_s is not None:
            _positive("local_timeout_s", self.local_timeout_s)
        if self.local_max_concurrency is not None:
            _positive("local_max_concurrency", self.local_max_concurrency, integer=True)
        for key, val in dict(self.context_window).items():
            if isinstance(val, bool) or not isinstance(val, int) or val <= 0:
                raise ConfigError(f"gateway.context_window.{key}={val!r} must be a positive integer (tokens)")
        if self.backoff_base_s < 0 or self.backoff_max_s < 0:
            raise ConfigError("GatewayConfig.backoff_base_s/backoff_max_s must be >= 0; e.g. backoff_base_s=1")
        for name in ("rpm", "tpm"):
            for prov, val in dict(getattr(self, name)).items():
                if not isinstance(val, (int, float)) or val <= 0:
                    raise ConfigError(f"gateway.{name}.{prov}={val!r} must be a positive number; remove it to disable")

    def role_model(self, role: str) -> RoleModel:
        if role in self.roles:
            return self.roles[role]
        alias = ROLE_ALIASES.get(role)
        if alias and alias in self.roles:
            return self.roles[alias]
        raise ConfigError(
            f"gateway: no model configured for role {role!r}; add roles.{role}.model "
            f"(configured: {', '.join(sorted(self.roles))})"
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "GatewayConfig":
        """Build from plain dicts (e.g. a resolved Hydra config); unknown keys are an error."""
        known = {f.name for f in fields(cls)}
        extra = sorted(set(data) - known)
        if extra:
            raise ConfigError(f"gateway: unknown setting(s) {', '.join(extra)}; valid: {', '.join(sorted(known))}")
        kwargs: dict[str, Any] = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in data.items()}
        return cls(**kwargs)


def _role_model(role: Any, value: Any) -> RoleModel:
    if isinstance(value, RoleModel):
        return value
    if isinstance(value, str):
        return RoleModel(value)
    if isinstance(value, Mapping):
        extra = set(value) - {"model", "params"}
        if extra or "model" not in value:
            raise ConfigError(
                f"GatewayConfig.roles[{role!r}] must be {{model: str, params: {{...}}}}; got keys {sorted(value)}")
        return RoleModel(str(value["model"]), dict(value.get("params") or {}))
    raise ConfigError(f"GatewayConfig.roles[{role!r}] must be a model string or {{model, params}}; "
                      f"got {type(value).__name__}")


def _positive(name: str, value: Any, integer: bool = False) -> None:
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    if not ok or isinstance(value, bool) or value <= 0:
        kind = "a positive integer" if integer else "a positive number"
        raise ConfigError(f"GatewayConfig.{name}={value!r} must be {kind}")


def provider_of(model: str) -> str:
    """The provider a model string routes to ("openai", "anthropic", a registered custom provider's name, ...).

    Raises ConfigError when neither a registered custom provider nor litellm knows it."""
    from bench.gateway.providers import provider_for

    custom = provider_for(model)
    if custom is not None:
        return custom.name
    from bench.gateway.setup import ensure_litellm

    litellm = ensure_litellm()
    try:
        return str(litellm.get_llm_provider(model)[1])
    except Exception:
        raise ConfigError(
            f"gateway: no provider for model {model!r}: write it as <provider>/<model> (e.g. openai/gpt-4o), "
            "or register its custom provider before building the gateway (the offline engine: "
            "bench.offline.register())"
        ) from None
