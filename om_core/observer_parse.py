"""Parsing Observer (and Reflector) output (spec §3.5, §3.6), and writing it.

`format_observer_output` is the inverse of `parse_observer_output`, and the observation-line helpers follow
the line format the prompts ask for (`* 🔴 (09:12) text`, sub-bullets `  * -> text`, priorities 🔴 🟡 🟢 ✅):
code that writes or reads observations by rule (the benchmark's offline engine) uses them, so it follows any
change made here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import time
from typing import Mapping

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
_LIST_LINE = re.compile(r"^\s*(?:[-*•]|\d+\.)\s+\S")

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


def _list_lines_only(text: str) -> str:
    """Fallback when no <observations> block is found: keep only list lines, hints removed first."""
    without_hints = _ANY_HINT.sub("", text)
    return "\n".join(line.rstrip() for line in without_hints.split("\n") if _LIST_LINE.match(line))


def _observation_content(text: str) -> str:
    blocks = [m.group(1).strip("\n") for m in _OBSERVATIONS.finditer(text)]
    if blocks:
        return "\n".join(b.strip() for b in blocks if b.strip())
    return _list_lines_only(text)


def _parse_threads(text: str) -> dict[str, ThreadSection]:
    threads: dict[str, ThreadSection] = {}
    for m in _THREAD.finditer(text):
        tid, body = m.group(1).strip(), m.group(2)
        task, suggested = _first(_CURRENT_TASK, body), _first(_SUGGESTED, body)
        obs = sanitize_lines(_ANY_HINT.sub("", body).strip())
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
    without their per-thread hints.
    """
    if check_degenerate and detect_degenerate_repetition(text):
        return ObserverOutput(observations="", degenerate=True)
    working = parse_working_memory_section(text)
    if working is not None:  # its lines are no observations, wherever the model put the section
        text = strip_working_memory_section(text)
    blocks = [m.group(1) for m in _OBSERVATIONS.finditer(text)]
    title = _first(_TITLE, text)
    if not multi_thread:
        return ObserverOutput(
            observations=sanitize_lines(_observation_content(text)),
            current_task=_first(_CURRENT_TASK, text),
            suggested_response=_first(_SUGGESTED, text),
            thread_title=title,
            working_memory=working,
        )
    scope = "\n".join(blocks) if blocks else text
    threads = _parse_threads(scope)
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
