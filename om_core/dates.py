"""The three-date model (mastra-ai/mastra, packages/memory/src/processors/observational-memory/date-utils.ts
and temporal-markers.ts).

Observations carry two dates written by the Observer: the message time `(14:30)` under a `Date:` header,
and, for relative references, a resolved end date `(meaning May 30, 2023)`. The third date, the age
relative to "now", is added only when observations are shown to the Actor (`annotate_relative`).
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta, timezone, tzinfo

from om_core.errors import InputError

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_FULL_MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
_VAGUE_DAY = {"early": 7, "mid": 15, "late": 23}

_M = r"\b([A-Za-z]{3,9})\.?"
_SAME_RANGE = re.compile(_M + r"\s+(\d{1,2})\s*[-–]\s*\d{1,2},?\s+(\d{4})")
_SIMPLE = re.compile(_M + r"\s+(\d{1,2}),?\s+(\d{4})")
# "mid-to-late May 2023" counts as its first modifier, as Mastra reads it
_VAGUE = re.compile(
    r"\b(early|mid|late)[- ]?(?:to[- ]?(?:early|mid|late)[- ]?)?([A-Za-z]{3,9})\.?\s+(\d{4})", re.IGNORECASE
)
_MONTH_SPAN = re.compile(
    _M + r"\s+(?:to|through|until|-|–)\s+(?:early\s+)?([A-Za-z]{3,9})\.?\s+(\d{4})", re.IGNORECASE
)

DATE_HEADER_PREFIX = "Date:"
_INLINE = re.compile(r"\((estimated|meaning)\s+([^()\n]*?\d{4})\)", re.IGNORECASE)
_HEADER = re.compile(r"^(Date:[ \t]*)([A-Z][a-z]+ \d{1,2}, \d{4})[ \t]*$", re.MULTILINE)
_FUTURE_INTENT = re.compile(
    r"\b(?:will\s+\w+|plans?\s+to|planning\s+to|looking\s+forward\s+to|going\s+to|intends?\s+to"
    r"|wants?\s+to|needs?\s+to|about\s+to)\b",
    re.IGNORECASE,
)


def _month(word: str) -> int | None:
    w = word.lower()
    if w in _FULL_MONTHS:
        return _FULL_MONTHS.index(w) + 1
    if w == "sept":
        return 9
    if w in _MONTHS:
        return _MONTHS.index(w) + 1
    return None


def _make(month_word: str, day: int, year: str) -> date | None:
    m = _month(month_word)
    if m is None:
        return None
    try:
        return date(int(year), m, day)
    except ValueError:
        return None


def parse_observation_date(text: str) -> date | None:
    """The calendar date an inline date expression points at, or None.

    Tried in Mastra's order: a plain "May 30, 2023" anywhere first (so "Feb 28-Mar 1, 2026" gives Mar 1),
    then "May 27-28, 2023" (first day), "early/mid/late May 2023" (7th/15th/23rd), and "April to May 2023"
    (1st of the second month).
    """
    for pattern in (_SIMPLE, _SAME_RANGE):
        for m in pattern.finditer(text):
            found = _make(m.group(1), int(m.group(2)), m.group(3))
            if found:
                return found
    for m in _VAGUE.finditer(text):
        found = _make(m.group(2), _VAGUE_DAY[m.group(1).lower()], m.group(3))
        if found:
            return found
    for m in _MONTH_SPAN.finditer(text):
        if _month(m.group(1)) is not None:
            found = _make(m.group(2), 1, m.group(3))
            if found:
                return found
    return None


def _day_of(value: date | datetime, now: datetime) -> date:
    if isinstance(value, datetime):
        if value.tzinfo is not None and now.tzinfo is not None:
            value = value.astimezone(now.tzinfo)
        return value.date()
    return value


def _days_between(value: date | datetime, now: datetime) -> int:
    """Whole calendar days from `value` to `now` (negative when `value` is in the future)."""
    return (now.date() - _day_of(value, now)).days


def _plural(n: int, unit: str) -> str:
    return f"{n} {unit}" if n == 1 else f"{n} {unit}s"


def format_relative_time(value: date | datetime, now: datetime) -> str:
    """'today', 'yesterday', '3 days ago', '2 weeks ago', 'in 1 month', ... (calendar days, floored)."""
    days = _days_between(value, now)
    if days < 0:
        ahead = -days
        if ahead == 1:
            return "tomorrow"
        if ahead < 7:
            return f"in {ahead} days"
        if ahead < 14:
            return "in 1 week"
        if ahead < 30:
            return f"in {ahead // 7} weeks"
        if ahead < 60:
            return "in 1 month"
        if ahead < 365:
            return f"in {ahead // 30} months"
        return f"in {_plural(ahead // 365, 'year')}"
    if days == 0:
        return "today"
    if days == 1:
        return "yesterday"
    if days < 7:
        return f"{days} days ago"
    if days < 14:
        return "1 week ago"
    if days < 30:
        return f"{days // 7} weeks ago"
    if days < 60:
        return "1 month ago"
    if days < 365:
        return f"{days // 30} months ago"
    return f"{_plural(days // 365, 'year')} ago"


def format_date_gap(prev: date, cur: date) -> str | None:
    """Gap line between two consecutive `Date:` headers, or None when they are at most a day apart."""
    days = (cur - prev).days
    if days <= 1:
        return None
    if days < 7:
        return f"[{days} days later]"
    if days < 14:
        return "[1 week later]"
    if days < 30:
        return f"[{days // 7} weeks later]"
    if days < 60:
        return "[1 month later]"
    return f"[{days // 30} months later]"  # no year unit: "[14 months later]"


def _is_past(d: date, now: datetime) -> bool:
    return datetime.combine(d, time(0), tzinfo=now.tzinfo) < now


def _annotate_inline(text: str, now: datetime) -> str:
    def repl(m: re.Match[str]) -> str:
        target = parse_observation_date(m.group(2))
        if target is None:
            return m.group(0)
        note = f"{m.group(1)} {m.group(2)} - {format_relative_time(target, now)}"
        line_start = text.rfind("\n", 0, m.start()) + 1
        if _is_past(target, now) and _FUTURE_INTENT.search(text[line_start : m.start()]):
            note += ", likely already happened"
        return f"({note})"

    return _INLINE.sub(repl, text)


def annotate_relative(observations: str, now: datetime, *, previous_header: date | None = None) -> str:
    """Add the third date: relative ages on inline dates and `Date:` headers, and gap lines between headers.

    `previous_header` is the date of the last header before this text (when annotating a later chunk
    on its own), so the gap line before its first header matches whole-text annotation.
    """
    text = _annotate_inline(observations, now)
    out: list[str] = []
    last = 0
    prev = previous_header
    for m in _HEADER.finditer(text):
        d = _header_date(m.group(2))
        if d is None:
            continue
        out.append(text[last : m.start()])
        gap = format_date_gap(prev, d) if prev is not None else None
        if gap:
            out.append(f"\n{gap}\n\n")
        out.append(f"{m.group(1)}{m.group(2)} ({format_relative_time(d, now)})")
        last = m.end()
        prev = d
    out.append(text[last:])
    return "".join(out)


def format_observation_date(day: date | datetime) -> str:
    """A date as observations write it, in `Date:` headers and `(meaning …)` notes: `Mar 3, 2026`."""
    return f"{_MONTHS[day.month - 1].title()} {day.day}, {day.year}"


def format_date_header(day: date | datetime) -> str:
    """The line that opens a date's observations: `Date: Mar 3, 2026` (what `annotate_relative` reads)."""
    return f"{DATE_HEADER_PREFIX} {format_observation_date(day)}"


