"""Pure threshold arithmetic: buffer sizes, retention floor, buffering triggers, which chunks to activate.

Everything here mirrors mastra-ai/mastra, packages/memory/src/processors/observational-memory/thresholds.ts and
buffering-coordinator.ts, and `swapBufferedToActive` (packages/core/src/storage/domains/memory/inmemory.ts);
it does no I/O, so it is tested directly with numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Sequence

from om_core.errors import ConfigError


def resolve_buffer_tokens(buffer_tokens: float | int | bool | None, message_tokens: int,
                          knob: str = "observation.buffer_tokens") -> int | None:
    """Absolute buffering interval in tokens, or None when buffering is disabled.

    Values in (0, 1) are ratios of `message_tokens`; values ≥ 1 are absolute and must stay below it.
    """
    if buffer_tokens is None or buffer_tokens is False:
        return None
    if buffer_tokens is True:
        buffer_tokens = 0.2
    if not isinstance(buffer_tokens, (int, float)) or buffer_tokens <= 0:
        raise ConfigError(f"{knob}: must be a ratio in (0, 1), an absolute token count, or False; got {buffer_tokens!r}")
    value = round(message_tokens * buffer_tokens) if buffer_tokens < 1 else int(buffer_tokens)
    if value >= message_tokens:
        raise ConfigError(f"{knob}: {value} must be smaller than observation.message_tokens ({message_tokens}); "
                         "lower it or use a ratio like 0.2")
    return max(1, value)


def activation_ratio(buffer_activation: float | int, message_tokens: int,
                     knob: str = "observation.buffer_activation") -> float:
    """Fraction of pending tokens that activation may remove.

    A ratio in (0, 1] is used as is; an absolute value ≥ 1000 means "tokens to retain", i.e. 1 − abs/threshold.
    """
    ba = buffer_activation
    if isinstance(ba, bool) or not isinstance(ba, (int, float)) or ba <= 0:
        raise ConfigError(f"{knob}: must be a ratio in (0, 1] or an absolute token count ≥ 1000; got {ba!r}")
    if ba <= 1:
        return float(ba)
    if ba < 1000:
        raise ConfigError(f"{knob}: {ba} is invalid; use a ratio in (0, 1] or an absolute token count ≥ 1000")
    if ba >= message_tokens:
        raise ConfigError(f"{knob}: retaining {ba} tokens must be less than observation.message_tokens ({message_tokens})")
    return 1.0 - ba / message_tokens


def retention_floor(message_tokens: int, buffer_activation: float | int | None) -> int:
    """Tokens of raw messages kept after activation/observation: threshold·(1 − ratio); 0 without buffering."""
    if buffer_activation is None:
        return 0
    return round(message_tokens * (1.0 - activation_ratio(buffer_activation, message_tokens)))


def resolve_block_after(block_after: float | int, threshold: int, knob: str = "observation.block_after") -> int:
    """[1, 100) is a multiplier of `threshold`, ≥ 100 is absolute; the result must be ≥ threshold."""
    if isinstance(block_after, bool) or not isinstance(block_after, (int, float)) or block_after < 1:
        raise ConfigError(f"{knob}: must be a multiplier in [1, 100) or an absolute token count ≥ 100; got {block_after!r}")
    value = round(threshold * block_after) if block_after < 100 else int(block_after)
    if value < threshold:
        raise ConfigError(f"{knob}: {value} tokens is below the threshold ({threshold}); raise it to at least that")
    return value


def dynamic_threshold(message_tokens: int, observation_tokens: int, current_observation_tokens: int,
                      share_budget: bool) -> int:
    """Observation threshold; with a shared budget the unused observation budget is lent to messages."""
    if not share_budget:
        return message_tokens
    total = message_tokens + observation_tokens
    return max(total - current_observation_tokens, message_tokens)


def buffer_interval(pending: int, threshold: int, buffer_tokens: int) -> float:
    """The buffering interval, halved (not rounded) once pending tokens pass the ramp point
    threshold − 1.1·bufferTokens."""
    ramp_point = threshold - 1.1 * buffer_tokens
    return buffer_tokens / 2 if pending >= ramp_point else buffer_tokens


def should_buffer(pending: int, last_boundary: int, threshold: int, buffer_tokens: int | None) -> bool:
    """True when pending tokens crossed a new interval boundary since the last buffering (Mastra's
    buffering-coordinator.ts)."""
    if not buffer_tokens or pending >= threshold:
        return False
    interval = buffer_interval(pending, threshold, buffer_tokens)
    return math.floor(pending / interval) > math.floor(max(0, last_boundary) / interval)


Choice = Literal["none", "forced", "over", "under", "fallback_over", "single"]


@dataclass(frozen=True)
class ActivationPlan:
    count: int  # activate chunks[0:count]
    message_tokens: int  # Σ messageTokens of the activated prefix
    choice: Choice
    target: int
    floor: int


def plan_activation(chunk_message_tokens: Sequence[int], pending: int, threshold: int,
                    ratio: float, force_max: bool = False) -> ActivationPlan:
    """Which prefix of buffered chunks to activate (Mastra's `swapBufferedToActive`, mirrored in thresholds.ts);
    always a prefix, never empty if chunks exist."""
    floor_ = threshold * (1.0 - ratio)
    target = max(0.0, pending - floor_)
    if not chunk_message_tokens:
        return ActivationPlan(0, 0, "none", round(target), round(floor_))
    over: tuple[int, int] | None = None  # (count, cumulative)
    under: tuple[int, int] | None = None
    cumulative = 0
    for i, tokens in enumerate(chunk_message_tokens, start=1):
        cumulative += tokens
        if cumulative >= target:
            if over is None:  # the smallest cumulative ≥ target is the first one
                over = (i, cumulative)
        else:
            under = (i, cumulative)  # cumulative grows, so the last one is the largest
    max_overshoot = 0.95 * floor_
    min_remaining = min(1000.0, floor_)

    def plan(c: tuple[int, int], choice: Choice) -> ActivationPlan:
        return ActivationPlan(c[0], c[1], choice, round(target), round(floor_))

    if force_max and over and pending - over[1] >= min_remaining:
        return plan(over, "forced")
    if over and over[1] - target <= max_overshoot and pending - over[1] >= min_remaining:
        return plan(over, "over")
    if under and pending - under[1] >= min_remaining:
        return plan(under, "under")
    if over:
        return plan(over, "fallback_over")
    return plan((1, chunk_message_tokens[0]), "single")
