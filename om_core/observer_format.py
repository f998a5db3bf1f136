"""How messages are shown to the Observer, and how to read that text back.

Rules from mastra-ai/mastra, packages/memory/src/processors/observational-memory/: observer-agent.ts
(`formatObserverMessage`), tool-result-helpers.ts and tool-argument-helpers.ts.

m31: a compact line format with a date header on each date change and a time label only when it changes;
tool exchanges deduplicated by call id, results cut to 5,000 tokens. m11: one bold header per message,
messages separated by `---`, tool calls and results as untruncated JSON.

`parse_history` is the inverse of `format_messages` (role, label, text, date and minute of each message), so
code that reads Observer prompts (the benchmark's offline engine) follows this module instead of copying it.
"""

from __future__ import annotations

import json
import re
from collections import deque
from dataclasses import dataclass
from datetime import date, datetime, time, timezone, tzinfo
from typing import Any, Sequence

from .dates import clock_12h
from .errors import InputError
from .prompts import check_profile
from .tokens import TokenCounter, default_counter
from .types import Message, ToolCall

TOOL_RESULT_MAX_TOKENS = 5_000
TOOL_ARGS_MAX_TOKENS = 2_000
ARG_STRING_PREVIEW = 160
ARG_MAX_PER_CONTAINER = 20
ARG_MAX_DEPTH = 5
ARG_MAX_ENTRIES = 100
ENCRYPTED_MAX_CHARS = 256
TEMPORAL_GAP_PREFIX = "__temporal_gap_"  # id prefix of temporal-gap marker messages (Mastra's temporal-markers.ts)

_ROLE_LABEL = {"user": "User", "assistant": "Assistant", "system": "System", "tool": "Tool"}
_TERMINAL_LABEL = {"result": "Tool Result", "error": "Tool Error", "denied": "Tool Denied"}
M11_SEPARATOR = "\n\n---\n\n"  # between two m11 message blocks


def m31_date_header(day: date) -> str:
    """The m31 line that opens each new date: `Mar 3 2026:`."""
    return f"{day:%b} {day.day} {day.year}:"


def m11_stamp(when: datetime) -> str:
    """The time stamp in an m11 message header: `Mar 3, 2026, 9:12 AM`."""
    return f"{when:%b} {when.day}, {when.year}, {clock_12h(when)}"


def _local(m: Message, tz: tzinfo) -> datetime:
    if m.created_at.tzinfo is None:
        raise InputError(f"message {m.id!r}: created_at must be timezone-aware")
    return m.created_at.astimezone(tz)


