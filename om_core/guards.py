"""Output guards: the one place that decides whether an Observer or Reflector output may become memory.

A guard looks at one `Candidate` (the raw completion, what the parser extracted from it, the text the model
was asked to compress, and om_core's own instruction text in the request) and returns a short reason when the
output must not be committed, else None. The callers (`om_core.observer.observe`, `om_core.reflector.reflect`)
run `first_rejection` on every attempt:

* A truncated output (`finish_reason` "length") is asked for once more with a larger output cap
  (`larger_cap`), then refused.
* Observer: any other refusal is regenerated while attempts remain (m31: one regeneration, as Mastra's
  observer-runner.ts does for degenerate output; m11: none), then `RejectedOutputError(reason)` is raised.
* Reflector: a refused attempt counts as a failed level (m31 climbs the compression ladder; m11 makes its one
  retry); when no attempt is usable, `EmptyReflectionError(reason)` is raised.

The engine (`om_core.engine`) catches those errors: messages stay unobserved, the previous memory is kept, and
the turn records an `observation_rejected` / `reflection_rejected` event with the reason.

The guards and when they are on (docs/om.md, "Output guards", says why each is safe):

| reason | guard | on |
|---|---|---|
| `truncated` | `truncation_guard` | always |
| `empty_output` | `empty_guard` | always |
| `copied_input` | `copy_guard` (Observer only) | always |
| `prompt_example` | `example_guard` | always |
| `prompt_echo` | `echo_guard` | always |
| `counting_loop` | `counting_guard` | always |
| `degenerate_repetition` | `degenerate_guard` | `degenerate_check` (m31; m11 with `degenerate_guard: true`) |
| `not_an_observation_log` | `log_guard` | always |
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Literal, Sequence

from om_core.degenerate import detect_counting_loop, detect_degenerate_repetition
from om_core.llm import Completion
from om_core.observer_parse import is_observation_line
from om_core.overlap import content_lines, reproduces, verbatim_line_share

GuardRole = Literal["observer", "reflector"]

# reasons of the built-in guards (also the `reason` of the errors and engine rejections they lead to)
TRUNCATED = "truncated"
EMPTY = "empty_output"
COPIED = "copied_input"
PROMPT_EXAMPLE = "prompt_example"
PROMPT_ECHO = "prompt_echo"
COUNTING = "counting_loop"
DEGENERATE = "degenerate_repetition"
NOT_A_LOG = "not_an_observation_log"

# Thresholds. Measured on the offline engine's Observer outputs for real LongMemEval_S haystacks
# (scripts/guard_margins.py; docs/om.md, "Output guards"): a faithful, well-formed log stays far below each.
COPY_LINE_SHARE = 0.5  # share of the output's content lines found verbatim in the input messages
COPY_REPRODUCED_SHARE = 0.8  # share of the input's 8-word runs the output reproduces
ECHO_LINE_SHARE = 0.5  # share of the output's content lines found verbatim in om_core's own prompt text
TRUNCATION_RETRY_FACTOR = 2  # a truncated output is asked for once more with this many times the cap

_BLOCK = re.compile(r"<observations>(.*?)</observations>", re.DOTALL)
_HINT_BLOCK = re.compile(r"<(current-task|suggested-response|thread-title)>.*?</\1>", re.DOTALL)


@dataclass(frozen=True)
class Candidate:
    """One model output on its way to memory."""

    role: GuardRole
    profile: str
    completion: Completion  # the raw completion (text, usage, finish_reason, provider meta)
    observations: str  # what the parser extracted: the text that would become memory
    source: str  # what the model was asked to compress: the formatted message history, or the observations
    instructions: str = ""  # om_core's own text in the request (system prompt, task, guidance), data removed
    parse_mode: str = "tagged"  # "tagged" (<observations> block) or "fallback" (observation lines picked out)

    @property
    def judged_text(self) -> str:
        """What the overlap guards measure: the parsed observations, or for an output without an
        <observations> block everything but its hints (so an untagged copy or echo is named as such)."""
        if self.parse_mode == "fallback":
            return _HINT_BLOCK.sub("", self.completion.text)
        return self.observations


Guard = Callable[[Candidate], "str | None"]


def truncation_guard(c: Candidate) -> str | None:
    """The output stopped at its cap or the context window (`finish_reason` "length"): it is cut short."""
    return TRUNCATED if (c.completion.finish_reason or "").lower() == "length" else None


def empty_guard(c: Candidate) -> str | None:
    """Nothing at all: an empty output must never mark messages observed nor replace memory."""
    return EMPTY if not c.completion.text.strip() else None


def copy_guard(c: Candidate) -> str | None:
    """A verbatim copy of the input messages: most of its content lines occur in the input as they are, or it
    reproduces most of the input's 8-word runs (a copy with observation marks added to each line)."""
    text = c.judged_text
    if not c.source.strip() or not text.strip():
        return None
    if verbatim_line_share(text, c.source, whole_line=is_observation_line) >= COPY_LINE_SHARE:
        return COPIED
    return COPIED if reproduces(text, c.source, COPY_REPRODUCED_SHARE) else None


