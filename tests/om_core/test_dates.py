from datetime import date, datetime, timedelta, timezone

import pytest

from om_core.dates import (
    annotate_relative,
    format_relative_time,
    parse_observation_date,
    temporal_gap_marker,
    temporal_gap_text,
)

NOW = datetime(2023, 6, 20, 10, 18, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("May 30, 2023", date(2023, 5, 30)),
        ("May 30 2023", date(2023, 5, 30)),
        ("September 3, 2023", date(2023, 9, 3)),
        ("May 27-28, 2023", date(2023, 5, 27)),
        ("Feb 28-Mar 1, 2026", date(2026, 3, 1)),  # Mastra tries a plain "Mar 1, 2026" first
        ("late May 2023", date(2023, 5, 23)),
        ("early May 2023", date(2023, 5, 7)),
        ("mid May 2023", date(2023, 5, 15)),
        ("mid-May 2023", date(2023, 5, 15)),
        ("mid-to-late May 2023", date(2023, 5, 15)),
        ("late April to early May 2023", date(2023, 5, 7)),
        ("April to May 2023", date(2023, 5, 1)),
        ("the weekend of June 3, 2023", date(2023, 6, 3)),
        ("2023", None),
        ("Foo 3, 2023", None),
        ("Feb 30, 2023", None),
    ],
)
def test_parse_date_forms(text, expected):
    assert parse_observation_date(text) == expected


@pytest.mark.parametrize(
    "days_ago, wording",
    [
        (0, "today"), (1, "yesterday"), (2, "2 days ago"), (6, "6 days ago"), (7, "1 week ago"),
        (13, "1 week ago"), (14, "2 weeks ago"), (29, "4 weeks ago"), (30, "1 month ago"),
        (59, "1 month ago"), (60, "2 months ago"), (364, "12 months ago"), (365, "1 year ago"),
        (800, "2 years ago"),
        (-1, "tomorrow"), (-2, "in 2 days"), (-6, "in 6 days"), (-7, "in 1 week"), (-13, "in 1 week"),
        (-14, "in 2 weeks"), (-29, "in 4 weeks"), (-30, "in 1 month"), (-59, "in 1 month"),
        (-60, "in 2 months"), (-364, "in 12 months"), (-365, "in 1 year"), (-800, "in 2 years"),
    ],
)  # fmt: skip
def test_relative_wording(days_ago, wording):
    assert format_relative_time(NOW.date() - timedelta(days=days_ago), NOW) == wording


def test_relative_uses_calendar_days_for_datetimes():
    late_yesterday = datetime(2023, 6, 19, 23, 59, tzinfo=timezone.utc)
    assert format_relative_time(late_yesterday, NOW) == "yesterday"


def test_inline_dates_annotated():
    text = "* 🔴 (09:00) User went hiking. (meaning May 30, 2023)\n* 🔴 (09:05) Trip. (estimated late May 2023)"
    assert annotate_relative(text, NOW) == (
        "* 🔴 (09:00) User went hiking. (meaning May 30, 2023 - 3 weeks ago)\n"
        "* 🔴 (09:05) Trip. (estimated late May 2023 - 4 weeks ago)"
    )


@pytest.mark.parametrize(
    "phrase",
    ["will attend", "plans to visit", "planning to visit", "is looking forward to", "is going to",
     "intends to", "wants to", "needs to", "is about to"],
)  # fmt: skip
def test_future_intent_in_the_past_likely_happened(phrase):
    line = f"* 🔴 (09:00) User {phrase} the concert. (meaning June 1, 2023)"
    assert annotate_relative(line, NOW).endswith("(meaning June 1, 2023 - 2 weeks ago, likely already happened)")


def test_future_intent_only_when_past_and_only_before_the_date():
    future = "* 🔴 User will attend the concert. (meaning July 1, 2023)"
    assert annotate_relative(future, NOW).endswith("(meaning July 1, 2023 - in 1 week)")
    no_intent = "* 🔴 User attended the concert. (meaning June 1, 2023)"
    assert annotate_relative(no_intent, NOW).endswith("(meaning June 1, 2023 - 2 weeks ago)")
    other_line = "* 🔴 User will travel\n* 🔴 User attended. (meaning June 1, 2023)"
    assert "likely" not in annotate_relative(other_line, NOW)


def test_unparseable_inline_date_left_alone():
    text = "* User did it. (meaning sometime 2023)"
    assert annotate_relative(text, NOW) == text


def test_headers_and_gap_lines():
    text = "\n".join(
        [
            "Date: Jun 1, 2023", "* a",
            "Date: Jun 2, 2023", "* b",  # one day later: no gap line
            "Date: Jun 5, 2023", "* c",
            "Date: Jun 14, 2023", "* d",
            "Date: Jun 20, 2023", "* e",
        ]
    )  # fmt: skip
    assert annotate_relative(text, NOW) == "\n".join(
        [
            "Date: Jun 1, 2023 (2 weeks ago)", "* a",
            "Date: Jun 2, 2023 (2 weeks ago)", "* b",
            "", "[3 days later]", "", "Date: Jun 5, 2023 (2 weeks ago)", "* c",
            "", "[1 week later]", "", "Date: Jun 14, 2023 (6 days ago)", "* d",
            "", "[6 days later]", "", "Date: Jun 20, 2023 (today)", "* e",
        ]
    )  # fmt: skip


