"""The Reflector: rewrites the whole observation log into a smaller one (spec §4).

m31 climbs a compression ladder (levels 0-4) until the output is under the target; m11 makes one attempt
and, if it is not under the target, one retry with its single compression guidance.

`observations_from_prompt` and `compression_level_in_prompt` read a built Reflector request back (for code
that parses these prompts, such as the benchmark's offline engine), so they follow any change made here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import EmptyReflectionError, InputError
from .llm import ChatModel
from .observer_parse import ObserverOutput, parse_observer_output
from .observer_prompt import observer_instruction_set
from .prompts import check_profile, load
from .tokens import TokenCounter, default_counter

MAX_LEVEL = 4
LADDER_STEPS = 3  # at most this many levels above the start level
DEFAULT_REFLECTOR_PARAMS: dict[str, Any] = {"temperature": 0}

REFLECT_HEADING = "## OBSERVATIONS TO REFLECT ON"
GUIDANCE_HEADING = "## SPECIFIC GUIDANCE"
OBSERVATIONS_END = "\n\n---\n\n"  # closes the observations block, before the task

_GROUP_TAG_LINE = re.compile(r"^[ \t]*</?observation-group\b[^>]*>[ \t]*\n?", re.MULTILINE)
_GROUP_TAG = re.compile(r"</?observation-group\b[^>]*>")


@dataclass
class ReflectionResult:
    text: str
    tokens: int
    levels: list[int] = field(default_factory=list)  # compression level of every call, in order
    over_target: bool = False  # committed although still >= target (ladder or retry exhausted)
    degenerate_levels: list[int] = field(default_factory=list)
    suggested_response: str | None = None


def compression_start_level(model_name: str) -> int:
    """Where the m31 ladder starts: gemini-2.5-flash tends to under-compress, so it starts higher."""
    return 2 if "gemini-2.5-flash" in (model_name or "") else 1


def strip_observation_groups(text: str) -> str:
    """Remove `<observation-group …>` wrappers (retrieval provenance), keeping their content."""
    return _GROUP_TAG.sub("", _GROUP_TAG_LINE.sub("", text))


def _check_level(profile: str, level: int) -> None:
    top = MAX_LEVEL if profile == "m31" else 1
    if not isinstance(level, int) or not 0 <= level <= top:
        raise InputError(f"compression level must be an integer in 0..{top} for profile {profile!r}, got {level!r}")


def build_reflector_system_prompt(profile: str, prompts_folder: str | Path | None = None) -> str:
    check_profile(profile)
    instructions = observer_instruction_set(profile, prompts_folder)
    return "\n\n".join(
        [
            load(profile, "reflector_intro", prompts_folder),
            f"<observational-memory-instruction>\n{instructions}\n</observational-memory-instruction>",
            load(profile, "reflector_rules", prompts_folder),
            load(profile, "observer_output", prompts_folder),
            load(profile, "observer_output_hints", prompts_folder),
            load(profile, "observer_closing", prompts_folder),
        ]
    )


def compression_guidance(profile: str, level: int, prompts_folder: str | Path | None = None) -> str | None:
    """The guidance text for a level (None at level 0). m11 has one text, used as its level 1."""
    _check_level(profile, level)
    if level == 0:
        return None
    return load(profile, "reflector_retry" if profile == "m11" else f"reflector_level_{level}", prompts_folder)


def build_reflector_messages(
    profile: str,
    observations: str,
    level: int,
    *,
    buffered: bool = False,
    guidance: str | None = None,
    prompts_folder: str | Path | None = None,
) -> list[dict[str, Any]]:
    """System prompt + one user message: the observations, the task, optional guidance, level guidance."""
    check_profile(profile)
    _check_level(profile, level)
    body = strip_observation_groups(observations).strip()
    parts = [f"{REFLECT_HEADING}\n\n{body}{OBSERVATIONS_END}" + load(profile, "reflector_task", prompts_folder)]
    if guidance and guidance.strip():
        parts.append(f"{GUIDANCE_HEADING}\n\n" + guidance.strip())
    level_text = compression_guidance(profile, level, prompts_folder)
    if level_text:
        parts.append(level_text)
    if buffered:
        parts.append(load(profile, "buffered_note", prompts_folder))
    return [
        {"role": "system", "content": build_reflector_system_prompt(profile, prompts_folder)},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def observations_from_prompt(text: str) -> str:
    """The observations of a Reflector request, from the text of its user message: what follows
    REFLECT_HEADING up to the line `---` that closes the block, stripped. Text without the heading is read
    from its start."""
    i = text.find(REFLECT_HEADING)
    body = text[i + len(REFLECT_HEADING) :] if i >= 0 else text
    end = body.find(OBSERVATIONS_END)
    return (body[:end] if end >= 0 else body).strip()


def compression_level_in_prompt(text: str, prompts_folder: str | Path | None = None) -> int:
    """The compression level whose guidance (`compression_guidance`, either profile) a Reflector request's
    text carries; 0 when it carries none."""
    for level in range(MAX_LEVEL, 0, -1):
        for profile in ("m31", "m11"):
            if level > 1 and profile == "m11":
                continue
            guidance = compression_guidance(profile, level, prompts_folder)
            if guidance and guidance.strip() in text:
                return level
    return 0


async def _call(
    model: ChatModel, profile: str, observations: str, level: int, params: dict[str, Any], buffered: bool, folder: Any
) -> ObserverOutput:
    prompt = build_reflector_messages(profile, observations, level, buffered=buffered, prompts_folder=folder)
    completion = await model.complete(prompt, **params)
    return parse_observer_output(completion.text, check_degenerate=profile == "m31")


async def reflect(
    model: ChatModel,
    observations: str,
    *,
    target_tokens: int,
    profile: str = "m31",
    model_name: str = "",
    start_level: int | None = None,
    counter: TokenCounter | None = None,
    model_params: dict[str, Any] | None = None,
    buffered: bool = False,
    prompts_folder: str | Path | None = None,
) -> ReflectionResult:
    """Compress `observations` below `target_tokens` (success is `tokens < target_tokens`).

    Raises EmptyReflectionError when the input is non-empty and no call produced anything non-empty.
    """
    check_profile(profile)
    if not isinstance(target_tokens, int) or target_tokens <= 0:
        raise InputError(f"target_tokens must be a positive integer, got {target_tokens!r}")
    counter = counter or default_counter()
    if not observations.strip():
        return ReflectionResult(text="", tokens=0)
    params = {**DEFAULT_REFLECTOR_PARAMS, **(model_params or {}), "role": "reflector"}

    levels: list[int] = []
    if profile == "m11":
        levels.append(0)
        out = await _call(model, profile, observations, 0, params, buffered, prompts_folder)
        best = out if out.observations.strip() else None
        if best is None or counter.count_string(best.observations) >= target_tokens:
            levels.append(1)
            retry = await _call(model, profile, observations, 1, params, buffered, prompts_folder)
            if retry.observations.strip():
                best = retry
        return _commit(best, counter, target_tokens, levels, [])

    start = compression_start_level(model_name) if start_level is None else start_level
    _check_level(profile, start)
    top = min(MAX_LEVEL, start + LADDER_STEPS)
    degenerate: list[int] = []
    last_good: ObserverOutput | None = None
    for level in range(start, top + 1):
        out = await _call(model, profile, observations, level, params, buffered, prompts_folder)
        levels.append(level)
        if out.degenerate:
            degenerate.append(level)
            continue
        if not out.observations.strip():
            continue  # an empty rewrite would erase memory: treat like a failure and compress harder
        last_good = out
        if counter.count_string(out.observations) < target_tokens:
            break
    return _commit(last_good, counter, target_tokens, levels, degenerate)


def _commit(
    out: ObserverOutput | None, counter: TokenCounter, target: int, levels: list[int], degenerate: list[int]
) -> ReflectionResult:
    if out is None:
        raise EmptyReflectionError(
            f"Reflector produced no usable observations at levels {levels}; refusing to commit an empty reflection"
        )
    tokens = counter.count_string(out.observations)
    return ReflectionResult(
        text=out.observations,
        tokens=tokens,
        levels=levels,
        over_target=tokens >= target,
        degenerate_levels=degenerate,
        suggested_response=out.suggested_response,
    )