def format_meaning(when: str) -> str:
    """The note after an observation that resolves a relative time: `(meaning Mar 2, 2026)`; `when` ends
    with a year so that `annotate_relative` can add its age."""
    return f"(meaning {when})"


def last_header_date(observations: str) -> date | None:
    """Date of the last `Date: Mon D, YYYY` header in un-annotated observation text, if any."""
    found: date | None = None
    for m in _HEADER.finditer(observations):
        found = _header_date(m.group(2)) or found
    return found


def _header_date(text: str) -> date | None:
    """`Mon D, YYYY` of a header; full month names ("June 5, 2023") and "Sept" parse too."""
    month, day, year = text.replace(",", "").split()
    return _make(month, int(day), year)


TEMPORAL_GAP_MIN = timedelta(minutes=10)


def temporal_gap_text(prev: datetime, now: datetime) -> str | None:
    """'25 minutes later', '2 hours 5 minutes later', '3 days later', ...; None under 10 minutes."""
    try:
        delta = now - prev
    except TypeError as exc:
        raise InputError("temporal_gap_text needs two aware (or two naive) datetimes") from exc
    if delta < TEMPORAL_GAP_MIN:
        return None
    minutes = int(delta.total_seconds() // 60)
    if minutes < 60:
        return f"{_plural(minutes, 'minute')} later"
    hours = minutes // 60
    if hours < 24:
        parts = [_plural(hours, "hour")] + ([_plural(minutes % 60, "minute")] if minutes % 60 else [])
    else:
        days = hours // 24
        if days < 7:
            parts = [_plural(days, "day")] + ([_plural(hours % 24, "hour")] if hours % 24 else [])
        elif days < 30:
            parts = [_plural(days // 7, "week")] + ([_plural(days % 7, "day")] if days % 7 else [])
        elif days < 365:
            weeks = (days % 30) // 7
            parts = [_plural(days // 30, "month")] + ([_plural(weeks, "week")] if weeks else [])
        else:
            months = (days % 365) // 30
            parts = [_plural(days // 365, "year")] + ([_plural(months, "month")] if months else [])
    return " ".join(parts) + " later"


def temporal_gap_marker(prev: datetime, now: datetime, tz: tzinfo = timezone.utc) -> str:
    """Text of a temporal-gap reminder: '<gap> — MM/DD/YYYY, h:mm AM TZ' (now, shown in `tz`)."""
    if prev.tzinfo is None or now.tzinfo is None:
        raise InputError("temporal_gap_marker needs timezone-aware datetimes")
    gap = temporal_gap_text(prev, now)
    if gap is None:
        raise InputError("no temporal gap marker for gaps under 10 minutes (check temporal_gap_text first)")
    local = now.astimezone(tz)
    return f"{gap} — {local:%m/%d/%Y}, {clock_12h(local)} {short_zone_name(local)}"


def short_zone_name(moment: datetime) -> str:
    """Short zone label of an aware datetime: its abbreviation ('UTC', 'EST'), else 'GMT+5' / 'GMT-3:30'."""
    name = moment.tzname() or ""
    if name.isalpha():
        return name
    offset = moment.utcoffset() or timedelta(0)
    minutes = int(offset.total_seconds() // 60)
    if minutes == 0:
        return "GMT"
    sign, minutes = ("+" if minutes > 0 else "-"), abs(minutes)
    return f"GMT{sign}{minutes // 60}" + (f":{minutes % 60:02d}" if minutes % 60 else "")


def clock_12h(moment: datetime) -> str:
    """'9:05 AM' style time (no leading zero on the hour)."""
    hour = moment.hour % 12 or 12
    return f"{hour}:{moment.minute:02d} {'AM' if moment.hour < 12 else 'PM'}"
