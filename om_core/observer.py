"""The Observer: turns new messages into dated, prioritised observations.

Rules from mastra-ai/mastra, packages/memory/src/processors/observational-memory/observer-agent.ts and
observer-runner.ts.

Formatting lives in `observer_format`, the prompt in `observer_prompt`, parsing in `observer_parse`;
this module runs the call and re-exports the public names.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .degenerate import detect_degenerate_repetition
from .errors import DegenerateOutputError, RejectedOutputError
from .diagnostics import record_output
from .guards import (
    DEGENERATE,
    TRUNCATED,
    Candidate,
    Guard,
    first_rejection,
    instruction_text,
    larger_cap,
    observer_guards,
    with_cap,
)
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
    """One Observer call (with its retries). `kw` goes to `build_observer_messages` (instruction,
    thread_title, prompts_folder, tz, counter); `thread_metadata` (multi-thread: thread id -> prior hints) too.

    Every output passes `guards` (default `om_core.guards.observer_guards(degenerate_check)`; the repetition
    check `degenerate_check` defaults to on for m31 and off for m11). A truncated output (`finish_reason`
    "length") is asked for once more with twice the `max_tokens` cap, then refused. With the repetition check on,
    any other refused output is regenerated once (mastra-ai/mastra, packages/memory/src/processors/
    observational-memory/observer-runner.ts). When no attempt is accepted, `DegenerateOutputError` (repetition)
    or `RejectedOutputError` (any other reason, in `.reason`) is raised. Without the repetition check an output
    that loops is returned with `degenerate=True` (m11 committed such output). Each call is recorded in an active
    `om_core.diagnostics.collect_outputs()` block.
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
    instructions = instruction_text(prompt, source, existing_observations)
    regenerations = 1 if check else 0
    truncation_retry = True
    reason = ""
    while True:
        completion = await model.complete(prompt, **params)
        out = parse_observer_output(completion.text, multi_thread=threads is not None, check_degenerate=False)
        cand = Candidate("observer", profile, completion, out.observations, source, instructions, out.parse_mode)
        reason = first_rejection(active, cand) or ""
        record_output(cand, reason, counter=kw.get("counter"))
        if not reason:
            if not check and detect_degenerate_repetition(completion.text, source=source):
                out.degenerate = True  # committed unchecked, as m11 did; the engine records an event
            return out
        if reason == TRUNCATED:
            cap = larger_cap(params) if truncation_retry else None
            if cap is None:
                break  # truncated twice, or no cap to raise: refused
            truncation_retry = False
            params = with_cap(params, cap)
            continue
        if regenerations <= 0:
            break
        regenerations -= 1
        # a regeneration repeats the request: `attempt` tells a caching model (om_core.llm.ChatModel) to sample anew
        params = {**params, "attempt": int(params.get("attempt", 0)) + 1}
    if reason == DEGENERATE:
        raise DegenerateOutputError("Observer output was degenerate (repetition loop) twice in a row")
    raise RejectedOutputError(f"Observer output rejected ({reason}) on every attempt", reason=reason, role="observer")
