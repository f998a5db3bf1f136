from datetime import datetime, timedelta, timezone

from bench.data.schema import InstanceView, ViewSession, ViewTurn
from bench.replay import build_timeline

from tests.helpers.strategies import make_view


def test_pairs_times_and_dates():
    view = make_view([[("user", "u0"), ("assistant", "a0"), ("user", "u1"), ("assistant", "a1")], [("user", "v0")]])
    tl = build_timeline(view, turn_offset_s=5.0)
    assert [(t.user, t.assistant) for t in tl] == [("u0", "a0"), ("u1", "a1"), ("v0", None)]
    base = datetime(2023, 5, 1, 10, 0, tzinfo=timezone.utc)
    assert tl[1].user_at == base + timedelta(seconds=10) and tl[1].assistant_at == base + timedelta(seconds=15)
    assert tl[0].user_at.tzinfo is not None
    assert [t.first_in_session for t in tl] == [True, False, True]
    assert tl[2].thread_id == "s1" and tl[2].session_index == 1
    assert tl[2].date_str == "2023/05/02 (Tue) 10:00" == view.sessions[1].date_str


def test_leading_assistant_non_alternating_and_empty_turns():
    view = make_view([[("assistant", "hello"), ("user", "a"), ("user", "b"), ("assistant", "  "), ("assistant", "c")]])
    tl = build_timeline(view)
    assert [(t.user, t.assistant) for t in tl] == [(None, "hello"), ("a", None), ("b", "c")]
    # the empty turn is skipped, but offsets keep each message's index in the session
    assert tl[2].assistant_at - tl[0].user_at == timedelta(seconds=20)


def test_clock_never_runs_backwards_when_sessions_overlap():
    d = datetime(2023, 5, 1, 10, 0)
    long = tuple(ViewTurn("user" if k % 2 == 0 else "assistant", f"m{k}") for k in range(40))  # 195 s long
    view = InstanceView("q", d, "", (
        ViewSession("a", d, "2023/05/01 (Mon) 10:00", long),
        ViewSession("b", d + timedelta(minutes=1), "2023/05/01 (Mon) 10:01", (ViewTurn("user", "x"), ViewTurn("assistant", "y"))),
    ))
    tl = build_timeline(view, turn_offset_s=5.0)
    stamps = [s for t in tl for s in (t.user_at, t.assistant_at)]
    assert all(b > a for a, b in zip(stamps, stamps[1:]))
    assert tl[-1].user_at == tl[-2].assistant_at + timedelta(seconds=5)
