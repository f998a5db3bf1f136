"""Storage operations of Mastra's in-memory adapter (packages/core/src/storage/domains/memory/inmemory.ts) on
every backend (in-memory, SQLite file, Postgres when available)."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from om_core.records import BufferedChunk, ThreadMeta
from om_core.storage import InMemoryStorage, SQLiteStorage
from om_core.types import Message

T0 = datetime(2026, 3, 3, 9, 0, tzinfo=timezone.utc)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request, tmp_path):
    if request.param == "memory":
        yield InMemoryStorage()
    elif request.param == "sqlite":
        s = SQLiteStorage(tmp_path / "om.db")
        yield s
        s.close()
    else:
        from om_core.storage import PostgresStorage

        s = PostgresStorage(request.getfixturevalue("pg_dsn"), prefix=f"t{uuid.uuid4().hex[:8]}_")
        yield s
        s.drop_tables()
        s.close()


def msg(i: int, thread: str = "t1", role: str = "user", at: datetime | None = None) -> Message:
    return Message(id=f"m{i}", role=role, content=f"message {i}", created_at=at or T0 + timedelta(minutes=i),  # type: ignore[arg-type]
                   thread_id=thread, resource_id="r1")


def chunk(n: int, ids: list[int], tokens: int = 6000, text: str | None = None) -> BufferedChunk:
    return BufferedChunk(id=f"ombuf-{n}", cycle_id=f"c{n}", observations=text or f"* obs {n}", token_count=100 * n,
                         message_ids=tuple(f"m{i}" for i in ids), message_tokens=tokens,
                         last_observed_at=T0 + timedelta(minutes=max(ids), milliseconds=1), created_at=T0,
                         first_message_at=T0 + timedelta(minutes=min(ids)))


def init(store, key="thread:t1"):
    return store.initialize_record(lookup_key=key, scope="thread", resource_id="r1", thread_id="t1", now=T0)


def test_initialize_is_idempotent(store):
    a = init(store)
    b = init(store)
    assert a.id == b.id and a.generation_count == 0 and a.last_observed_at is None
    assert store.get_record("thread:t1") == a and store.get_record("thread:nope") is None


def test_buffer_then_activate_prefix(store):
    rec = init(store)
    store.save_thread(ThreadMeta("t1", "r1", T0, T0, current_task="old task"))
    for n in range(1, 6):
        assert store.append_buffered_chunk("thread:t1", chunk(n, [2 * n, 2 * n + 1]), last_buffered_at_tokens=6000 * n, now=T0)
    # same cycle again is a no-op; a chunk overlapping buffered messages is refused
    assert len(store.append_buffered_chunk("thread:t1", chunk(1, [2, 3]), last_buffered_at_tokens=1, now=T0)
               .buffered_observation_chunks) == 5
    assert store.append_buffered_chunk("thread:t1", replace(chunk(9, [3]), cycle_id="c9"),
                                       last_buffered_at_tokens=1, now=T0) is None
    res = store.swap_buffered_to_active(rec.id, activation_ratio=0.8, threshold=30_000, pending_tokens=31_000,
                                        force_max=False, now=T0, thread_id="t1")
    assert res.activated and res.chunk_count == 5 and res.message_tokens == 30_000
    head = store.get_record("thread:t1")
    assert head.buffered_observation_chunks == () and head.observation_token_count == 1500
    assert head.active_observations == "\n\n".join(f"* obs {n}" for n in range(1, 6))
    assert head.last_observed_at == T0 + timedelta(minutes=11, milliseconds=1)
    assert head.last_buffered_at_tokens == 0  # stale boundary reset: 1,000 left < half of 30,000
    assert store.get_thread("t1").current_task is None  # async chunks carry no hints: activation clears them


def test_second_activation_writes_a_boundary(store):
    rec = init(store)
    store.append_buffered_chunk("thread:t1", chunk(1, [1, 2]), last_buffered_at_tokens=6000, now=T0)
    store.append_buffered_chunk("thread:t1", chunk(2, [3, 4]), last_buffered_at_tokens=12000, now=T0)
    r1 = store.swap_buffered_to_active(rec.id, activation_ratio=0.8, threshold=30_000, pending_tokens=12_500,
                                       force_max=False, now=T0)
    assert r1.chunk_count == 1 and r1.choice == "under"  # target 6,500: 12,000 would leave only 500 raw
    r2 = store.swap_buffered_to_active(rec.id, activation_ratio=0.8, threshold=30_000, pending_tokens=12_500,
                                       force_max=False, now=T0)
    text = store.get_record("thread:t1").active_observations
    # the boundary is stamped with the newest message the activated chunk covers (its last_observed_at)
    assert r2.activated and text.startswith("* obs 1\n\n--- message boundary (2026-03-03T09:04:00.001Z) ---\n\n* obs 2")
    # a chunk whose messages are already observed is refused
    assert store.append_buffered_chunk("thread:t1", replace(chunk(3, [1]), cycle_id="c3"),
                                       last_buffered_at_tokens=1, now=T0) is None


def test_sync_update_is_compare_and_set_and_writes_thread_meta(store):
    rec = init(store)
    meta = ThreadMeta("t1", "r1", T0, T0, current_task="answer the user")
    new = store.update_active_observations(rec.id, observations="* a", token_count=3, last_observed_at=T0,
                                           now=T0, expected_last_observed_at=None, thread_metas=[meta],
                                           observed_message_ids=["m1"])
    assert new.active_observations == "* a" and new.pending_message_tokens == 0
    assert store.get_thread("t1").current_task == "answer the user"
    # a second writer that still believes nothing was observed is refused
    assert store.update_active_observations(rec.id, observations="* b", token_count=3, last_observed_at=T0,
                                            now=T0, expected_last_observed_at=None) is None
    assert store.get_record("thread:t1").active_observations == "* a"


def test_reflection_generation_keeps_history(store):
    rec = init(store)
    rec = store.update_active_observations(rec.id, observations="* a\n* b", token_count=10, last_observed_at=T0, now=T0)
    gen1 = store.create_reflection_generation(rec.id, reflection="* ab", token_count=4, now=T0 + timedelta(hours=1))
    assert gen1.generation_count == 1 and gen1.origin_type == "reflection" and gen1.last_observed_at == T0
    hist = store.history("thread:t1")
    assert [r.generation_count for r in hist] == [1, 0] and hist[1].active_observations == "* a\n* b"
    # the old generation is no longer the head: operations on it are refused
    assert store.create_reflection_generation(rec.id, reflection="x", token_count=1, now=T0) is None
    assert store.patch_record(rec.id, now=T0, is_observing=True) is None


def test_buffered_reflection_keeps_lines_added_meanwhile(store):
    rec = init(store)
    rec = store.update_active_observations(rec.id, observations="l1\nl2\nl3", token_count=9, last_observed_at=T0, now=T0)
    rec = store.update_buffered_reflection(rec.id, reflection="R12", token_count=2, input_tokens=6, line_count=2, now=T0)
    rec = store.update_active_observations(rec.id, observations="l1\nl2\nl3\nl4", token_count=12,
                                           last_observed_at=T0, now=T0)
    new = store.swap_buffered_reflection_to_active(rec.id, count_tokens=len, now=T0)
    assert new.active_observations == "R12\n\nl3\nl4" and new.observation_token_count == len("R12\n\nl3\nl4")
    old = store.history("thread:t1")[1]
    assert old.buffered_reflection is None and old.active_observations == "l1\nl2\nl3\nl4"


def test_failed_operation_rolls_back(store, monkeypatch):
    rec = init(store)
    store.save_thread(ThreadMeta("t1", "r1", T0, T0))
    store.append_buffered_chunk("thread:t1", chunk(1, [1]), last_buffered_at_tokens=6000, now=T0)

    def boom(meta):
        raise RuntimeError("disk full")

    monkeypatch.setattr(store, "_save_thread", boom)  # fails after the record was written in the same tx
    with pytest.raises(RuntimeError):
        store.swap_buffered_to_active(rec.id, activation_ratio=0.8, threshold=30_000, pending_tokens=7000,
                                      force_max=False, now=T0, thread_id="t1")
    head = store.get_record("thread:t1")
    assert len(head.buffered_observation_chunks) == 1 and head.active_observations == ""


def test_patch_record_rejects_unknown_fields(store):
    rec = init(store)
    with pytest.raises(ValueError, match="active_observations"):
        store.patch_record(rec.id, now=T0, active_observations="x")
    assert store.patch_record(rec.id, now=T0, is_buffering_observation=True).is_buffering_observation


def test_list_messages_paging(store):
    same = T0 + timedelta(minutes=30)
    msgs = [msg(i) for i in range(1, 6)] + [msg(6, thread="t2"), msg(7, at=same), msg(8, at=same)]
    store.add_messages(msgs)
    store.add_messages([replace(msgs[0], content="edited")])  # upsert keeps its place
    ids = lambda xs: [m.id for m in xs]  # noqa: E731
    assert ids(store.list_messages("r1", "t1")) == ["m1", "m2", "m3", "m4", "m5", "m7", "m8"]
    assert store.get_message("m1").content == "edited"
    assert ids(store.list_messages("r1")) == ["m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8"]
    assert ids(store.list_messages("r1", "t1", after=T0 + timedelta(minutes=2), limit=2)) == ["m3", "m4"]
    assert ids(store.list_messages("r1", "t1", before=T0 + timedelta(minutes=3))) == ["m1", "m2"]
    assert ids(store.list_messages("r1", "t1", cursor="m7")) == ["m8"]  # tie on created_at broken by order
    assert ids(store.list_messages("r1", "t1", cursor="m4", limit=2, direction="backward")) == ["m2", "m3"]
    with pytest.raises(ValueError, match="cursor"):
        store.list_messages("r1", cursor="missing")
    with pytest.raises(ValueError, match="thread_id"):
        store.add_messages([replace(msgs[0], id="x", thread_id=None)])


def test_export_import_roundtrip_across_backends(store, tmp_path):
    rec = init(store)
    store.save_thread(ThreadMeta("t1", "r1", T0, T0, suggested_response="ask about Pixel"))
    store.add_messages([msg(1), msg(2, role="assistant")])
    rec = store.update_active_observations(rec.id, observations="* a", token_count=2, last_observed_at=T0, now=T0)
    store.append_buffered_chunk("thread:t1", chunk(1, [2]), last_buffered_at_tokens=10, now=T0)
    store.create_reflection_generation(rec.id, reflection="* A", token_count=2, now=T0 + timedelta(hours=1))
    state = store.export_state("r1")
    import json

    state = json.loads(json.dumps(state))  # JSON-serialisable
    other = SQLiteStorage(tmp_path / "copy.db")
    other.import_state(state)
    assert other.export_state("r1") == state
    assert [r.generation_count for r in other.history("thread:t1")] == [1, 0]
    assert other.get_thread("t1").suggested_response == "ask about Pixel"
    assert [m.id for m in other.list_messages("r1")] == ["m1", "m2"]
    with pytest.raises(ValueError, match="version"):
        other.import_state({"version": 99})
    other.close()


def test_forget_resource_leaves_nothing_of_it_and_everything_of_others(store):
    rec = init(store)
    store.save_thread(ThreadMeta("t1", "r1", T0, T0))
    store.save_thread(ThreadMeta("u1", "r2", T0, T0))
    store.add_messages([msg(1), msg(2, role="assistant"), replace(msg(3), thread_id="u1", resource_id="r2")])
    store.update_active_observations(rec.id, observations="* a", token_count=2, last_observed_at=T0, now=T0)
    kept = store.export_state("r2")
    assert store.list_messages("r1") and store.get_record("thread:t1") is not None  # warms any read cache

    store.forget_resource("r1")

    assert store.export_state("r1")["records"] == [] and store.export_state("r1")["threads"] == []
    assert store.list_messages("r1") == [] and store.list_messages("r1", "t1") == []
    assert store.get_record("thread:t1") is None and store.get_thread("t1") is None
    assert store.export_state("r2") == kept and [m.id for m in store.list_messages("r2")] == ["m3"]


def test_import_state_replaces_everything_of_its_resource(store):
    """A snapshot restored over leftovers of an unfinished replay (threads and messages past the snapshot)
    leaves exactly the snapshot."""
    init(store)
    store.save_thread(ThreadMeta("t1", "r1", T0, T0))
    store.add_messages([msg(1)])
    snapshot = store.export_state("r1")
    store.add_messages([msg(2), replace(msg(3), thread_id="t9")])
    store.save_thread(ThreadMeta("t9", "r1", T0, T0))
    store.import_state(snapshot)
    assert store.export_state("r1") == snapshot
    assert [m.id for m in store.list_messages("r1")] == ["m1"] and store.get_thread("t9") is None


def test_sqlite_path_error(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        SQLiteStorage(tmp_path / "missing" / "om.db")


def test_sqlite_survives_reopen(tmp_path):
    path = tmp_path / "om.db"
    s = SQLiteStorage(path)
    rec = init(s)
    s.update_active_observations(rec.id, observations="* kept", token_count=2, last_observed_at=T0, now=T0)
    s.close()
    s2 = SQLiteStorage(path)
    assert s2.get_record("thread:t1").active_observations == "* kept"
    s2.close()


async def test_engine_gives_the_same_context_on_every_backend(store):
    """A short scripted run (buffering, activation, reflection) renders identically on this backend and in memory."""
    from om_core.config import OMConfig
    from om_core.testing import ScriptedObserver, ScriptedReflector, synthetic_turns
    from om_core.memory import ObservationalMemory

    cfg = OMConfig.from_dict({"observation": {"message_tokens": 2000}, "reflection": {"observation_tokens": 900}})
    rendered = []
    for backend in (store, InMemoryStorage()):
        om = ObservationalMemory(cfg, backend, ScriptedObserver(), ScriptedReflector())
        events = []
        for i, (at, user, reply) in enumerate(synthetic_turns(30, words=80)):
            events += (await om.prepare_turn("r1", "t1", [Message(f"u{i}", "user", user, at)], at)).events
            events += await om.finish_turn("r1", "t1", [Message(f"a{i}", "assistant", reply, at)], at)
            await om.wait_idle()
        ctx = await om.context("r1", "t1", at + timedelta(hours=1))
        rendered.append(([(m.role, m.content, m.key) for m in ctx.messages], ctx.generation))
        assert {"buffer", "activate"} <= set(events) and ctx.generation >= 1
    assert rendered[0] == rendered[1]


def test_message_to_dict_has_every_field_in_declaration_order_and_round_trips() -> None:
    from dataclasses import asdict, fields
    from datetime import datetime, timezone

    from om_core.records import iso, message_from_dict, message_to_dict
    from om_core.types import Message, ToolCall

    m = Message("m1", "assistant", "hi", datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc), thread_id="t",
                resource_id="r", tool_calls=(ToolCall(id="c1", name="lookup", args={"q": 1}, state="result", result="ok"),))
    d = message_to_dict(m)
    assert list(d) == [f.name for f in fields(Message)]
    assert d == {**asdict(m), "created_at": iso(m.created_at), "tool_calls": [asdict(tc) for tc in m.tool_calls]}
    assert message_from_dict(d) == m
