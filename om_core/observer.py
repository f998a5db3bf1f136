"""The Observer: turns new messages into dated, prioritised observations (spec §3).

Formatting lives in `observer_format`, the prompt in `observer_prompt`, parsing in `observer_parse`;
this module runs the call and re-exports the public names.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .degenerate import detect_degenerate_repetition
from .errors import DegenerateOutputError, RejectedOutputError
from .guards import DEGENERATE, Candidate, Guard, first_rejection, observer_guards
from .llm import ChatModel
from .observer_format import format_messages, outline_args, render_tool_result
from .observer_parse import ObserverOutput, ThreadSection, parse_observer_output, sanitize_lines
from .observer_prompt import (
    build_observer_messages,
    build_observer_system_prompt,
    history_from_prompt,
    observer_instruction_set,
)
from .prompts import check_profile
from .types import Message

__all__ = [
    "DEFAULT_OBSERVER_PARAMS",
    "DegenerateOutputError",
    "ObserverOutput",
    "RejectedOutputError",
    "ThreadSection",
    "build_observer_messages",
    "build_observer_system_prompt",
    "format_messages",
    "observe",
    "observer_instruction_set",
    "outline_args",
    "parse_observer_output",
    "render_tool_result",
    "sanitize_lines",
]

DEFAULT_OBSERVER_PARAMS: dict[str, Any] = {"temperature": 0.3}


async def observe(
    model: ChatModel,
    profile: str,
    *,
    existing_observations: str,
    messages: Sequence[Message] | None = None,
    threads: Mapping[str, Sequence[Message]] | None = None,
    prior_metadata: Mapping[str, str] | None = None,
    thread_metadata: Mapping[str, Mapping[str, str]] | None = None,
    buffered: bool = False,
    model_params: dict[str, Any] | None = None,
    degenerate_check: bool | None = None,
    guards: Sequence[Guard] | None = None,
    **kw: Any,
) -> ObserverOutput:
    """One Observer call (with its regeneration). `kw` goes to `build_observer_messages` (instruction,
    thread_title, prompts_folder, tz, counter); `thread_metadata` (multi-thread: thread id -> prior hints) too.

    Every output passes `guards` (default `om_core.guards.observer_guards(degenerate_check)`: empty output,
    and the repetition check when `degenerate_check`, which defaults to on for m31 and off for m11). With the
    repetition check on, a refused output is regenerated once (mastra-ai/mastra, packages/memory/src/
    processors/observational-memory/observer-runner.ts); a second refusal raises `DegenerateOutputError`
    (repetition) or `RejectedOutputError` (any other reason, in `.reason`). Without it there is one attempt,
    and an output that loops is returned with `degenerate=True` (m11 committed such output).
    """
    check_profile(profile)
    prompt = build_observer_messages(
        profile,
        existing_observations=existing_observations,
        messages=messages,
        threads=threads,
        prior_metadata=prior_metadata,
        thread_metadata=thread_metadata,
        buffered=buffered,
        **kw,
    )
    params = {**DEFAULT_OBSERVER_PARAMS, **(model_params or {}), "role": "observer"}
    check = profile == "m31" if degenerate_check is None else degenerate_check
    active = observer_guards(check) if guards is None else list(guards)
    source = history_from_prompt("\n\n".join(str(m["content"]) for m in prompt if m["role"] == "user"))
    reason = ""
    for _ in range(2 if check else 1):
        completion = await model.complete(prompt, **params)
        out = parse_observer_output(completion.text, multi_thread=threads is not None, check_degenerate=False)
        reason = first_rejection(active, Candidate("observer", profile, completion, out.observations, source)) or ""
        if not reason:
            if not check and detect_degenerate_repetition(completion.text, source=source):
                out.degenerate = True  # committed unchecked, as m11 did; the engine records an event
            return out
    if reason == DEGENERATE:
        raise DegenerateOutputError("Observer output was degenerate (repetition loop) twice in a row")
    raise RejectedOutputError(f"Observer output rejected ({reason}) on every attempt", reason=reason, role="observer")
