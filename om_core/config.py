"""Typed configuration of Observational Memory with Mastra's defaults and validation.

Defaults from mastra-ai/mastra, packages/memory/src/processors/observational-memory/constants.ts
(`OBSERVATIONAL_MEMORY_DEFAULTS`), thresholds.ts and the `ObservationalMemory` constructor in
observational-memory.ts.

Knobs left at `None` mean "Mastra's automatic default", resolved by the `OMConfig` properties: async
buffering is on in thread scope and off in resource scope, and never exists in the m11 profile.
Every invalid value raises `ConfigError` (an `OMError` and a `ValueError`) with one line naming the knob
and the fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace
from typing import Any, Collection, Literal, Mapping
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from om_core.errors import ConfigError
from om_core.activation import (
    activation_ratio,
    resolve_block_after,
    resolve_buffer_tokens,
    retention_floor,
)

Profile = Literal["m11", "m31"]
Scope = Literal["thread", "resource"]
ContextLayout = Literal["mastra", "stable_prefix"]
DEFAULT_MODEL = "google/gemini-2.5-flash"
DEFAULT_ALIAS = "default"  # a model name that means DEFAULT_MODEL (Mastra's 'default' string)

# Output caps sent when the config sets none, as Mastra sends them (OBSERVATIONAL_MEMORY_DEFAULTS
# `modelSettings.maxOutputTokens` 100,000): 1.1.0 (m11) sends it to every model; 1.31.0 (m31) only to its default
# model (`usesDefaultOutputTokenBudget`: no model set, or "default"), and no cap to a model named in the config.
MASTRA_OUTPUT_TOKENS = 100_000
DEFAULT_OBSERVER_OUTPUT_TOKENS = MASTRA_OUTPUT_TOKENS
DEFAULT_REFLECTOR_OUTPUT_TOKENS = MASTRA_OUTPUT_TOKENS

_MINUTE = 60_000
_HOUR = 60 * _MINUTE


@dataclass(frozen=True)
class ObservationConfig:
    model: str | None = None  # None -> top-level model -> reflection model -> DEFAULT_MODEL
    message_tokens: int = 30_000
    buffer_tokens: float | int | bool | None = None  # None: 0.2 in thread scope, off in resource scope
    buffer_activation: float | int | None = None  # None: 0.8 when buffering
    block_after: float | int | None = None  # None: 1.2 when buffering
    max_tokens_per_batch: int = 10_000
    temperature: float = 0.3
    # output cap sent as max_tokens; None: as the profile's Mastra version (OMConfig.observer_output_cap); 0: none
    max_output_tokens: int | None = None
    model_params: Mapping[str, Any] = field(default_factory=dict)  # extra provider params, passed through
    instruction: str | None = None
    thread_title: bool = False
    activate_after_idle: int | str | None = None  # None: inherit the top-level knob
    activate_on_provider_change: bool | None = None  # None: inherit the top-level knob


@dataclass(frozen=True)
class ReflectionConfig:
    model: str | None = None
    observation_tokens: int = 40_000
    buffer_activation: float = 0.5
    block_after: float | int = 1.2
    temperature: float = 0.0
    max_output_tokens: int | None = None  # None: as the profile's Mastra version; 0: no cap
    model_params: Mapping[str, Any] = field(default_factory=dict)
    instruction: str | None = None
    # Reflections do not inherit the top-level idle / provider-change knobs (Mastra's `ObservationalMemory`
    # constructor, observational-memory.ts).
    activate_after_idle: int | str | None = None
    activate_on_provider_change: bool = False


@dataclass(frozen=True)
class RetrievalConfig:
    enabled: bool = False
    scope: Scope = "resource"
    instructions: str | None = None


@dataclass(frozen=True)
class WorkingMemoryConfig:
    """A short block about the user (name, preferences, current projects) that the Observer keeps current
    and the Actor sees after the observations, never in the static system block (om_core.working_memory).
    Not a Mastra knob; off by default, so the m11/m31 profiles render exactly what Mastra renders."""

    enabled: bool = False
    max_tokens: int = 400  # cap of the block; the least recently changed lines are dropped first


@dataclass(frozen=True)
class OMConfig:
    profile: Profile = "m31"
    scope: Scope = "thread"
    model: str | None = None
    observation: ObservationConfig = field(default_factory=ObservationConfig)
    reflection: ReflectionConfig = field(default_factory=ReflectionConfig)
    share_token_budget: bool = False
    temporal_markers: bool = False
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    activate_after_idle: int | str | None = None
    activate_on_provider_change: bool = False
    obscure_thread_ids: bool = False
    actor_model: str | None = None  # needed by activate_after_idle="auto" (provider cache TTL)
    prompt_cache_retention: str | None = None  # OpenAI "24h" retention lengthens the auto TTL
    timezone: str = "UTC"  # zone used to format dates for the Observer
    prompts_folder: str | None = None
    # "packaged": om_core's texts (the project's words); "mastra": the texts of the Mastra release the profile
    # mirrors, read at run time from its npm package (om_core.mastra_texts; needs Node.js once, then cached)
    prompt_source: str = "packaged"
    # Not Mastra knobs (docs/om.md, "Deliberate differences"):
    degenerate_guard: bool | None = None  # None: the repetition check of m31; True turns it on for m11 too
    context_layout: ContextLayout = "mastra"  # "stable_prefix": OTHER-conversations block after the observations
    working_memory: WorkingMemoryConfig = field(default_factory=WorkingMemoryConfig)

    def __post_init__(self) -> None:
        _validate(self)

    # ---- resolved values -------------------------------------------------------------------
    @property
    def observer_model(self) -> str:
        """Top-level model, else observation.model, else reflection.model, else the default; the name
        'default' means the default model (mastra-ai/mastra, packages/memory/src/processors/
        observational-memory/observational-memory.ts, the constructor's model resolution)."""
        return _resolve_model(self.model or self.observation.model or self.reflection.model)

    @property
    def reflector_model(self) -> str:
        """As `observer_model`, with reflection.model before observation.model."""
        return _resolve_model(self.model or self.reflection.model or self.observation.model)

    @property
    def degenerate_check(self) -> bool:
        """Whether Observer and Reflector outputs are checked for repetition loops (m31 always did; m11 never
        did, so it is off there unless `degenerate_guard=True`)."""
        return self.profile == "m31" if self.degenerate_guard is None else bool(self.degenerate_guard)

    @property
    def observer_output_cap(self) -> int | None:
        """The Observer's output cap in tokens (`max_tokens`), or None when `max_output_tokens: 0` sends none."""
        cap = self.observation.max_output_tokens
        if cap is None:
            return DEFAULT_OBSERVER_OUTPUT_TOKENS if self._default_budget(self.observation.model) else None
        return cap or None

    @property
    def reflector_output_cap(self) -> int | None:
        """The Reflector's output cap in tokens (`max_tokens`), or None when `max_output_tokens: 0` sends none."""
        cap = self.reflection.max_output_tokens
        if cap is None:
            return DEFAULT_REFLECTOR_OUTPUT_TOKENS if self._default_budget(self.reflection.model) else None
        return cap or None

    def _default_budget(self, role_model: str | None) -> bool:
        """Whether the unset cap is Mastra's 100,000: always in m11; in m31 only for Mastra's default model
        (1.31.0 `usesDefaultOutputTokenBudget`, on the model the config names for the role, the top level first)."""
        if self.profile != "m31":
            return True
        named = self.model or role_model or self.reflection.model or self.observation.model
        return named is None or named == DEFAULT_ALIAS

    @property
    def buffering(self) -> bool:
        """Whether async buffering (observation and reflection) is active."""
        return self.buffer_tokens is not None

    @property
    def buffer_tokens(self) -> int | None:
        if self.profile == "m11":
            return None
        raw = self.observation.buffer_tokens
        if raw is None:
            raw = 0.2 if self.scope == "thread" else False
        return resolve_buffer_tokens(raw, self.observation.message_tokens)

    @property
    def buffer_activation(self) -> float | int | None:
        if not self.buffering:
            return None
        ba = self.observation.buffer_activation
        return 0.8 if ba is None else ba

    @property
    def activation_ratio(self) -> float | None:
        ba = self.buffer_activation
        return None if ba is None else activation_ratio(ba, self.observation.message_tokens)

    @property
    def retention_floor(self) -> int:
        """Raw tail kept after observation: messageTokens·(1 − bufferActivation); 0 without buffering."""
        return retention_floor(self.observation.message_tokens, self.buffer_activation)

    @property
    def block_after_tokens(self) -> int | None:
        if not self.buffering:
            return None
        ba = self.observation.block_after
        return resolve_block_after(1.2 if ba is None else ba, self.observation.message_tokens)

    @property
    def reflection_block_after_tokens(self) -> int | None:
        if not self.buffering:
            return None
        return resolve_block_after(self.reflection.block_after, self.reflection.observation_tokens)

    @property
    def reflection_buffer_activation(self) -> float | None:
        return self.reflection.buffer_activation if self.buffering else None

    @property
    def idle_ms(self) -> int | None:
        """Idle TTL (ms) after which buffered observations activate below the threshold."""
        raw = self.observation.activate_after_idle
        if raw is None:
            raw = self.activate_after_idle
        return self._resolve_idle(raw, "activate_after_idle")

    @property
    def reflection_idle_ms(self) -> int | None:
        return self._resolve_idle(self.reflection.activate_after_idle, "reflection.activate_after_idle")

    @property
    def provider_change_activates(self) -> bool:
        flag = self.observation.activate_on_provider_change
        return self.activate_on_provider_change if flag is None else flag

    def _resolve_idle(self, raw: int | str | None, knob: str) -> int | None:
        if raw is None:
            return None
        if raw == "auto":
            return auto_idle_ttl_ms(self.actor_model or "", prompt_cache_retention=self.prompt_cache_retention)
        return parse_duration_ms(raw, knob)

    # ---- construction from plain data -------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "OMConfig":
        """Build from a (possibly nested) dict with snake_case (or Mastra camelCase) keys.

        `working_memory` is true/false or a mapping {enabled, max_tokens}; `observation.manage_working_memory`
        (the spelling of a design write-up of OM, not a knob of Mastra's sources) means `working_memory`."""
        data = {_snake(k): v for k, v in dict(data or {}).items()}
        obs = data.pop("observation", None) or {}
        refl = data.pop("reflection", None) or {}
        retrieval = data.pop("retrieval", None)
        wm = data.pop("working_memory", None)
        _check_keys(data, cls, "", skip={"observation", "reflection", "retrieval", "working_memory"})
        kwargs: dict[str, Any] = dict(data)
        if isinstance(obs, Mapping):
            obs = {_snake(k): v for k, v in obs.items()}
            managed = obs.pop("manage_working_memory", None)
            if managed is not None:
                if wm is not None and bool(managed) != _wm_enabled(wm):
                    raise ConfigError("observation.manage_working_memory: disagrees with working_memory; set one "
                                      "of them")
                wm = wm if wm is not None else bool(managed)
        kwargs["observation"] = _sub(ObservationConfig, obs, "observation")
        if isinstance(wm, bool):
            kwargs["working_memory"] = WorkingMemoryConfig(enabled=wm)
        elif isinstance(wm, Mapping):
            w = {_snake(k): v for k, v in wm.items()}
            w.setdefault("enabled", True)
            kwargs["working_memory"] = _sub(WorkingMemoryConfig, w, "working_memory")
        elif wm is not None:
            raise ConfigError("working_memory: expected true/false or a mapping {enabled, max_tokens}")
        kwargs["reflection"] = _sub(ReflectionConfig, refl, "reflection")
        if isinstance(retrieval, bool):
            kwargs["retrieval"] = RetrievalConfig(enabled=retrieval)
        elif isinstance(retrieval, Mapping):
            r = {_snake(k): v for k, v in retrieval.items()}
            r.setdefault("enabled", True)
            kwargs["retrieval"] = _sub(RetrievalConfig, r, "retrieval")
        elif retrieval is not None:
            raise ConfigError("retrieval: expected true/false or a mapping {scope, instructions}")
        return cls(**kwargs)

    def texts_folder(self) -> str | None:
        """The prompts folder the engine reads: `prompts_folder`, or with prompt_source=mastra the cached folder
        of the Mastra texts (built on first use: om_core.mastra_texts.mastra_texts, ConfigError on failure)."""
        if self.prompt_source == "mastra":
            from .mastra_texts import mastra_texts

            return str(mastra_texts(self.profile).folder)
        return self.prompts_folder

    def texts_source(self) -> str:
        """What the Observer and Reflector read, for run records: "om_core packaged texts" (with the override
        folder if set) or e.g. "@mastra/memory@1.1.0 sha256:409ffcbd852b" (fetched and checked on first use)."""
        if self.prompt_source == "mastra":
            from .mastra_texts import mastra_texts

            return mastra_texts(self.profile).label
        return "om_core packaged texts" + (f" overridden by {self.prompts_folder}" if self.prompts_folder else "")

    def with_overrides(self, **changes: Any) -> "OMConfig":
        return replace(self, **changes)


# ---- helpers ------------------------------------------------------------------------------


def _wm_enabled(wm: Any) -> bool:
    if isinstance(wm, Mapping):
        return bool(wm.get("enabled", True))
    return bool(getattr(wm, "enabled", wm))


def _resolve_model(name: str | None) -> str:
    return DEFAULT_MODEL if not name or name.strip().lower() == DEFAULT_ALIAS else name


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def _check_keys(data: Mapping[str, Any], cls: type, prefix: str, skip: Collection[str] = ()) -> None:
    known = {f.name for f in fields(cls)} | set(skip)
    for key in data:
        if key not in known:
            raise ConfigError(f"{prefix}{key}: unknown OM config knob; valid knobs are {sorted(known)}")


def _sub(cls: type, data: Any, name: str) -> Any:
    if isinstance(data, cls):
        return data
    if not isinstance(data, Mapping):
        raise ConfigError(f"{name}: expected a mapping of knobs, got {type(data).__name__}")
    d = {_snake(k): v for k, v in data.items()}
    _check_keys(d, cls, f"{name}.")
    return cls(**d)


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|m|min|h|hr|hrs|hour|hours|d|day|days)\s*$", re.I)
_UNIT_MS = {"ms": 1, "s": 1000, "sec": 1000, "m": _MINUTE, "min": _MINUTE, "h": _HOUR, "hr": _HOUR,
            "hrs": _HOUR, "hour": _HOUR, "hours": _HOUR, "d": 24 * _HOUR, "day": 24 * _HOUR, "days": 24 * _HOUR}


