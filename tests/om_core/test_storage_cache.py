"""SQLite read cache: unchanged rows are read once, while other connections' commits, own writes and
rolled-back transactions are always seen correctly."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest

from om_core.records import ThreadMeta
from om_core.storage import SQLiteStorage
from om_core.types import Message

T0 = datetime(2026, 3, 3, 9, 0, tzinfo=timezone.utc)


def msg(i: int, thread: str = "t1") -> Message:
    return Message(f"{thread}-m{i}", "user", f"hello {i}", T0 + timedelta(minutes=i), thread_id=thread, resource_id="r")


def count_selects(storage: SQLiteStorage) -> Counter:
    seen: Counter = Counter()
    original = storage._exec

    def spy(sql, params=()):
        if sql.startswith("SELECT") and "MAX(seq)" not in sql:
            seen[sql.split("FROM ")[1].split()[0]] += 1
        return original(sql, params)

    storage._exec = spy  # type: ignore[method-assign]
    return seen


def setup(s: SQLiteStorage) -> str:
    s.save_thread(ThreadMeta("t1", "r", T0, T0))
    s.add_messages([msg(0), msg(1)])
    return s.initialize_record(lookup_key="thread:t1", scope="thread", resource_id="r", thread_id="t1", now=T0).id


def test_unchanged_rows_are_read_once_and_writes_are_seen():
    s = SQLiteStorage(":memory:")
    rid = setup(s)
    selects = count_selects(s)
    for _ in range(5):
        assert s.get_record("thread:t1").id == rid
        assert [m.id for m in s.list_messages("r", "t1")] == ["t1-m0", "t1-m1"]
        assert s.get_thread("t1").thread_id == "t1" and len(s.list_threads("r")) == 1
    assert selects == {"om_records": 1, "om_messages": 1, "om_threads": 2}
    s.add_messages([msg(2)])
    assert [m.id for m in s.list_messages("r", "t1")][-1] == "t1-m2"
    assert [m.id for m in s.list_messages("r")][-1] == "t1-m2"  # the resource-wide list is refreshed too
    s.update_active_observations(rid, observations="* x", token_count=3, last_observed_at=T0, now=T0)
    assert s.get_record("thread:t1").active_observations == "* x"
    s.save_thread(ThreadMeta("t1", "r", T0, T0, current_task="task"))
    assert s.get_thread("t1").current_task == "task" and s.list_threads("r")[0].current_task == "task"


def test_returned_lists_can_be_mutated_safely():
    s = SQLiteStorage(":memory:")
    setup(s)
    s.list_messages("r", "t1").clear()
    s.list_threads("r").clear()
    assert len(s.list_messages("r", "t1")) == 2 and len(s.list_threads("r")) == 1


def test_commits_of_another_connection_are_seen(tmp_path):
    a = SQLiteStorage(tmp_path / "om.db")
    rid = setup(a)
    b = SQLiteStorage(tmp_path / "om.db")
    assert a.get_record("thread:t1").active_observations == ""
    assert len(a.list_messages("r", "t1")) == 2
    with a.reading():  # grouped reads check once
        assert a.get_thread("t1").current_task is None
    b.update_active_observations(rid, observations="* from b", token_count=4, last_observed_at=T0, now=T0)
    b.add_messages([msg(5)])
    b.save_thread(ThreadMeta("t1", "r", T0, T0, current_task="from b"))
    assert a.get_record("thread:t1").active_observations == "* from b"
    assert [m.id for m in a.list_messages("r", "t1")][-1] == "t1-m5"
    assert a.get_thread("t1").current_task == "from b"


def test_a_rolled_back_transaction_leaves_no_cached_trace():
    s = SQLiteStorage(":memory:")
    rid = setup(s)
    before = s.get_record("thread:t1")
    with pytest.raises(RuntimeError):
        with s._tx():
            s.update_active_observations(rid, observations="* lost", token_count=1, last_observed_at=T0, now=T0)
            s.add_messages([msg(9)])
            assert s.get_record("thread:t1").active_observations == "* lost"  # read inside the transaction
            assert len(s.list_messages("r", "t1")) == 3
            raise RuntimeError("abort")
    assert s.get_record("thread:t1") == before
    assert [m.id for m in s.list_messages("r", "t1")] == ["t1-m0", "t1-m1"]


@pytest.mark.parametrize("backend", ["sqlite", "memory"])
def test_list_unobserved_is_each_threads_tail_after_last_observed_at_and_follows_writes(tmp_path, backend):
    from om_core.storage import InMemoryStorage

    s = SQLiteStorage(tmp_path / "om.db") if backend == "sqlite" else InMemoryStorage()
    s.save_thread(ThreadMeta("t1", "r", T0, T0, last_observed_at=T0 + timedelta(minutes=1)))
    s.save_thread(ThreadMeta("t2", "r", T0 + timedelta(seconds=1), T0))
    s.add_messages([msg(0), msg(1), msg(2), msg(0, "t2")])

    def view():
        return [(t.thread_id, [m.id for m in ms]) for t, ms in s.list_unobserved("r")]

    want = [(t.thread_id, [m.id for m in s.list_messages("r", t.thread_id, after=t.last_observed_at)])
            for t in s.list_threads("r")]
    want = [(tid, ids) for tid, ids in want if ids]  # only threads with unobserved messages
    assert view() == want == [("t1", ["t1-m2"]), ("t2", ["t2-m0"])]
    if backend == "sqlite":
        selects = count_selects(s)
        assert view() == want and view() == want
        assert not selects  # served from the read cache
    s.add_messages([msg(3)])  # a new message is seen
    assert view() == [("t1", ["t1-m2", "t1-m3"]), ("t2", ["t2-m0"])]
    s.save_thread(ThreadMeta("t2", "r", T0 + timedelta(seconds=1), T0, last_observed_at=T0 + timedelta(minutes=5)))
    assert view() == [("t1", ["t1-m2", "t1-m3"])]  # so is a thread observed (and left out once empty)
    s.save_thread(ThreadMeta("t3", "r", T0 + timedelta(seconds=2), T0))
    s.add_messages([msg(4, "t3")])
    assert view() == [("t1", ["t1-m2", "t1-m3"]), ("t3", ["t3-m4"])]  # a new thread, in list_threads order
    if backend == "sqlite":
        other = SQLiteStorage(tmp_path / "om.db")
        other.add_messages([msg(7, "t2")])  # another connection's commit too
        assert view() == [("t1", ["t1-m2", "t1-m3"]), ("t2", ["t2-m7"]), ("t3", ["t3-m4"])]
        with pytest.raises(RuntimeError):
            with s._tx():  # a rolled-back write leaves no trace in the kept view
                s.add_messages([msg(8, "t3")])
                assert view()[-1] == ("t3", ["t3-m4", "t3-m8"])
                raise RuntimeError("abort")
        assert view()[-1] == ("t3", ["t3-m4"])
        s.save_thread(ThreadMeta("t3", "r2", T0 + timedelta(seconds=2), T0))  # a thread moved to another resource
        assert [tid for tid, _ in view()] == ["t1", "t2"]
