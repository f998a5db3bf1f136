"""Resource scope (Mastra's observation-strategies/resource-scoped.ts): one record per resource, observations
attributed to their thread."""

from __future__ import annotations

import re
from collections import Counter
from datetime import timedelta

import pytest

from om_core.config import OMConfig, ObservationConfig, ReflectionConfig
from om_core.testing import ScriptedObserver, ScriptedReflector, synthetic_turns
from om_core.memory import ObservationalMemory
from om_core.scopes import obscure_thread_id
from om_core.storage import SQLiteStorage
from om_core.types import Message

MID = re.compile(r"\bmid\d{5}\b")
SECTION = re.compile(r'<thread id="([^"]+)">\n(.*?)\n</thread>', re.DOTALL)
THREADS = ("session-alpha", "session-beta", "session-gamma")


async def test_three_threads_each_observation_in_its_own_section(tmp_path):
    cfg = OMConfig(scope="resource", obscure_thread_ids=True,
                   observation=ObservationConfig(message_tokens=2500, max_tokens_per_batch=1000),
                   reflection=ReflectionConfig(observation_tokens=1_000_000))
    observer = ScriptedObserver()
    om = ObservationalMemory(cfg, SQLiteStorage(tmp_path / "om.db"), observer, ScriptedReflector())
    owner: dict[str, str] = {}
    saw_other_block = False
    observes = 0
    turns = synthetic_turns(60, words=90, turns_per_day=60, minutes_between=3)
    for i, (at, user, assistant) in enumerate(turns):
        tid = THREADS[(i // 3) % 3]  # three turns per thread, then the next thread
        u = Message(f"u{i}", "user", user, at)
        a = Message(f"a{i}", "assistant", assistant, at + timedelta(seconds=20))
        owner[MID.match(user).group(0)] = owner[MID.match(assistant).group(0)] = tid
        ctx = await om.prepare_turn("person-1", tid, [u], at)
        observes += ctx.events.count("observe")
        other = [m for m in ctx.messages if m.key == "om:other"]
        if other:
            saw_other_block = True
            assert "<other-conversation" in other[0].content and tid not in other[0].content  # ids obscured
        observes += (await om.finish_turn("person-1", tid, [a], at + timedelta(seconds=20))).count("observe")

    rec = om.record("person-1", THREADS[0])
    assert rec.lookup_key == "resource:person-1" and rec.thread_id is None
    assert om.record("person-1", THREADS[2]).id == rec.id  # one record for the whole resource
    assert observes >= 3 and saw_other_block
    assert len(observer.calls) > observes  # threads were split into parallel batches
    shown = {obscure_thread_id(t): t for t in THREADS}
    seen: Counter[str] = Counter()
    sections = SECTION.findall(rec.active_observations)
    assert {s for s, _ in sections} == set(shown)
    for display, body in sections:
        for mid in MID.findall(body):
            assert owner[mid] == shown[display], (mid, display)
            seen[mid] += 1
    assert seen and max(seen.values()) == 1  # nothing observed twice
    assert MID.findall(rec.active_observations) == [m for _, b in sections for m in MID.findall(b)]  # all inside sections
    # per-thread cursors: every message up to a thread's cursor is observed, none after it
    for tid in THREADS:
        cursor = om.storage.get_thread(tid).last_observed_at
        for m in om.storage.list_messages("person-1", tid):
            mid = MID.match(m.content).group(0)
            assert (seen[mid] == 1) == (cursor is not None and m.created_at <= cursor), mid


async def test_other_threads_count_toward_pending(tmp_path):
    cfg = OMConfig(scope="resource", observation=ObservationConfig(message_tokens=50_000))
    om = ObservationalMemory(cfg, SQLiteStorage(tmp_path / "om.db"), ScriptedObserver(), ScriptedReflector())
    turns = synthetic_turns(2, words=200)
    (t1, u1, _), (t2, u2, _) = turns
    first = await om.prepare_turn("p", "a", [Message("x1", "user", u1, t1)], t1)
    second = await om.prepare_turn("p", "b", [Message("x2", "user", u2, t2)], t2)
    own = om.tokens.total([Message("x2", "user", u2, t2)])
    assert second.pending_tokens > own  # thread a's unobserved message is part of b's pending tokens
    assert first.pending_tokens < second.pending_tokens
    assert any(m.key == "om:other" for m in second.messages) is False  # no observations yet: nothing injected


async def test_status_follows_every_write_between_two_checks(tmp_path):
    """Resource scope remembers a thread's status while the record and every unobserved tail are the same
    objects; a write to any thread (or a new record) between two checks is seen by the next check, and a
    caller changing the status it got never changes the next one."""
    cfg = OMConfig(scope="resource", observation=ObservationConfig(message_tokens=30_000),
                   reflection=ReflectionConfig(observation_tokens=1_000_000))
    storage = SQLiteStorage(":memory:")
    om = ObservationalMemory(cfg, storage, ScriptedObserver(), ScriptedReflector())
    (at, user, _), (at2, other, _) = synthetic_turns(2, words=40)
    await om.prepare_turn("person-1", "a", [Message("u0", "user", user, at)], at)
    rec = om.record("person-1", "a")
    first = om.status(rec, "a")
    assert [m.id for m in first.unobserved] == ["u0"] and not first.others
    with pytest.raises((AttributeError, TypeError)):  # read-only: a caller cannot change what is shared
        first.unobserved.append(Message("x", "user", "not stored", at))  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        first.others["zz"] = ()  # type: ignore[index]
    again = om.status(rec, "a")
    assert [m.id for m in again.unobserved] == ["u0"] and not again.others and again.pending == first.pending

    await om.prepare_turn("person-1", "b", [Message("v0", "user", other, at2)], at2)  # another thread's write
    seen = om.status(om.record("person-1", "a"), "a")
    assert list(seen.others) == ["b"] and seen.pending > first.pending
    storage.add_messages([Message("u1", "user", "one more line from the user", at2, thread_id="a",
                                  resource_id="person-1")])
    grown = om.status(om.record("person-1", "a"), "a")
    assert [m.id for m in grown.unobserved] == ["u0", "u1"] and grown.pending > seen.pending


async def test_kept_status_parts_equal_a_status_computed_from_nothing(tmp_path, monkeypatch):
    """Every status a resource-scope replay asks for (its OTHER-conversations part reused while only the
    reader's own tail changed since its last status) equals the status a new memory over the same storage
    computes with nothing kept: four threads written in turn, some turns several times to one thread, with
    observations (threads leaving the view) in between, and every thread read after some turns (so a reader's
    last status may be one write to another thread behind)."""
    cfg = OMConfig(scope="resource", observation=ObservationConfig(message_tokens=1200, max_tokens_per_batch=800),
                   reflection=ReflectionConfig(observation_tokens=1_000_000))
    storage = SQLiteStorage(":memory:")
    om = ObservationalMemory(cfg, storage, ScriptedObserver(), ScriptedReflector())
    checked = reused = 0
    plain_status = ObservationalMemory.status

    def checking(self, rec, thread_id):
        nonlocal checked, reused
        hit = self._status_memo.get((rec.resource_id, thread_id))
        st = plain_status(self, rec, thread_id)
        if hit is not None and hit[1] is not self._views.get(rec.resource_id) and st.others is hit[2].others:
            reused += 1
        fresh = plain_status(ObservationalMemory(cfg, storage, ScriptedObserver(), ScriptedReflector()), rec,
                             thread_id)
        assert st.unobserved == fresh.unobserved and dict(st.others) == dict(fresh.others)
        assert list(st.others) == list(fresh.others)
        assert (st.other_text, st.pending, st.threshold) == (fresh.other_text, fresh.pending, fresh.threshold)
        checked += 1
        return st

    monkeypatch.setattr(ObservationalMemory, "status", checking)
    observes = 0
    for i, (at, user, assistant) in enumerate(synthetic_turns(48, words=40, turns_per_day=48, minutes_between=2)):
        tid = f"t{(i // 2) % 4}" if i % 7 else "t0"
        ctx = await om.prepare_turn("r", tid, [Message(f"u{i}", "user", user, at)], at)
        observes += ctx.events.count("observe")
        for reader in ("t0", "t1", "t2", "t3")[: (i + 2) % 5]:
            om.status(om.record("r", reader), reader)
        events = await om.finish_turn("r", tid, [Message(f"a{i}", "assistant", assistant, at + timedelta(seconds=5))],
                                      at + timedelta(seconds=5))
        observes += events.count("observe")
        for reader in ("t0", "t1", "t2", "t3")[: i % 5]:  # readers whose last status is the newest view's base
            om.status(om.record("r", reader), reader)
    assert observes >= 2 and checked > 100 and reused > 20