def parse_duration_ms(value: int | float | str, knob: str = "activate_after_idle") -> int:
    """Milliseconds from an int (ms) or a string like "5m", "1hr", "30s"."""
    if isinstance(value, bool):
        raise ConfigError(f"{knob}: expected milliseconds, a duration like '5m'/'1hr', or 'auto'")
    if isinstance(value, (int, float)):
        if value <= 0:
            raise ConfigError(f"{knob}: must be a positive duration, got {value}")
        return int(value)
    m = _DURATION.match(str(value))
    if not m:
        raise ConfigError(f"{knob}: cannot parse {value!r}; use milliseconds, '5m', '1hr', or 'auto'")
    return int(float(m.group(1)) * _UNIT_MS[m.group(2).lower()])


def auto_idle_ttl_ms(model: str, *, prompt_cache_retention: str | None = None) -> int:
    """The provider's prompt-cache TTL for `activate_after_idle='auto'` (mastra-ai/mastra,
    packages/memory/src/processors/observational-memory/activation-ttl.ts)."""
    if not model:
        raise ConfigError("activate_after_idle='auto': set actor_model so the provider cache TTL can be chosen")
    m = model.lower()
    provider, _, name = m.rpartition("/")
    openai_name = re.match(r"^(gpt-|o\d|chatgpt|text-|davinci|babbage)", name)
    if provider == "openai" or (not provider and openai_name):
        if re.match(r"^gpt-4|^gpt-5(\.[1-4])?(-|$)", name):
            return _HOUR if prompt_cache_retention == "24h" else 5 * _MINUTE
        return _HOUR
    if "gemini" in m or provider in {"google", "vertex", "vertex_ai", "gemini"}:
        return 24 * _HOUR
    if "deepseek" in m:
        return _HOUR
    if provider == "groq":
        return 2 * _HOUR
    return 5 * _MINUTE  # Anthropic, xAI, OpenRouter and anything unknown