def example_lines(instructions: str) -> list[str]:
    """The example observation lines of om_core's prompt text (inside its `<observations>` examples), normalised,
    placeholders ("...") left out. The m31 Observer example starts `* 🔴 (09:12) User stated they adopted a
    beagle named Pixel last weekend.`"""
    out: list[str] = []
    for block in _BLOCK.findall(instructions):
        for line in content_lines(_HINT_BLOCK.sub("", block)):
            if "..." not in line and "…" not in line and not line.startswith("<"):
                out.append(line)
    return out


def example_guard(c: Candidate) -> str | None:
    """An example observation of om_core's own prompt (the beagle named Pixel) in what would become memory.
    Lines are compared whole, with their priority, clock and date, so only a copy of the example matches."""
    examples = example_lines(c.instructions)
    if not examples:
        return None
    found = content_lines(c.observations if c.parse_mode == "tagged" else c.judged_text)
    return PROMPT_EXAMPLE if any(e in line for line in found for e in examples) else None


def echo_guard(c: Candidate) -> str | None:
    """Text of om_core's own prompt (headings, instructions, examples) makes up most of the output. An
    observation line counts only when it is a whole line of the prompt (an example), not when it merely starts
    like one."""
    if not c.instructions.strip():
        return None
    share = verbatim_line_share(c.judged_text, c.instructions, whole_line=is_observation_line)
    return PROMPT_ECHO if share >= ECHO_LINE_SHARE else None


def counting_guard(c: Candidate) -> str | None:
    """A counting loop ("1, 2, 3, ... 200") that the source does not have itself."""
    return COUNTING if detect_counting_loop(c.completion.text, source=c.source) else None


def degenerate_guard(c: Candidate) -> str | None:
    """A repetition loop that the source does not have itself (`detect_degenerate_repetition`)."""
    return DEGENERATE if detect_degenerate_repetition(c.completion.text, source=c.source) else None


def log_guard(c: Candidate) -> str | None:
    """Not an observation log: nothing parsed, or no observation line (priority marker or clock) in it."""
    lines = c.observations.split("\n")
    return None if any(is_observation_line(line) for line in lines) else NOT_A_LOG


def observer_guards(degenerate_check: bool) -> list[Guard]:
    """The guards an Observer output passes, in order (the first refusal names the reason).
    `degenerate_check`: m31's repetition check (off in m11 unless `OMConfig.degenerate_guard` turns it on)."""
    loop = [degenerate_guard] if degenerate_check else []
    return [truncation_guard, empty_guard, copy_guard, example_guard, echo_guard, counting_guard, *loop, log_guard]


def reflector_guards(degenerate_check: bool) -> list[Guard]:
    """The guards a Reflector output passes: the Observer's, except the copy guard (a reflection keeps
    observation lines of its input as they are)."""
    return [g for g in observer_guards(degenerate_check) if g is not copy_guard]


def first_rejection(guards: Sequence[Guard], candidate: Candidate) -> str | None:
    """The reason of the first guard that refuses `candidate`, or None when every guard accepts it."""
    for guard in guards:
        reason = guard(candidate)
        if reason:
            return reason
    return None


def instruction_text(prompt: Iterable[dict[str, Any]], *data: str) -> str:
    """om_core's own text in a request: every message's content joined, with the `data` (the history, the
    previous observations) cut out."""
    text = "\n\n".join(str(m.get("content", "")) for m in prompt)
    for d in data:
        if d and d.strip():
            text = text.replace(d.strip(), "")
    return text


def larger_cap(params: dict[str, Any]) -> int | None:
    """The output cap for a second try after a truncated output: TRUNCATION_RETRY_FACTOR times the cap that was
    sent (`max_tokens` or `max_completion_tokens`); None when none was sent (the model stopped at its own limit,
    which a retry cannot raise)."""
    cap = params.get("max_tokens") or params.get("max_completion_tokens")
    return int(cap) * TRUNCATION_RETRY_FACTOR if isinstance(cap, int) and cap > 0 else None


def with_cap(params: dict[str, Any], cap: int) -> dict[str, Any]:
    """`params` with the output cap set to `cap`, under the key that was used (`max_completion_tokens` when
    that was sent, else `max_tokens`)."""
    key = "max_completion_tokens" if params.get("max_completion_tokens") else "max_tokens"
    return {**params, key: cap}