@pytest.mark.parametrize(
    "prev, gap",
    [(date(2023, 5, 29), "[3 weeks later]"), (date(2023, 5, 1), "[1 month later]"),
     (date(2023, 3, 1), "[3 months later]"), (date(2021, 6, 1), "[24 months later]")],
)  # fmt: skip
def test_longer_gaps(prev, gap):
    text = f"Date: {prev:%b} {prev.day}, {prev.year}\n* a\nDate: Jun 20, 2023\n* b"
    assert f"\n{gap}\n\nDate: Jun 20, 2023 (today)" in annotate_relative(text, NOW)


def test_previous_header_gives_gap_for_a_later_chunk():
    out = annotate_relative("Date: Jun 20, 2023\n* b", NOW, previous_header=date(2023, 6, 10))
    assert out == "\n[1 week later]\n\nDate: Jun 20, 2023 (today)\n* b"


def test_annotation_is_not_applied_twice():
    once = annotate_relative("Date: Jun 1, 2023\n* x (meaning May 30, 2023)", NOW)
    assert annotate_relative(once, NOW) == once


@pytest.mark.parametrize(
    "delta, text",
    [
        (timedelta(minutes=9, seconds=59), None),
        (timedelta(minutes=10), "10 minutes later"),
        (timedelta(minutes=59), "59 minutes later"),
        (timedelta(hours=1), "1 hour later"),
        (timedelta(hours=2, minutes=5), "2 hours 5 minutes later"),
        (timedelta(days=1), "1 day later"),
        (timedelta(days=3, hours=4), "3 days 4 hours later"),
        (timedelta(days=7), "1 week later"),
        (timedelta(days=16), "2 weeks 2 days later"),
        (timedelta(days=30), "1 month later"),
        (timedelta(days=75), "2 months 2 weeks later"),
        (timedelta(days=365), "1 year later"),
        (timedelta(days=800), "2 years 2 months later"),
    ],
)
def test_temporal_gap_text(delta, text):
    assert temporal_gap_text(NOW - delta, NOW) == text


def test_temporal_gap_marker():
    assert temporal_gap_marker(NOW - timedelta(hours=3), NOW) == "3 hours later — 06/20/2023, 10:18 AM UTC"
    tz = timezone(timedelta(hours=-7))
    assert temporal_gap_marker(NOW - timedelta(minutes=15), NOW, tz) == "15 minutes later — 06/20/2023, 3:18 AM GMT-7"
    with pytest.raises(ValueError, match="10 minutes"):
        temporal_gap_marker(NOW - timedelta(minutes=1), NOW)
    with pytest.raises(ValueError, match="aware"):
        temporal_gap_marker(datetime(2023, 1, 1), NOW)


# ---- fidelity with Mastra's date-utils.ts and temporal-markers.ts ----------------------------------------


def test_gap_lines_have_no_year_unit():
    # Mastra's gap lines use days/weeks/months only: two years apart reads "[24 months later]", never
    # "[2 years later]"
    out = annotate_relative("Date: Jun 1, 2021\n* a\nDate: Jun 20, 2023\n* b", NOW)
    assert "[24 months later]" in out and "year" not in out.split("\n")[3]


def test_gap_line_is_followed_by_a_blank_line():
    out = annotate_relative("Date: Jun 1, 2023\n* a\nDate: Jun 20, 2023\n* b", NOW)
    assert out == "Date: Jun 1, 2023 (2 weeks ago)\n* a\n\n[2 weeks later]\n\nDate: Jun 20, 2023 (today)\n* b"


@pytest.mark.parametrize("header, day", [("June 5, 2023", date(2023, 6, 5)), ("Sept 5, 2023", date(2023, 9, 5)),
                                         ("January 1, 2023", date(2023, 1, 1))])
def test_headers_with_full_month_names_are_annotated(header, day):
    out = annotate_relative(f"Date: {header}\n* a", NOW)
    assert out.startswith(f"Date: {header} ({format_relative_time(day, NOW)})")


def test_temporal_gap_marker_names_the_zone():
    from zoneinfo import ZoneInfo

    ny = temporal_gap_marker(NOW - timedelta(hours=1), NOW, ZoneInfo("America/New_York"))
    assert ny == "1 hour later — 06/20/2023, 6:18 AM EDT"
    india = temporal_gap_marker(NOW - timedelta(hours=1), NOW, timezone(timedelta(hours=5, minutes=30)))
    assert india.endswith("3:48 PM GMT+5:30")
