"""Parsing Observer (and Reflector) output, and writing it. Parsing rules from mastra-ai/mastra,
packages/memory/src/processors/observational-memory/observer-agent.ts.

`format_observer_output` is the inverse of `parse_observer_output`, and the observation-line helpers follow
the line format the prompts ask for (`* 🔴 (09:12) text`, sub-bullets `  * -> text`, priorities 🔴 🟡 🟢 ✅):
code that writes or reads observations by rule (the benchmark's offline engine) uses them, so it follows any
change made here.

Output without an `<observations>` block is read by the fallback (`parse_mode="fallback"`), which keeps only
observation lines (a priority marker or a `(HH:MM)` clock; their `->` sub-bullets; the `Date:` headers above
them). Mastra's fallback kept every list line, so an assistant-style answer ("Here are some tips: 1. ...")
became memory; whether the rest of an output may become memory is decided by `om_core.guards`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import time
from typing import Literal, Mapping

from .degenerate import detect_degenerate_repetition
from .errors import InputError
from .working_memory import Entry, parse_working_memory_section, strip_working_memory_section

MAX_LINE_CHARS = 10_000
TRUNCATION_NOTE = " … [truncated]"

# Tags count only at the start of a line, so prose that mentions "<observations>" is not taken as output.
_OBSERVATIONS = re.compile(r"^[ \t]*<observations>(.*?)^[ \t]*</observations>", re.MULTILINE | re.DOTALL)
_CURRENT_TASK = re.compile(r"^[ \t]*<current-task>(.*?)</current-task>", re.MULTILINE | re.DOTALL)
_SUGGESTED = re.compile(r"^[ \t]*<suggested-response>(.*?)</suggested-response>", re.MULTILINE | re.DOTALL)
_TITLE = re.compile(r"^[ \t]*<thread-title>(.*?)</thread-title>", re.MULTILINE | re.DOTALL)
_THREAD = re.compile(r'<thread id="([^"]*)">(.*?)</thread>', re.DOTALL)
_ANY_HINT = re.compile(
    r"<(current-task|suggested-response|thread-title)>.*?</\1>", re.DOTALL
)
# an observation line: optional bullet, then a priority marker and/or a (HH:MM) clock, then text
_OBSERVATION_MARKS = re.compile(r"^\s*(?:[*\-•]\s*)?(?:[🔴🟡🟢✅]\s*)?(?:\(\d{1,2}:\d{2}\)\s*)?")
_PRIORITY_OR_CLOCK = re.compile(r"[🔴🟡🟢✅]|\(\d{1,2}:\d{2}\)")
_SUB_OBSERVATION = re.compile(r"^\s*(?:[*\-•]\s*)?->\s*\S")
_DATE_HEADER = re.compile(r"^\s*Date:\s*\S")
ParseMode = Literal["tagged", "fallback"]

PRIORITY_HIGH = "🔴"
PRIORITY_MEDIUM = "🟡"
PRIORITY_LOW = "🟢"
COMPLETED = "✅"
PRIORITIES = (PRIORITY_HIGH, PRIORITY_MEDIUM, PRIORITY_LOW, COMPLETED)
SUB_BULLET = "->"
# what precedes an observation's text: bullet, priority, (HH:MM), sub-bullet arrow (each optional)
_LINE_MARKS = re.compile(r"^\s*(?:[*\-](?!>)\s*)*(?:[🔴🟡🟢✅]\s*)?(?:\(\d{1,2}:\d{2}\)\s*)?")
_ARROW_MARK = re.compile(r"^->\s*")


@dataclass
class ThreadSection:
    observations: str
    current_task: str | None = None
    suggested_response: str | None = None


@dataclass
class ObserverOutput:
    observations: str
    current_task: str | None = None
    suggested_response: str | None = None
    thread_title: str | None = None
    threads: dict[str, ThreadSection] = field(default_factory=dict)
    # parse_observer_output: the text looped and was emptied; `observe` without the repetition check (m11):
    # the text looped and was kept, as m11 kept it
    degenerate: bool = False
    # updates of the `<working-memory>` section (om_core.working_memory); None: the output has none
    working_memory: list[Entry] | None = None
    # "tagged": read from <observations> blocks; "fallback": no block, observation lines picked out of the text
    parse_mode: ParseMode = "tagged"


def sanitize_lines(text: str) -> str:
    """Cut any line longer than 10,000 characters, marking the cut."""
    return "\n".join(
        line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + TRUNCATION_NOTE for line in text.split("\n")
    )


def _first(pattern: re.Pattern[str], text: str) -> str | None:
    m = pattern.search(text)
    if not m:
        return None
    value = m.group(1).strip()
    return value or None


def is_observation_line(line: str) -> bool:
    """Whether `line` is an observation line as the prompts ask for them: an optional bullet, a priority marker
    (🔴 🟡 🟢 ✅) and/or a `(HH:MM)` clock, then text (`* 🔴 (09:12) User stated ...`)."""
    m = _OBSERVATION_MARKS.match(line)
    if m is None or not _PRIORITY_OR_CLOCK.search(m.group(0)):
        return False
    rest = line[m.end():]
    return bool(rest) and not rest.startswith((".", "…"))  # "* 🔴 (09:12) ..." is a placeholder


def observation_lines_only(text: str) -> str:
    """The fallback when no <observations> block is found: hints removed, then only observation lines, the `->`
    sub-bullets right under them, and a `Date:` header when an observation line follows it. List lines without
    a priority or clock (an assistant's numbered tips, prompt headings) are dropped."""
    kept: list[str] = []
    header: str | None = None
    in_observation = False
    for line in _ANY_HINT.sub("", text).split("\n"):
        if _DATE_HEADER.match(line):
            header, in_observation = line.strip(), False
        elif is_observation_line(line):
            if header is not None:
                kept.append(header)
                header = None
            kept.append(line.rstrip())
            in_observation = True
        elif in_observation and _SUB_OBSERVATION.match(line):
            kept.append(line.rstrip())
        elif line.strip():
            in_observation = False
    return "\n".join(kept)


def _observation_content(text: str) -> str:
    blocks = [m.group(1).strip("\n") for m in _OBSERVATIONS.finditer(text)]
    if blocks:
        return "\n".join(b.strip() for b in blocks if b.strip())
    return observation_lines_only(text)


def _parse_threads(text: str, fallback: bool = False) -> dict[str, ThreadSection]:
    threads: dict[str, ThreadSection] = {}
    for m in _THREAD.finditer(text):
        tid, body = m.group(1).strip(), m.group(2)
        task, suggested = _first(_CURRENT_TASK, body), _first(_SUGGESTED, body)
        obs = _ANY_HINT.sub("", body).strip()
        obs = sanitize_lines(observation_lines_only(obs) if fallback else obs)
        if tid in threads:  # the same thread twice: join its sections, later hints win
            prev = threads[tid]
            obs = "\n".join(x for x in (prev.observations, obs) if x)
            task, suggested = task or prev.current_task, suggested or prev.suggested_response
        threads[tid] = ThreadSection(obs, task, suggested)
    return threads


def parse_observer_output(text: str, *, multi_thread: bool = False, check_degenerate: bool = True) -> ObserverOutput:
    """Split raw model output into observations and hints.

    Degenerate (looping) output gives an empty result with `degenerate=True`. In multi-thread mode the
    `<thread id="…">` sections are parsed into `threads`, and `observations` holds them re-wrapped
    without their per-thread hints. Without an `<observations>` block (`parse_mode="fallback"`) only
    observation lines are kept (`observation_lines_only`), in thread sections too.
    """
    if check_degenerate and detect_degenerate_repetition(text):
        return ObserverOutput(observations="", degenerate=True)
    working = parse_working_memory_section(text)
    if working is not None:  # its lines are no observations, wherever the model put the section
        text = strip_working_memory_section(text)
    blocks = [m.group(1) for m in _OBSERVATIONS.finditer(text)]
    mode: ParseMode = "tagged" if blocks else "fallback"
    title = _first(_TITLE, text)
    if not multi_thread:
        return ObserverOutput(
            observations=sanitize_lines(_observation_content(text)),
            current_task=_first(_CURRENT_TASK, text),
            suggested_response=_first(_SUGGESTED, text),
            thread_title=title,
            working_memory=working,
            parse_mode=mode,
        )
    scope = "\n".join(blocks) if blocks else text
    threads = _parse_threads(scope, fallback=not blocks)
    outside = _THREAD.sub("", text)  # hints outside any thread section belong to the whole call
    if threads:
        observations = "\n".join(
            f'<thread id="{tid}">\n{sec.observations}\n</thread>' for tid, sec in threads.items() if sec.observations
        )
    else:
        observations = sanitize_lines(_observation_content(text))
    return ObserverOutput(
        observations=observations,
        current_task=_first(_CURRENT_TASK, outside),
        suggested_response=_first(_SUGGESTED, outside),
        thread_title=title,
        threads=threads,
        working_memory=working,
        parse_mode=mode,
    )


def _block(tag: str, value: str) -> str:
    return f"<{tag}>\n{value}\n</{tag}>"


def format_observer_output(
    observations: str,
    *,
    current_task: str | None = None,
    suggested_response: str | None = None,
    thread_title: str | None = None,
) -> str:
    """Observer (or Reflector) output as `parse_observer_output` reads it: the `<observations>` block, then
    each hint that is given. For multi-thread output pass `format_thread_sections(...)` as `observations`."""
    parts = [_block("observations", observations)]
    for tag, value in (("current-task", current_task), ("suggested-response", suggested_response),
                       ("thread-title", thread_title)):
        if value is not None:
            parts.append(_block(tag, value))
    return "\n\n".join(parts)


def format_thread_sections(threads: Mapping[str, ThreadSection]) -> str:
    """The body of a multi-thread output: one `<thread id="…">` section per thread, each with its hints."""
    out = []
    for tid, sec in threads.items():
        lines = [f'<thread id="{tid}">', sec.observations]
        if sec.current_task is not None:
            lines.append(_block("current-task", sec.current_task))
        if sec.suggested_response is not None:
            lines.append(_block("suggested-response", sec.suggested_response))
        out.append("\n".join([*lines, "</thread>"]))
    return "\n".join(out)


def format_observation(text: str, priority: str = PRIORITY_HIGH, clock: time | None = None) -> str:
    """One observation line: `* 🔴 (09:12) text` (24-hour clock; without one when `clock` is None)."""
    if priority not in PRIORITIES:
        raise InputError(f"priority must be one of {' '.join(PRIORITIES)}, got {priority!r}")
    stamp = f" ({clock:%H:%M})" if clock is not None else ""
    return f"* {priority}{stamp} {text}"


def format_sub_observation(text: str) -> str:
    """A sub-bullet under the observation above it: `  * -> text`."""
    return f"  * {SUB_BULLET} {text}"


def observation_text(line: str, *, arrow: bool = True) -> str:
    """An observation line without its bullet, priority marker and clock (and, with `arrow`, the sub-bullet
    arrow): `* 🔴 (09:12) User stated X` -> `User stated X`."""
    text = _LINE_MARKS.sub("", line, count=1)
    return _ARROW_MARK.sub("", text, count=1) if arrow else text
