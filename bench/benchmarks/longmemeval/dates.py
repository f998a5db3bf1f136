"""LongMemEval timestamps, `YYYY/MM/DD (Ddd) HH:MM`, parsed and written without the locale (`%a` depends on it).

Several public LongMemEval forks and harness fixtures write ISO-8601 instead (`2023-05-30T23:40:00`); those
are accepted by `parse_any_date` and reported as non-official (the loader notes them; `ombench data check`
shows the note), never silently.
"""

from __future__ import annotations

import re
from datetime import datetime

WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")  # datetime.weekday() order
_DATE_RE = re.compile(r"^(\d{4})/(\d{2})/(\d{2}) \(([A-Za-z]{3})\) (\d{2}):(\d{2})$")


def parse_lme_date(text: str) -> datetime:
    """Naive datetime of a LongMemEval stamp; ValueError (with the reason) when malformed.

    The weekday must agree with the date: it always does in the official files, so a mismatch means a
    hand-edited or mis-generated stamp.
    """
    m = _DATE_RE.match(text)
    if not m:
        raise ValueError(f"{text!r} is not in the form 'YYYY/MM/DD (Ddd) HH:MM'")
    year, month, day, wd, hour, minute = m.groups()
    try:
        dt = datetime(int(year), int(month), int(day), int(hour), int(minute))
    except ValueError as exc:
        raise ValueError(f"{text!r} is not a real date/time ({exc})") from None
    if wd.capitalize() != WEEKDAYS[dt.weekday()]:
        raise ValueError(f"{text!r}: {dt:%Y/%m/%d} is a {WEEKDAYS[dt.weekday()]}, not a {wd}")
    return dt


def format_lme_date(dt: datetime) -> str:
    return f"{dt.year:04d}/{dt.month:02d}/{dt.day:02d} ({WEEKDAYS[dt.weekday()]}) {dt.hour:02d}:{dt.minute:02d}"


def parse_iso_date(text: str) -> datetime:
    """Naive wall-clock datetime of an ISO-8601 stamp (`2023-05-30`, `2023-05-30T23:40[:00][Z|+02:00]`): an
    offset is dropped, the time stays as written (LongMemEval stamps carry no zone). ValueError otherwise."""
    if not text[:4].isdigit() or text[4:5] != "-":
        raise ValueError(f"{text!r} is not an ISO-8601 date")
    dt = datetime.fromisoformat(text.strip())
    return dt.replace(tzinfo=None, second=0, microsecond=0)


def parse_any_date(text: str) -> tuple[datetime, bool]:
    """(datetime, official?) of a LongMemEval stamp, or of an ISO-8601 one (official=False). ValueError naming
    the official format when neither parses."""
    try:
        return parse_lme_date(text), True
    except ValueError as official_error:
        try:
            return parse_iso_date(text), False
        except ValueError:
            raise official_error from None