def _validate(cfg: OMConfig) -> None:
    o, r = cfg.observation, cfg.reflection
    if cfg.profile not in ("m11", "m31"):
        raise ConfigError(f"profile: must be 'm11' or 'm31', got {cfg.profile!r}")
    if cfg.prompt_source not in ("packaged", "mastra"):
        raise ConfigError(f"prompt_source: must be 'packaged' or 'mastra', got {cfg.prompt_source!r}")
    if cfg.prompt_source == "mastra" and cfg.prompts_folder is not None:
        raise ConfigError("prompt_source=mastra and prompts_folder are both set: the Mastra texts are a prompts "
                          "folder; set one of them")
    if cfg.scope not in ("thread", "resource"):
        raise ConfigError(f"scope: must be 'thread' or 'resource', got {cfg.scope!r}")
    if cfg.model and (o.model or r.model):
        raise ConfigError("model: set either the top-level model or observation.model/reflection.model, not both")
    if not isinstance(o.message_tokens, int) or o.message_tokens <= 0:
        raise ConfigError(f"observation.message_tokens: must be a positive integer, got {o.message_tokens!r}")
    if not isinstance(r.observation_tokens, int) or r.observation_tokens <= 0:
        raise ConfigError(f"reflection.observation_tokens: must be a positive integer, got {r.observation_tokens!r}")
    if not isinstance(o.max_tokens_per_batch, int) or o.max_tokens_per_batch <= 0:
        raise ConfigError("observation.max_tokens_per_batch: must be a positive integer")
    explicit = o.buffer_tokens not in (None, False) or o.buffer_activation is not None or o.block_after is not None
    if explicit and cfg.profile == "m11":
        raise ConfigError("observation.buffer_tokens: profile 'm11' has no async buffering; remove the buffering "
                         "knobs or use profile='m31'")
    if explicit and o.buffer_tokens is not False and cfg.scope == "resource":
        # Mastra's constructor throws for this combination (mastra-ai/mastra, packages/memory/src/processors/
        # observational-memory/observational-memory.ts): resource scope observes every thread of a resource in
        # one pass, while buffering pre-computes chunks of one thread's messages
        set_knobs = ", ".join(f"observation.{k}={v!r}" for k, v in (("buffer_tokens", o.buffer_tokens),
                              ("buffer_activation", o.buffer_activation), ("block_after", o.block_after))
                              if v is not None)
        also = "; share_token_budget=True requires buffering off as well" if cfg.share_token_budget else ""
        raise ConfigError(f"{set_knobs}: async buffering is not allowed with scope='resource' (Mastra's "
                          "constructor refuses it: resource scope observes all threads of a resource in one pass, "
                          "buffering pre-computes one thread's messages); remove these knobs (resource scope never buffers) or use "
                          f"scope='thread'{also}")
    if cfg.share_token_budget and cfg.buffering:
        raise ConfigError("share_token_budget: requires observation.buffer_tokens=False (buffering cannot share "
                         "the token budget)")
    # buffer_tokens itself is validated by resolving it
    cfg.buffer_tokens  # noqa: B018 - raises ConfigError on a bad value
    if o.buffer_activation is not None:
        activation_ratio(o.buffer_activation, o.message_tokens)
    if o.block_after is not None:
        resolve_block_after(o.block_after, o.message_tokens, knob="observation.block_after")
    if not isinstance(r.buffer_activation, (int, float)) or not (0 < r.buffer_activation <= 1):
        raise ConfigError(f"reflection.buffer_activation: must be a ratio in (0, 1], got {r.buffer_activation}")
    resolve_block_after(r.block_after, r.observation_tokens, knob="reflection.block_after")
    for knob, val in (("activate_after_idle", cfg.activate_after_idle),
                      ("observation.activate_after_idle", o.activate_after_idle),
                      ("reflection.activate_after_idle", r.activate_after_idle)):
        if val == "auto":
            if not cfg.actor_model:
                raise ConfigError(f"{knob}='auto': set actor_model so the provider cache TTL can be chosen")
        elif val is not None:
            parse_duration_ms(val, knob)
    try:
        ZoneInfo(cfg.timezone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError(f"timezone: unknown zone {cfg.timezone!r}; use an IANA name such as 'UTC' or "
                         "'Europe/Berlin'") from exc
    if cfg.retrieval.scope not in ("thread", "resource"):
        raise ConfigError(f"retrieval.scope: must be 'thread' or 'resource', got {cfg.retrieval.scope!r}")
    if cfg.degenerate_guard not in (None, True, False):
        raise ConfigError(f"degenerate_guard: must be true, false or null (profile default), got {cfg.degenerate_guard!r}")
    if cfg.context_layout not in ("mastra", "stable_prefix"):
        raise ConfigError(f"context_layout: must be 'mastra' or 'stable_prefix', got {cfg.context_layout!r}")
    w = cfg.working_memory
    if not isinstance(w, WorkingMemoryConfig) or w.enabled not in (True, False):
        raise ConfigError("working_memory: expected true/false or a mapping {enabled, max_tokens}")
    if isinstance(w.max_tokens, bool) or not isinstance(w.max_tokens, int) or w.max_tokens < 16:
        raise ConfigError(f"working_memory.max_tokens: must be an integer of at least 16 tokens, got {w.max_tokens!r}")
    for knob, cap in (("observation.max_output_tokens", o.max_output_tokens),
                      ("reflection.max_output_tokens", r.max_output_tokens)):
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 0):
            raise ConfigError(f"{knob}: must be a positive integer (tokens), 0 for no cap, or null for the "
                             f"default, got {cap!r}")
    if any(not isinstance(t, (int, float)) or not 0 <= t <= 2 for t in (o.temperature, r.temperature)):
        raise ConfigError("observation.temperature/reflection.temperature: must be within [0, 2]")
