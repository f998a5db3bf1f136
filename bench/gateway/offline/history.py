"""Read the Observer's `## New Message History to Observe` section back into dated messages.

Understands both formats om_core writes (spec om.md §3.2):
  m11: `**User (Jan 5, 2026, 2:30 PM):**\\n<content>` blocks joined by `\\n\\n---\\n\\n`
  m31: `Mar 3 2026:` date headers, `User (9:12 AM): text` lines, the time only when it changes
and the multi-thread wrapper `<thread id="…">…</thread>` (§3.6).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime

HISTORY_HEADER = "## New Message History to Observe"
TASK_HEADER = "## Your Task"

_MONTHS = {m: i + 1 for i, m in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"])}
_DATE_RE = re.compile(r"([A-Za-z]{3,9})\.?\s+(\d{1,2}),?\s+(\d{4})")
_ISO_RE = re.compile(r"(\d{4})[-/](\d{1,2})[-/](\d{1,2})")
_TIME_RE = re.compile(r"(\d{1,2}):(\d{2})(?::\d{2})?\s*([AaPp][Mm])?")
_M11_HEAD = re.compile(r"^\*\*([A-Za-z][^*\n(]*?)\s*\(([^)\n]*)\):\*\*[ \t]*\n?", re.M)
_M31_DATE = re.compile(r"^([A-Z][a-z]{2,8})\.? (\d{1,2}),? (\d{4}):\s*$")
_M31_LINE = re.compile(
    r"^(User|Assistant|System|Reasoning|Tool (?:Call|Result|Error|Denied) [^\s(:]+)(?: \(([^)\n]*)\))?: ?(.*)$")
_THREAD_RE = re.compile(r"<thread id=\"([^\"]*)\">(.*?)</thread>", re.S)
_SEPARATOR = re.compile(r"\n*-{3,}\s*$")


@dataclass
class HistMessage:
    role: str  # user | assistant | tool | system | reasoning
    label: str  # the role label as written ("Tool Call search")
    text: str
    day: date | None
    minute: tuple[int, int] | None  # (hour, minute), 24h


def history_section(prompt: str) -> str:
    """The text between the history header and `## Your Task` (if that follows); else the whole prompt."""
    i = prompt.rfind(HISTORY_HEADER)
    if i < 0:
        return prompt.strip()
    rest = prompt[i + len(HISTORY_HEADER):]
    j = rest.find(TASK_HEADER)
    return (rest[:j] if j >= 0 else rest).strip()


def parse_day(text: str) -> date | None:
    m = _DATE_RE.search(text)
    if m and m.group(1)[:3].lower() in _MONTHS:
        try:
            return date(int(m.group(3)), _MONTHS[m.group(1)[:3].lower()], int(m.group(2)))
        except ValueError:
            return None
    m = _ISO_RE.search(text)
    if m:
        try:
            return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            return None
    return None


def parse_time(text: str) -> tuple[int, int] | None:
    m = _TIME_RE.search(text)
    if not m:
        return None
    h, mi, ampm = int(m.group(1)), int(m.group(2)), (m.group(3) or "").lower()
    if ampm == "pm" and h < 12:
        h += 12
    if ampm == "am" and h == 12:
        h = 0
    return (h % 24, mi % 60)


def _role_of(label: str) -> str:
    low = label.lower()
    if low.startswith("tool"):
        return "tool"
    for r in ("user", "assistant", "system", "reasoning"):
        if low.startswith(r):
            return r
    return "user"


def detect_profile(history: str) -> str:
    return "m11" if _M11_HEAD.search(history) else "m31"


def split_threads(history: str) -> list[tuple[str | None, str]]:
    threads = _THREAD_RE.findall(history)
    return [(tid, body.strip()) for tid, body in threads] if threads else [(None, history)]


def _parse_m11(history: str) -> list[HistMessage]:
    heads = list(_M11_HEAD.finditer(history))
    out: list[HistMessage] = []
    for k, h in enumerate(heads):
        end = heads[k + 1].start() if k + 1 < len(heads) else len(history)
        body = history[h.end():end].strip()
        body = _SEPARATOR.sub("", body).strip()  # the separator before the next block
        stamp = h.group(2)
        # the time is after the date ("Jan 5, 2026, 2:30 PM"); search after the year to skip day numbers
        ym = _DATE_RE.search(stamp)
        minute = parse_time(stamp[ym.end():] if ym else stamp)
        out.append(HistMessage(_role_of(h.group(1)), h.group(1).strip(), body, parse_day(stamp), minute))
    return out


def _parse_m31(history: str) -> list[HistMessage]:
    out: list[HistMessage] = []
    day: date | None = None
    minute: tuple[int, int] | None = None
    for line in history.splitlines():
        dm = _M31_DATE.match(line.strip())
        if dm:
            day = parse_day(line)
            continue
        lm = _M31_LINE.match(line)
        if lm:
            if lm.group(2):
                minute = parse_time(lm.group(2)) or minute
            out.append(HistMessage(_role_of(lm.group(1)), lm.group(1), lm.group(3), day, minute))
        elif out and line.strip():
            out[-1].text += "\n" + line
        elif out:
            out[-1].text += "\n"
    for m in out:
        m.text = m.text.strip()
    return out


def parse_history(history: str, profile: str | None = None) -> list[HistMessage]:
    profile = profile or detect_profile(history)
    msgs = _parse_m11(history) if profile == "m11" else _parse_m31(history)
    if not msgs and history.strip():
        # unknown layout: treat every paragraph as a user message so the log is still useful
        msgs = [HistMessage("user", "User", p.strip(), None, None) for p in history.split("\n\n") if p.strip()]
    return msgs


def datetime_of(m: HistMessage) -> datetime | None:
    if m.day is None:
        return None
    h, mi = m.minute or (0, 0)
    return datetime(m.day.year, m.day.month, m.day.day, h, mi)
