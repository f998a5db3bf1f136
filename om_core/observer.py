"""The Observer: turns new messages into dated, prioritised observations (spec §3).

Formatting lives in `observer_format`, the prompt in `observer_prompt`, parsing in `observer_parse`;
this module runs the call and re-exports the public names.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .degenerate import DegenerateOutputError
from .llm import ChatModel
from .observer_format import format_messages, outline_args, render_tool_result
from .observer_parse import ObserverOutput, ThreadSection, parse_observer_output, sanitize_lines
from .observer_prompt import build_observer_messages, build_observer_system_prompt, observer_instruction_set
from .prompts import check_profile
from .types import Message

__all__ = [
    "DEFAULT_OBSERVER_PARAMS",
    "DegenerateOutputError",
    "ObserverOutput",
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
    buffered: bool = False,
    model_params: dict[str, Any] | None = None,
    **kw: Any,
) -> ObserverOutput:
    """One Observer call. `kw` goes to `build_observer_messages` (instruction, thread_title,
    prompts_folder, tz, counter).

    m31 checks for degenerate output: one regeneration, then `DegenerateOutputError`. m11 has no check.
    """
    check_profile(profile)
    prompt = build_observer_messages(
        profile,
        existing_observations=existing_observations,
        messages=messages,
        threads=threads,
        prior_metadata=prior_metadata,
        buffered=buffered,
        **kw,
    )
    params = {**DEFAULT_OBSERVER_PARAMS, **(model_params or {}), "role": "observer"}
    check = profile == "m31"
    attempts = 2 if check else 1
    for _ in range(attempts):
        completion = await model.complete(prompt, **params)
        out = parse_observer_output(completion.text, multi_thread=threads is not None, check_degenerate=check)
        if not out.degenerate:
            return out
    raise DegenerateOutputError("Observer output was degenerate (repetition loop) twice in a row")
