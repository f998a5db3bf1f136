"""Memoised rendering of observation chunks (`render_chunks`) and the Actor-side optimiser's fidelity."""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from om_core import context
from om_core.context import build_actor_context, message_boundary, optimize_observations, render_chunks

PHRASES = ["User will attend the concert", "User stated they moved", "User plans to visit Rome", "User asked  about [travel] x",
           "  * -> Assistant listed 3 hotels", "🟡 User might go hiking", "🟢 low detail", "✅ User confirmed done"]  # fmt: skip


def _observations(rng: random.Random, start: date) -> str:
    """A random multi-chunk observation log: date headers (sometimes far apart), inline dates, boundaries."""
    chunks, day = [], start
    for _ in range(rng.randint(1, 6)):
        lines = []
        for _ in range(rng.randint(1, 3)):
            day += timedelta(days=rng.choice([0, 1, 2, 9, 40, 400]))
            lines.append(f"Date: {day:%b} {day.day}, {day.year}")
            for _ in range(rng.randint(1, 4)):
                text = rng.choice(PHRASES)
                if rng.random() < 0.5:
                    ref = day + timedelta(days=rng.randint(-10, 30))
                    text += f". ({rng.choice(['meaning', 'estimated'])} {ref:%B} {ref.day}, {ref.year})"
                lines.append(f"* 🔴 ({rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}) {text}")
        chunks.append("\n".join(lines))
    ts = datetime(2024, 1, 1, tzinfo=timezone.utc)
    return "".join(c + (message_boundary(ts + timedelta(hours=i)) if i < len(chunks) - 1 else "") for i, c in enumerate(chunks))


def _nows(rng: random.Random, around: date) -> list[datetime]:
    base = datetime(around.year, around.month, around.day, tzinfo=timezone.utc)
    out = [base, base + timedelta(microseconds=1), base + timedelta(hours=23, minutes=59)]
    out += [base + timedelta(days=rng.randint(-30, 900), minutes=rng.randint(0, 1439)) for _ in range(5)]
    out.append(datetime(around.year, around.month, around.day, 0, 30, tzinfo=ZoneInfo("America/Los_Angeles")))
    return out


def test_memoised_rendering_is_byte_identical_to_unmemoised():
    rng = random.Random(11)
    context._TEXT_MEMO.clear()
    context._CHUNK_MEMO.clear()
    for _ in range(40):
        start = date(2023, rng.randint(1, 12), rng.randint(1, 28))
        text = _observations(rng, start)
        for now in _nows(rng, start + timedelta(days=rng.randint(0, 60))):
            plain = render_chunks(text, now, memo=False)
            assert render_chunks(text, now) == plain  # fills the memo
            assert render_chunks(text, now) == plain  # served from it
            grown = text + message_boundary(datetime(2025, 1, 1, tzinfo=timezone.utc)) + "Date: Feb 2, 2025\n* 🔴 x"
            assert render_chunks(grown, now) == render_chunks(grown, now, memo=False)  # old chunks from memo


def test_rendering_changes_with_the_day_and_at_midnight():
    text = "Date: Jun 1, 2023\n* 🔴 (09:00) User will attend the fair. (meaning Jun 2, 2023)"
    evening = datetime(2023, 6, 1, 23, 59, tzinfo=timezone.utc)
    midnight = datetime(2023, 6, 2, tzinfo=timezone.utc)
    just_after = midnight + timedelta(seconds=1)
    first = render_chunks(text, evening)
    assert first == ["Date: Jun 1, 2023 (today)\n* 🔴 (09:00) User will attend the fair. (meaning Jun 2, 2023 - tomorrow)"]
    at_midnight = render_chunks(text, midnight)
    assert at_midnight[0].startswith("Date: Jun 1, 2023 (yesterday)")
    assert at_midnight[0].endswith("(meaning Jun 2, 2023 - today)")  # not yet past at 00:00:00
    assert render_chunks(text, just_after)[0].endswith("(meaning Jun 2, 2023 - today, likely already happened)")
    assert render_chunks(text, evening) == first  # the earlier day's entry is still right for that day


def test_context_of_later_turns_uses_the_memo():
    text = "Date: Jun 1, 2023\n* 🔴 a" + message_boundary(datetime(2023, 6, 1, tzinfo=timezone.utc)) + "Date: Jun 9, 2023\n* b"
    now = datetime(2023, 6, 20, 8, tzinfo=timezone.utc)
    calls = []
    original = context._render_chunk
    context._TEXT_MEMO.clear()
    context._CHUNK_MEMO.clear()
    try:
        context._render_chunk = lambda *a: calls.append(a) or original(*a)  # type: ignore[assignment]
        for hour in range(5):
            build_actor_context(profile="m31", observations=text, now=now + timedelta(hours=hour))
        assert len(calls) == 2  # each chunk rendered once for the day
        build_actor_context(profile="m31", observations=text, now=now + timedelta(days=1))
        assert len(calls) == 4  # a new day renders again
    finally:
        context._render_chunk = original  # type: ignore[assignment]


@pytest.mark.parametrize(
    "raw, shown",
    [
        ("* 🔴 (09:14) User asked\n  * -> Assistant recommended A", "* 🔴 (09:14) User asked\n * Assistant recommended A"),
        ("* 🟡\n(09:00) x", "* (09:00) x"),  # the emoji goes with the whitespace after it
        ("step one\n-> step two", "step one step two"),  # an arrow swallows the surrounding whitespace
        ("* (09:00) trip [travel, plans]\n* next", "* (09:00) trip \n* next"),  # the space before a label stays
        ("see [the docs](http://x) and [12 items collapsed - ID: ab]", "see [the docs](http://x) and [12 items collapsed - ID: ab]"),
    ],
)  # fmt: skip
def test_optimizer_matches_mastra(raw, shown):
    assert optimize_observations(raw) == shown


def test_render_memo_is_bounded_by_size():
    lru = context._LRU(100)
    lru.put("a", 1, 60)
    lru.put("b", 2, 30)
    assert lru.get("a") == 1  # "a" is now the most recently used
    lru.put("c", 3, 30)  # 120 > 100: the least recently used entry goes
    assert lru.get("b") is None and lru.get("a") == 1 and lru.get("c") == 3
    lru.put("huge", 4, 500)  # bigger than the whole budget: kept nowhere
    assert lru.get("huge") is None and lru.get("a") is None
