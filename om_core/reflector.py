"""The Reflector: rewrites the whole observation log into a smaller one.

Rules from mastra-ai/mastra, packages/memory/src/processors/observational-memory/reflector-agent.ts and
reflector-runner.ts.

m31 climbs a compression ladder (levels 0-4) until the output is under the target; m11 makes one attempt
and, if it is not under the target, one retry with its single compression guidance.

`observations_from_prompt` and `compression_level_in_prompt` read a built Reflector request back (for code
that parses these prompts, such as the benchmark's offline engine), so they follow any change made here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from .degenerate import detect_degenerate_repetition
from .errors import EmptyReflectionError, InputError
from .diagnostics import record_output
from .guards import TRUNCATED, Candidate, Guard, first_rejection, instruction_text, larger_cap, reflector_guards, with_cap
from .llm import ChatModel
from .observer_parse import ObserverOutput, parse_observer_output
from .observer_prompt import observer_instruction_set
from .prompts import check_profile, load, whole
from .tokens import TokenCounter, default_counter

MAX_LEVEL = 4
LADDER_STEPS = 3  # at most this many levels above the start level
DEFAULT_REFLECTOR_PARAMS: dict[str, Any] = {"temperature": 0}

REFLECT_HEADING = "## OBSERVATIONS TO REFLECT ON"
GUIDANCE_HEADING = "## SPECIFIC GUIDANCE"
OBSERVATIONS_END = "\n\n---\n\n"  # closes the observations block, before the task
CUSTOM_INSTRUCTIONS_HEADING = "=== CUSTOM INSTRUCTIONS ==="

_GROUP_TAG_LINE = re.compile(r"^[ \t]*</?observation-group\b[^>]*>[ \t]*\n?", re.MULTILINE)
_GROUP_TAG = re.compile(r"</?observation-group\b[^>]*>")


@dataclass
class ReflectionResult:
    text: str
    tokens: int
    levels: list[int] = field(default_factory=list)  # compression level of every call, in order
    over_target: bool = False  # committed although still >= target (ladder or retry exhausted)
    degenerate_levels: list[int] = field(default_factory=list)  # levels whose output looped
    suggested_response: str | None = None
    degenerate: bool = False  # the committed text loops (possible only without the repetition check: m11)
    rejected: list[tuple[int, str]] = field(default_factory=list)  # (level, guard reason) of refused outputs


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


def build_reflector_system_prompt(profile: str, prompts_folder: str | Path | None = None, *,
                                  instruction: str | None = None, buffered: bool = False) -> str:
    """The Reflector's system prompt; `instruction` (`reflection.instruction`) is appended under
    `=== CUSTOM INSTRUCTIONS ===` as for the Observer (mastra-ai/mastra, packages/memory/src/processors/
    observational-memory/reflector-agent.ts). A prompts folder with a whole `reflector_system` text (e.g.
    Mastra's own, om_core.mastra_texts) gives the prompt; `buffered` takes its `reflector_system_buffered`
    (Mastra 1.31.0's prompt without the hint sections) when it has one."""
    check_profile(profile)
    given = (buffered and whole(profile, "reflector_system_buffered", prompts_folder)) or \
        whole(profile, "reflector_system", prompts_folder)
    if given is not None:
        return given + (f"\n\n{CUSTOM_INSTRUCTIONS_HEADING}\n{instruction.strip()}"
                        if instruction and instruction.strip() else "")
    instructions = observer_instruction_set(profile, prompts_folder)
    parts = [
        load(profile, "reflector_intro", prompts_folder),
        f"<observational-memory-instruction>\n{instructions}\n</observational-memory-instruction>",
        load(profile, "reflector_rules", prompts_folder),
        load(profile, "observer_output", prompts_folder),
        load(profile, "observer_output_hints", prompts_folder),
        load(profile, "observer_closing", prompts_folder),
    ]
    if instruction and instruction.strip():
        parts.append(CUSTOM_INSTRUCTIONS_HEADING + "\n" + instruction.strip())
    return "\n\n".join(parts)


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
    instruction: str | None = None,
    prior_values: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """System prompt (+ `instruction`) + one user message: the observations, the task, optional guidance,
    level guidance.

    A prompts folder with Mastra 1.31.0's texts (`reflector_prior_values`, `reflector_output_sections`;
    om_core.mastra_texts) adds, on a call that is not buffered, the thread's prior hints (`prior_values`:
    current_task / suggested_response) and the additional output sections, as reflector-agent.ts
    buildReflectorPrompt does with the built-in extractors."""
    check_profile(profile)
    _check_level(profile, level)
    body = strip_observation_groups(observations).strip()
    parts = [f"{REFLECT_HEADING}\n\n{body}{OBSERVATIONS_END}" + load(profile, "reflector_task", prompts_folder)]
    if guidance and guidance.strip():
        parts.append(f"{GUIDANCE_HEADING}\n\n" + guidance.strip())
    level_text = compression_guidance(profile, level, prompts_folder)
    if level_text:
        parts.append(level_text)
    sections = None if buffered else whole(profile, "reflector_output_sections", prompts_folder)
    if sections is not None:
        tags = (("current-task", "current_task"), ("suggested-response", "suggested_response"))
        values = [f"<{tag}>\n{v}\n</{tag}>" for tag, key in tags if (v := (prior_values or {}).get(key))]
        if values:
            parts.append(load(profile, "reflector_prior_values", prompts_folder).replace("{values}", "\n\n".join(values)))
        parts.append(sections)
    if buffered:
        parts.append(load(profile, "buffered_note", prompts_folder))
    return [
        {"role": "system", "content": build_reflector_system_prompt(profile, prompts_folder, instruction=instruction,
                                                                    buffered=buffered)},
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


@dataclass
class _Attempt:
    out: ObserverOutput
    reason: str  # "" when every guard accepted the output
    degenerate: bool


async def _call(model: ChatModel, profile: str, observations: str, level: int, params: dict[str, Any],
                opts: dict[str, Any], guards: Sequence[Guard], counter: TokenCounter) -> _Attempt:
    """One level: the call, and once more with a larger output cap when the output was truncated."""
    prompt = build_reflector_messages(profile, observations, level, **opts)
    instructions = instruction_text(prompt, strip_observation_groups(observations))
    cap: int | None = None
    while True:
        completion = await model.complete(prompt, **(params if cap is None else with_cap(params, cap)))
        out = parse_observer_output(completion.text, check_degenerate=False)
        cand = Candidate("reflector", profile, completion, out.observations, observations, instructions,
                         out.parse_mode)
        reason = first_rejection(guards, cand)
        record_output(cand, reason, counter=counter, level=level)
        if reason == TRUNCATED and cap is None and (cap := larger_cap(params)) is not None:
            continue
        looped = detect_degenerate_repetition(completion.text, source=observations)
        return _Attempt(out, reason or "", looped)


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
    instruction: str | None = None,
    degenerate_check: bool | None = None,
    guards: Sequence[Guard] | None = None,
    prior_values: dict[str, str] | None = None,
) -> ReflectionResult:
    """Compress `observations` below `target_tokens` (success is `tokens < target_tokens`).

    Every output passes `guards` (default `om_core.guards.reflector_guards(degenerate_check)`; the repetition
    check `degenerate_check` is on by default for m31, off for m11); a truncated output is asked for once more
    at the same level with twice the `max_tokens` cap; a refused output counts as a failed attempt. Without the
    repetition check an output that loops can be committed (as m11 did) and is flagged `degenerate`. Raises
    EmptyReflectionError (with the last refusal's `reason`) when the input is non-empty and no attempt was
    usable. Each call is recorded in an active `om_core.diagnostics.collect_outputs()` block.
    """
    check_profile(profile)
    if not isinstance(target_tokens, int) or target_tokens <= 0:
        raise InputError(f"target_tokens must be a positive integer, got {target_tokens!r}")
    counter = counter or default_counter()
    if not observations.strip():
        return ReflectionResult(text="", tokens=0)
    params = {**DEFAULT_REFLECTOR_PARAMS, **(model_params or {}), "role": "reflector"}
    check = profile == "m31" if degenerate_check is None else degenerate_check
    active = reflector_guards(check) if guards is None else list(guards)
    opts: dict[str, Any] = {"buffered": buffered, "prompts_folder": prompts_folder, "instruction": instruction,
                            "prior_values": prior_values}
    levels: list[int] = []
    looped: list[int] = []
    rejected: list[tuple[int, str]] = []

    async def attempt(level: int) -> _Attempt:
        a = await _call(model, profile, observations, level, params, opts, active, counter)
        levels.append(level)
        if a.degenerate:
            looped.append(level)
        if a.reason:
            rejected.append((level, a.reason))
        return a

    if profile == "m11":  # one attempt; one retry with the compression guidance unless under target
        first = await attempt(0)
        best = None if first.reason else first
        if best is None or counter.count_by_lines(best.out.observations) >= target_tokens:
            retry = await attempt(1)
            if not retry.reason:
                best = retry
        return _commit(best, counter, target_tokens, levels, looped, rejected)

    start = compression_start_level(model_name) if start_level is None else start_level
    _check_level(profile, start)
    top = min(MAX_LEVEL, start + LADDER_STEPS)
    last_good: _Attempt | None = None
    for level in range(start, top + 1):
        a = await attempt(level)
        if a.reason:
            continue  # a refused rewrite (empty, looping...) would erase memory: compress harder instead
        last_good = a
        if counter.count_by_lines(a.out.observations) < target_tokens:
            break
    return _commit(last_good, counter, target_tokens, levels, looped, rejected)


def _commit(a: _Attempt | None, counter: TokenCounter, target: int, levels: list[int], looped: list[int],
            rejected: list[tuple[int, str]]) -> ReflectionResult:
    if a is None:
        reason = rejected[-1][1] if rejected else "empty_output"
        raise EmptyReflectionError(
            f"Reflector produced no usable observations at levels {levels} (last refusal: {reason}); "
            "refusing to commit an empty reflection", reason=reason)
    tokens = counter.count_by_lines(a.out.observations)
    return ReflectionResult(
        text=a.out.observations,
        tokens=tokens,
        levels=levels,
        over_target=tokens >= target,
        degenerate_levels=looped,
        suggested_response=a.out.suggested_response,
        degenerate=a.degenerate,
        rejected=rejected,
    )