def _strip_encrypted(value: Any) -> Any:
    """Replace long `encryptedContent` strings (opaque provider blobs) with a short note."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == "encryptedContent" and isinstance(v, str) and len(v) > ENCRYPTED_MAX_CHARS:
                out[k] = f"[stripped encryptedContent: {len(v)} characters]"
            else:
                out[k] = _strip_encrypted(v)
        return out
    if isinstance(value, list):
        return [_strip_encrypted(v) for v in value]
    return value


def _json(value: Any, indent: int | None = 2) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent, default=str)


def _cap_tokens(text: str, max_tokens: int, counter: TokenCounter) -> str:
    kept, dropped = counter.truncate(text, max_tokens)
    return text if not dropped else f"{kept}\n... [truncated ~{dropped} tokens]"


def render_tool_result(result: Any, counter: TokenCounter, max_tokens: int | None = TOOL_RESULT_MAX_TOKENS) -> str:
    """A tool result as the m31 Observer sees it: text as is, other values as 2-space JSON, capped."""
    if result is None:
        return ""
    text = result if isinstance(result, str) else _json(_strip_encrypted(result))
    return text if max_tokens is None else _cap_tokens(text, max_tokens, counter)


def _leaf(value: Any) -> str:
    if isinstance(value, str) and len(value) > ARG_STRING_PREVIEW:
        preview = _json(value[:ARG_STRING_PREVIEW], None)
        return f"<string, {len(value)} characters; preview size-limited> {preview}…"
    return _json(value, None)


def outline_args(args: Any, counter: TokenCounter, max_tokens: int = TOOL_ARGS_MAX_TOKENS) -> str:
    """Breadth-first `path: value` outline of tool arguments, bounded in breadth, depth and tokens."""
    if not isinstance(args, (dict, list)):
        return _leaf(args)
    entries: list[str] = []
    queue: deque[tuple[str, Any, int]] = deque([("", args, 1)])
    while queue and len(entries) < ARG_MAX_ENTRIES:
        path, container, depth = queue.popleft()
        items = list(container.items()) if isinstance(container, dict) else list(enumerate(container))
        for i, (key, value) in enumerate(items):
            if len(entries) >= ARG_MAX_ENTRIES:
                break
            if i >= ARG_MAX_PER_CONTAINER:
                entries.append(f"{path or '(root)'}: … {len(items) - i} more entries")
                break
            sub = (f"{path}[{key}]" if path else f"[{key}]") if isinstance(container, list) else (
                f"{path}.{key}" if path else str(key)
            )
            if isinstance(value, (dict, list)) and value:
                if depth >= ARG_MAX_DEPTH:
                    entries.append(f"{sub}: <{type(value).__name__} with {len(value)} entries>")
                else:
                    queue.append((sub, value, depth + 1))
            else:
                entries.append(f"{sub}: {_leaf(value)}")
    return _cap_tokens("\n".join(entries), max_tokens, counter)


_REMINDER = re.compile(r"^\s*<system-reminder>(.*?)</system-reminder>\s*$", re.DOTALL)


def gap_text(content: str) -> str:
    """A temporal-gap marker as the Observer sees it: its gap text, without the `<system-reminder>` markup the
    Actor is shown (mastra-ai/mastra, packages/memory/src/processors/observational-memory/observer-agent.ts,
    `formatObserverMessage`)."""
    m = _REMINDER.match(content)
    return (m.group(1) if m else content).strip()


def _cut(text: str, max_chars: int | None) -> str:
    """`text` cut to `max_chars` with Mastra's marker `\\n... [truncated N characters]` (mastra-ai/mastra,
    packages/memory/src/processors/observational-memory/observer-agent.ts, `maybeTruncate`, 1.1.0 and 1.31.0).
    Lengths count UTF-16 code units as JavaScript's `String.length` and `slice` do; a surrogate pair split by
    the cut loses its lone half (JavaScript would keep it)."""
    if max_chars is None or len(text) <= max_chars // 2:
        return text
    units = text.encode("utf-16-le")
    if len(units) // 2 <= max_chars:
        return text
    head = units[: 2 * max_chars].decode("utf-16-le", errors="ignore")
    return f"{head}\n... [truncated {len(units) // 2 - max_chars} characters]"


def _format_m31(messages: Sequence[Message], tz: tzinfo, counter: TokenCounter, max_chars: int | None) -> str:
    lines: list[str] = []
    last_date = None
    last_clock: str | None = None
    seen_calls: set[str] = set()
    seen_results: set[str] = set()

    for m in messages:
        when = _local(m, tz)
        if when.date() != last_date:
            lines.append(m31_date_header(when))
            last_date, last_clock = when.date(), None

        def stamp() -> str:
            # Only the first line at a new clock time carries it; later lines inherit.
            nonlocal last_clock
            clock = clock_12h(when)  # noqa: B023 (called in the same iteration)
            if clock == last_clock:
                return ""
            last_clock = clock
            return f" ({clock})"

        if m.id.startswith(TEMPORAL_GAP_PREFIX):
            lines.append(gap_text(m.content))
            continue
        if m.content.strip():
            label = "Tool Result" if m.role == "tool" else _ROLE_LABEL.get(m.role, m.role.title())
            body = render_tool_result(m.content, counter) if m.role == "tool" else _cut(m.content, max_chars)
            lines.append(f"{label}{stamp()}: {body}")
        for call in m.tool_calls:
            lines.extend(_m31_tool_lines(call, stamp, counter, max_chars, seen_calls, seen_results))
    return "\n".join(lines)


def _m31_tool_lines(
    call: ToolCall, stamp: Any, counter: TokenCounter, max_chars: int | None, seen_calls: set[str], seen_results: set[str]
) -> list[str]:
    out: list[str] = []
    if call.id not in seen_calls:
        seen_calls.add(call.id)
        args = _cut(outline_args(call.args, counter), max_chars) if call.args else ""
        out.append(f"Tool Call {call.name}{stamp()}" + (f": {args}" if args else ""))
    if call.state in _TERMINAL_LABEL and call.id not in seen_results:
        seen_results.add(call.id)
        body = _cut(render_tool_result(call.result, counter), max_chars)
        out.append(f"{_TERMINAL_LABEL[call.state]} {call.name}{stamp()}" + (f": {body}" if body else ""))
    return out


def _format_m11(messages: Sequence[Message], tz: tzinfo, max_chars: int | None) -> str:
    blocks: list[str] = []
    for m in messages:
        when = _local(m, tz)
        if m.id.startswith(TEMPORAL_GAP_PREFIX):  # its gap text on its own, between the message blocks
            blocks.append(gap_text(m.content))
            continue
        parts: list[str] = []
        if m.content.strip():
            parts.append(_cut(m.content, max_chars))
        for call in m.tool_calls:
            parts.append(f"[Tool Call: {call.name}]\n{_cut(_json(call.args), max_chars)}")
            if call.state in _TERMINAL_LABEL:
                result = call.result if isinstance(call.result, str) else _json(call.result)
                parts.append(f"[Tool Result: {call.name}]\n{_cut(result, max_chars)}")
        if not parts:
            continue
        label = _ROLE_LABEL.get(m.role, m.role.title())
        blocks.append(f"**{label} ({m11_stamp(when)}):**\n" + "\n".join(parts))
    return M11_SEPARATOR.join(blocks)


def format_messages(
    messages: Sequence[Message],
    profile: str,
    *,
    tz: tzinfo = timezone.utc,
    counter: TokenCounter | None = None,
    max_part_chars: int | None = None,
) -> str:
    """Render messages for the Observer in the profile's format. Times are shown in `tz` (UTC default).

    `max_part_chars` cuts each text part (used for the Actor's OTHER-conversations block, 500 there).
    """
    check_profile(profile)
    if max_part_chars is not None and max_part_chars < 1:
        raise InputError(f"max_part_chars must be >= 1, got {max_part_chars}")
    if profile == "m11":
        return _format_m11(messages, tz, max_part_chars)
    return _format_m31(messages, tz, counter or default_counter(), max_part_chars)


# ---- reading the format back ------------------------------------------------------------------------------

_MONTH = {date(2000, k, 1).strftime("%b"): k for k in range(1, 13)}
_CLOCK = r"\d{1,2}:\d{2} [AP]M"
_M31_DATE_LINE = re.compile(r"^([A-Z][a-z]{2}) (\d{1,2}) (\d{4}):$")
# a message line (label, optional clock, ": text"); tool lines may have no text (a call without arguments)
_M31_LINE = re.compile(
    rf"^(?:(User|Assistant|System|Tool Result)(?: \(({_CLOCK})\))?: (.*)"
    rf"|(Tool (?:Call|Result|Error|Denied) [^\s(:]+)(?: \(({_CLOCK})\))?(?:: (.*))?)$"
)
_M11_HEADER = re.compile(
    rf"^\*\*(User|Assistant|System|Tool) \(([A-Z][a-z]{{2}}) (\d{{1,2}}), (\d{{4}}), ({_CLOCK})\):\*\*\n", re.MULTILINE
)


@dataclass(frozen=True)
class HistoryEntry:
    """One message read back from Observer history text (`parse_history`).

    `label` is the label as written ("User", "Tool Call search"); `day` and `clock` are the date and the minute
    shown for it in the history's time zone (m31 shows a clock only when it changes: later lines inherit it).
    """

    role: str  # user | assistant | system | tool
    label: str
    text: str
    day: date | None
    clock: time | None


def _role_of(label: str) -> str:
    return "tool" if label.startswith("Tool") else label.lower()


def _clock(text: str) -> time:
    hm, half = text.split(" ")
    hour, minute = (int(x) for x in hm.split(":"))
    return time(hour % 12 + (12 if half == "PM" else 0), minute)


def _day(month: str, day: str, year: str) -> date | None:
    try:
        return date(int(year), _MONTH[month], int(day))
    except (KeyError, ValueError):
        return None


def history_profile(history: str) -> str:
    """Which profile's format `history` is in: "m11" when it has an m11 message header, else "m31"."""
    return "m11" if _M11_HEADER.search(history) else "m31"


def _parse_m11(history: str) -> list[HistoryEntry]:
    heads = list(_M11_HEADER.finditer(history))
    out: list[HistoryEntry] = []
    for k, h in enumerate(heads):
        end = heads[k + 1].start() if k + 1 < len(heads) else len(history)
        body = history[h.end() : end]
        if k + 1 < len(heads) and body.endswith(M11_SEPARATOR):
            body = body[: -len(M11_SEPARATOR)]
        label = h.group(1)
        out.append(HistoryEntry(_role_of(label), label, body, _day(h.group(2), h.group(3), h.group(4)), _clock(h.group(5))))
    return out


def _parse_m31(history: str) -> list[HistoryEntry]:
    out: list[tuple[str, list[str], date | None, time | None]] = []
    day: date | None = None
    clock: time | None = None
    for line in history.split("\n"):
        dm = _M31_DATE_LINE.match(line)
        if dm:
            day, clock = _day(dm.group(1), dm.group(2), dm.group(3)), None
            continue
        lm = _M31_LINE.match(line)
        if lm:
            label, stamp, text = (lm.group(1), lm.group(2), lm.group(3)) if lm.group(1) else lm.group(4, 5, 6)
            clock = _clock(stamp) if stamp else clock
            out.append((label, [text or ""], day, clock))
        elif out:
            out[-1][1].append(line)  # a further line of the same message
    return [HistoryEntry(_role_of(label), label, "\n".join(lines), d, c) for label, lines, d, c in out]


def parse_history(history: str, profile: str | None = None) -> list[HistoryEntry]:
    """The messages of Observer history text as `format_messages` writes it (one thread's section).

    `profile` None detects it (`history_profile`). Text before the first message is ignored. The format is
    line-based, so a message line that itself looks like a message or date line (`User: …`) starts a new one.
    """
    profile = profile or history_profile(history)
    check_profile(profile)
    return _parse_m11(history) if profile == "m11" else _parse_m31(history)
