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


def test_the_kept_unobserved_view_and_message_order_equal_a_fresh_read_after_any_writes(tmp_path):
    """Writes are applied to the kept view without reading back (new rows appended to their thread's tail, the
    largest seq kept): after every one of 400 random writes (new messages at equal or earlier instants, upserts
    of stored ids into other threads and resources, threads observed, moved, created) the writer's
    `list_unobserved` and `list_messages` equal what a second connection reads from the file from scratch."""
    import random

    rng = random.Random(7)
    path = tmp_path / "om.db"
    writer = SQLiteStorage(path)
    threads = {f"t{i}": ("r" if i < 4 else "r2") for i in range(6)}
    for i, (tid, rid) in enumerate(threads.items()):
        writer.save_thread(ThreadMeta(tid, rid, T0 + timedelta(seconds=i), T0))
    ids: list[str] = []
    clock = 0

    def snapshot(s: SQLiteStorage, rid: str) -> tuple:
        view = [(t.thread_id, t.last_observed_at, [m.id for m in ms]) for t, ms in s.list_unobserved(rid)]
        per_thread = [(tid, [m.id for m in s.list_messages(rid, tid)]) for tid in sorted(threads)]
        return view, [(m.id, m.thread_id, m.content) for m in s.list_messages(rid)], per_thread

    for step in range(400):
        kind = rng.random()
        tid = rng.choice(sorted(threads))
        if kind < 0.6:  # new messages, now or at an earlier or equal instant
            batch = []
            for _ in range(rng.randint(1, 3)):
                clock += rng.choice([0, 0, 1, 1, 1, -3])
                mid = f"m{len(ids)}"
                ids.append(mid)
                batch.append(Message(mid, "user", f"text {step}", T0 + timedelta(minutes=clock),
                                     thread_id=tid, resource_id=threads[tid]))
            writer.add_messages(batch)
        elif kind < 0.75 and ids:  # an upsert of a stored id, maybe into another thread
            mid = rng.choice(ids)
            writer.add_messages([Message(mid, "assistant", f"again {step}", T0 + timedelta(minutes=rng.randint(-9, abs(clock) + 1)),
                                         thread_id=tid, resource_id=threads[tid])])
        elif kind < 0.9:  # the thread observed up to some instant (or not at all)
            seen = None if rng.random() < 0.2 else T0 + timedelta(minutes=rng.randint(-9, abs(clock) + 1))
            writer.save_thread(ThreadMeta(tid, threads[tid], T0 + timedelta(seconds=int(tid[1:])), T0,
                                          last_observed_at=seen))
        else:  # the thread moves to the other resource
            threads[tid] = "r2" if threads[tid] == "r" else "r"
            writer.save_thread(ThreadMeta(tid, threads[tid], T0 + timedelta(seconds=int(tid[1:])), T0))
        fresh = SQLiteStorage(path)
        for rid in ("r", "r2"):
            assert snapshot(writer, rid) == snapshot(fresh, rid), f"step {step}"
        fresh.close()


def test_a_new_message_is_not_read_back_after_it_is_written():
    s = SQLiteStorage(":memory:")
    s.save_thread(ThreadMeta("t1", "r", T0, T0))
    s.add_messages([msg(0)])
    assert [m.id for _, ms in s.list_unobserved("r") for m in ms] == ["t1-m0"]
    selects = count_selects(s)
    for i in range(1, 6):
        s.add_messages([msg(i)])
        assert [m.id for _, ms in s.list_unobserved("r") for m in ms] == [f"t1-m{j}" for j in range(i + 1)]
    assert not selects  # neither the message rows nor the largest seq
