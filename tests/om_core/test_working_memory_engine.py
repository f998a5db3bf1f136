"""Working memory in the engine: the Observer keeps it (sync observation, buffered chunks, resource scope), it is
stored per resource on every backend and survives reflections, the Actor sees it after the observations, and
the static system block stays byte-identical while it changes."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from om_core.config import OMConfig
from om_core.context import WORKING_MEMORY_KEY, build_actor_context, memory_prefix
from om_core.llm import Completion
from om_core.memory import ObservationalMemory
from om_core.prompts import load
from om_core.storage import InMemoryStorage, SQLiteStorage
from om_core.testing import ScriptedObserver, ScriptedReflector, synthetic_turns
from om_core.types import ContextMessage, Message
from om_core.working_memory import WorkingMemory, format_working_memory_section, working_memory_from_prompt

T0 = datetime(2026, 3, 3, 9, 0, tzinfo=timezone.utc)


@dataclass
class ProfileObserver:
    """ScriptedObserver whose n-th call also reports `updates[n]` as a working-memory section, and which keeps
    the block each request showed (None: the request did not ask for working memory)."""

    updates: list[list[tuple[str, str]]]
    empty: bool = False  # answer with the section only (no observations): an output memory refuses
    inner: ScriptedObserver = field(default_factory=ScriptedObserver)
    shown: list[Any] = field(default_factory=list)

    async def complete(self, messages: list[dict[str, Any]], **params: Any) -> Completion:
        user = "\n\n".join(str(m["content"]) for m in messages if m["role"] == "user")
        self.shown.append(working_memory_from_prompt(user))
        out = await self.inner.complete(messages, **params)
        n = len(self.shown) - 1
        extra = format_working_memory_section(self.updates[n]) if n < len(self.updates) and self.updates[n] else ""
        text = "<observations>\n</observations>" if self.empty else out.text
        return Completion(text=f"{text}\n{extra}", usage=out.usage, model=out.model)


UPDATES = [[("name", "Ana")], [("home", "Lisbon"), ("diet", "vegan")], [("home", "Porto")], [("diet", "none")]] * 5


def engine(observer: Any, storage: Any = None, **cfg: Any) -> ObservationalMemory:
    config = OMConfig.from_dict({"observation": {"message_tokens": 1500, "buffer_tokens": False},
                                 "reflection": {"observation_tokens": 100_000}, "working_memory": True, **cfg})
    return ObservationalMemory(config, storage or InMemoryStorage(), observer, ScriptedReflector())


async def play(om: ObservationalMemory, n: int, *, thread: str = "t", first: int = 0,
               start: datetime = T0) -> list[Any]:
    out = []
    for i, (at, user, assistant) in enumerate(synthetic_turns(n, words=120, start=start, turns_per_day=10_000,
                                                               minutes_between=2, seed=first + 5)):
        k = first + i
        ctx = await om.prepare_turn("r", thread, [Message(f"{thread}u{k}", "user", user, at)], at)
        ctx.events += await om.finish_turn("r", thread, [Message(f"{thread}a{k}", "assistant", assistant,
                                                                 at + timedelta(seconds=20))], at + timedelta(seconds=20))
        await om.wait_idle()
        ctx.events += om.take_background_events("r", thread)
        out.append(ctx)
    return out


def keys(ctx: list[ContextMessage]) -> list[str]:
    return [m.key for m in ctx]


def static_block(ctx: list[ContextMessage], profile: str) -> str:
    """The part of the Actor's context that must never change: m31's preamble message, m11's system message
    up to its observations."""
    if profile == "m31":
        return next(m.content for m in ctx if m.key == "om:preamble")
    system = next(m.content for m in ctx if m.key == "om:system")
    return system[: system.index("<observations>")]


@pytest.mark.parametrize("profile", ["m11", "m31"])
async def test_observer_keeps_it_and_the_system_block_stays_byte_identical(profile):
    obs = ProfileObserver(UPDATES)
    om = engine(obs, profile=profile)
    ctxs = await play(om, 24)
    observed = [i for i, c in enumerate(ctxs) if "observe" in c.events]
    assert len(observed) >= 3
    changed = [i for i, c in enumerate(ctxs) if "working_memory" in c.events]
    assert changed == observed  # every observation brought an update that changed the block
    wm = om.working_memory("r")
    assert isinstance(wm, WorkingMemory) and wm.get("name") == "Ana"
    # each request showed the block as the previous observations left it
    assert obs.shown[0] == [] and obs.shown[1] == [("name", "Ana")]
    assert obs.shown[2] == [("name", "Ana"), ("home", "Lisbon"), ("diet", "vegan")]
    assert obs.shown[3] == [("name", "Ana"), ("diet", "vegan"), ("home", "Porto")]

    renders = [c.messages for c in ctxs if any(m.key == WORKING_MEMORY_KEY for m in c.messages)]
    blocks = {next(m.content for m in r if m.key == WORKING_MEMORY_KEY) for r in renders}
    assert len(blocks) >= 3  # the block changed between these turns...
    assert len({static_block(r, profile) for r in renders}) == 1  # ...and the static block never did
    assert "Ana" not in static_block(renders[-1], profile) and "Lisbon" not in static_block(renders[-1], profile)
    for r in renders:  # placed after the observations, never inside them
        k = keys(r)
        last_memory = max(i for i, key in enumerate(k) if key.startswith(("om:chunk:", "om:system")))
        assert k.index(WORKING_MEMORY_KEY) == last_memory + 1
        assert "<working-memory>" not in memory_prefix(r)


@pytest.mark.parametrize("profile", ["m11", "m31"])
async def test_a_working_memory_edit_breaks_the_context_only_after_the_observation_prefix(profile):
    om = engine(ProfileObserver(UPDATES), profile=profile)
    await play(om, 10)
    assert om.record("r", "t").active_observations
    now = T0 + timedelta(days=1)
    before = (await om.context("r", "t", now)).messages
    om.set_working_memory("r", "- name: Ana Lima\n- current projects: kitchen remodel", now)
    after = (await om.context("r", "t", now)).messages
    first_diff = next(i for i, (a, b) in enumerate(zip(before, after)) if a != b)
    assert after[first_diff].key == WORKING_MEMORY_KEY
    assert before[:first_diff] == after[:first_diff] and memory_prefix(before) == memory_prefix(after)
    assert "kitchen remodel" in after[first_diff].content and len(before) == len(after)


async def test_buffered_chunks_carry_their_update_until_they_activate():
    obs = ProfileObserver([[("name", "Ana")]] + [[("pets", f"cat no. {i}")] for i in range(1, 30)])
    om = engine(obs, observation={"message_tokens": 3000})  # thread scope, m31: async buffering on
    ctxs = await play(om, 40)
    events = [e for c in ctxs for e in c.events]
    assert "buffer" in events and "activate" in events
    first_buffer = next(i for i, c in enumerate(ctxs) if "buffer" in c.events)
    first_activate = next(i for i, c in enumerate(ctxs) if "activate" in c.events)
    assert first_buffer < first_activate
    # buffering alone changes nothing the Actor sees; activation brings the chunks' updates in order
    assert all("working_memory" not in c.events for c in ctxs[:first_activate])
    assert "working_memory" in ctxs[first_activate].events
    wm = om.working_memory("r")
    assert wm is not None and wm.get("name") == "Ana" and wm.get("pets", ) is not None
    pending = om.record("r", "t").buffered_observation_chunks
    assert all(c.working_memory for c in pending)  # waiting chunks keep theirs for their own activation


async def test_resource_scope_applies_the_multi_thread_outputs_update():
    obs = ProfileObserver(UPDATES)
    om = engine(obs, scope="resource", observation={"message_tokens": 1500})
    await play(om, 6, thread="a")
    await play(om, 6, thread="b", first=6, start=T0 + timedelta(hours=1))
    assert any(s is not None for s in obs.shown)  # the multi-thread requests asked for it too
    wm = om.working_memory("r")
    assert wm is not None and wm.get("name") == "Ana"
    ctx = await om.context("r", "b", T0 + timedelta(days=1))
    assert WORKING_MEMORY_KEY in keys(ctx.messages)


async def test_a_refused_output_leaves_it_unchanged_and_reflection_keeps_it():
    refused = engine(ProfileObserver(UPDATES, empty=True))
    ctxs = await play(refused, 10)
    assert any("observation_rejected" in c.events for c in ctxs)
    assert refused.working_memory("r") is None
    om = engine(ProfileObserver(UPDATES), reflection={"observation_tokens": 600})
    ctxs = await play(om, 30)
    reflected = [i for i, c in enumerate(ctxs) if "reflect" in c.events]
    assert reflected and om.record("r", "t").generation_count >= 1
    assert om.working_memory("r") is not None and om.working_memory("r").get("name") == "Ana"


async def test_off_by_default_nothing_asked_shown_or_stored():
    obs = ProfileObserver(UPDATES)
    om = ObservationalMemory(OMConfig.from_dict({"observation": {"message_tokens": 1500}}), InMemoryStorage(), obs,
                             ScriptedReflector())
    ctxs = await play(om, 12)
    assert any("observe" in c.events or "activate" in c.events for c in ctxs)
    assert obs.shown and all(s is None for s in obs.shown)
    assert om.working_memory("r") is None
    assert not any(m.key == WORKING_MEMORY_KEY for c in ctxs for m in c.messages)
    assert not any("working_memory" in c.events for c in ctxs)


def test_actor_context_places_the_block_after_the_observations():
    now = T0 + timedelta(days=2)
    obs = "Date: Mar 3, 2026\n* 🔴 (09:00) User stated they moved"
    plain = build_actor_context(profile="m31", observations=obs, now=now, current_task="Primary: x")
    wm = build_actor_context(profile="m31", observations=obs, now=now, current_task="Primary: x",
                             working_memory="- home: Porto")
    assert keys(wm) == ["om:preamble", "om:open", "om:chunk:0", WORKING_MEMORY_KEY, "om:task", "om:continuation"]
    assert wm[:3] == plain[:3]
    assert wm[3].content == f"<working-memory>\n{load('m31', 'actor_working_memory')}\n- home: Porto\n</working-memory>"
    m11 = build_actor_context(profile="m11", observations=obs, now=now, working_memory="- home: Porto")
    assert keys(m11) == ["om:system", WORKING_MEMORY_KEY, "om:continuation"]
    only = build_actor_context(profile="m31", observations="", now=now, working_memory="- home: Porto")
    assert keys(only) == [WORKING_MEMORY_KEY]
    assert build_actor_context(profile="m31", observations="", now=now, working_memory="  ") == []


# ---- storage ----------------------------------------------------------------------------------------------


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

        s = PostgresStorage(request.getfixturevalue("pg_dsn"), prefix=f"w{uuid.uuid4().hex[:8]}_")
        yield s
        s.drop_tables()
        s.close()


def test_storage_round_trip_and_snapshots(store):
    assert store.get_working_memory("r1") is None
    wm = WorkingMemory("r1", (("name", "Ana"), ("", "has two cats")), 9, T0)
    store.save_working_memory(wm)
    assert store.get_working_memory("r1") == wm and store.get_working_memory("r2") is None
    newer = WorkingMemory("r1", (("name", "Ana Lima"),), 5, T0 + timedelta(hours=1))
    store.save_working_memory(newer)
    assert store.get_working_memory("r1") == newer
    store.add_messages([Message("m1", "user", "hi", T0, thread_id="t1", resource_id="r1")])
    snapshot = store.export_state("r1")
    assert snapshot["version"] == 2 and snapshot["working_memory"]["entries"] == [["name", "Ana Lima"]]
    other = InMemoryStorage()
    other.import_state(snapshot)
    assert other.get_working_memory("r1") == newer
    # a version-1 snapshot (before working memory existed) imports, and replaces the block with none
    store.import_state({k: v for k, v in snapshot.items() if k != "working_memory"} | {"version": 1})
    assert store.get_working_memory("r1") is None and store.get_message("m1") is not None


def test_sqlite_file_keeps_it_across_reopen(tmp_path):
    path = tmp_path / "om.db"
    s = SQLiteStorage(path)
    s.save_working_memory(WorkingMemory("r1", (("name", "Ana"),), 4, T0))
    s.close()
    again = SQLiteStorage(path)
    assert again.get_working_memory("r1") == WorkingMemory("r1", (("name", "Ana"),), 4, T0)
    again.close()
