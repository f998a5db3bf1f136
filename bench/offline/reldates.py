"""Resolve common relative time phrases against a message date, for the offline Observer's `(meaning …)`.

Vague words ("recently", "soon", "a few days ago") are left alone, as the Observer rules ask.
"""

from __future__ import annotations

import calendar
import re
from datetime import date, timedelta
from typing import Callable

from om_core.formats import format_observation_date as fmt_date

from bench.offline.text import NUMBER_WORDS

WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_WD = "|".join(WEEKDAYS)
_NUM = r"\d+|" + "|".join(
    sorted((k for k in NUMBER_WORDS if k not in ("once", "twice", "thrice")), key=len, reverse=True))
_UNIT = r"day|week|month|year"


# The relative phrases, in priority order (at equal positions the earlier one wins); callbacks in _rules.
_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"\bthe day before yesterday\b",
    r"\byesterday\b",
    r"\btomorrow\b",
    rf"\b(last|this past|past) ({_WD})\b",
    rf"\bnext ({_WD})\b",
    rf"\bthis (?:coming )?({_WD})\b",
    r"\blast weekend\b",
    r"\bthis weekend\b",
    r"\blast week\b",
    r"\bnext week\b",
    r"\blast month\b",
    r"\bnext month\b",
    r"\blast year\b",
    r"\bnext year\b",
    rf"\b({_NUM}|a couple of)\s+({_UNIT})s?\s+ago\b",
    rf"\bin\s+({_NUM}|a couple of)\s+({_UNIT})s?\b",
))
# Any of them: one search rules out the (usual) text that has no relative phrase at all.
_ANY = re.compile("|".join(f"(?:{p.pattern})" for p in _PATTERNS), re.IGNORECASE)


def _shift_months(d: date, months: int) -> date:
    y, m = divmod(d.month - 1 + months, 12)
    year, month = d.year + y, m + 1
    return date(year, month, min(d.day, calendar.monthrange(year, month)[1]))


def _shift(d: date, n: int, unit: str) -> date:
    if unit == "day":
        return d + timedelta(days=n)
    if unit == "week":
        return d + timedelta(weeks=n)
    if unit == "month":
        return _shift_months(d, n)
    return _shift_months(d, 12 * n)


def _num(token: str) -> int:
    token = token.lower().replace("a couple of", "couple")
    return int(token) if token.isdigit() else NUMBER_WORDS.get(token, 1)


def _month_name(d: date) -> str:
    return f"{calendar.month_name[d.month]} {d.year}"


def _week_of(monday: date) -> str:
    return f"week of {fmt_date(monday)}"


def _rules(d: date) -> list[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]]:
    monday = d - timedelta(days=d.weekday())

    def last_wd(m: re.Match[str]) -> str:
        back = (d.weekday() - WEEKDAYS.index(m.group(2).lower())) % 7 or 7
        return fmt_date(d - timedelta(days=back))

    def next_wd(m: re.Match[str]) -> str:
        ahead = (WEEKDAYS.index(m.group(1).lower()) - d.weekday()) % 7 or 7
        return fmt_date(d + timedelta(days=ahead))

    def this_wd(m: re.Match[str]) -> str:
        ahead = (WEEKDAYS.index(m.group(1).lower()) - d.weekday()) % 7
        return fmt_date(d + timedelta(days=ahead))

    def last_weekend(_: re.Match[str]) -> str:
        sat = d - timedelta(days=(d.weekday() - 5) % 7)
        if d.weekday() >= 5:
            sat -= timedelta(days=7)
        return f"weekend of {fmt_date(sat)}"

    def this_weekend(_: re.Match[str]) -> str:
        # Saturday of this week (today's, when it is already the weekend)
        sat = d + timedelta(days=5 - d.weekday())
        return f"weekend of {fmt_date(sat)}"

    def ago(m: re.Match[str]) -> str:
        return fmt_date(_shift(d, -_num(m.group(1)), m.group(2).lower()))

    def ahead(m: re.Match[str]) -> str:
        return fmt_date(_shift(d, _num(m.group(1)), m.group(2).lower()))

    return list(zip(_PATTERNS, (
        lambda _: fmt_date(d - timedelta(days=2)),
        lambda _: fmt_date(d - timedelta(days=1)),
        lambda _: fmt_date(d + timedelta(days=1)),
        last_wd,
        next_wd,
        this_wd,
        last_weekend,
        this_weekend,
        lambda _: _week_of(monday - timedelta(days=7)),
        lambda _: _week_of(monday + timedelta(days=7)),
        lambda _: _month_name(_shift_months(d.replace(day=1), -1)),
        lambda _: _month_name(_shift_months(d.replace(day=1), 1)),
        lambda _: str(d.year - 1),
        lambda _: str(d.year + 1),
        ago,
        ahead,
    )))


def resolve_relative(text: str, when: date) -> str | None:
    """The date meant by the first relative phrase in `text`, e.g. 'Mar 2, 2026', or None."""
    if not _ANY.search(text):
        return None
    best: tuple[int, str] | None = None
    for pattern, fn in _rules(when):
        m = pattern.search(text)
        if m and (best is None or m.start() < best[0]):
            try:
                best = (m.start(), fn(m))
            except (ValueError, OverflowError):  # "7000 years ago", "in 10000000 days": no calendar date to write
                continue
    return best[1] if best else None
