"""Failure injection: a storage call that fails (before or after committing) at step k, then a retry, never
loses an observation nor applies one twice."""

from __future__ import annotations

import re
from collections import Counter
from datetime import timedelta

import pytest

from om_core.config import OMConfig, ObservationConfig, ReflectionConfig
from om_core.testing import ScriptedObserver, synthetic_turns
from om_core.memory import ObservationalMemory
from om_core.storage import InMemoryStorage, SQLiteStorage
from om_core.types import Message

MUTATING = {"initialize_record", "update_active_observations", "append_buffered_chunk", "swap_buffered_to_active",
            "create_reflection_generation", "update_buffered_reflection", "swap_buffered_reflection_to_active",
            "patch_record", "save_thread", "add_messages"}
MID = re.compile(r"\bmid\d{5}\b")
TURNS = synthetic_turns(28, words=60, turns_per_day=28, minutes_between=2)


class InjectedFault(RuntimeError):
    pass


class FlakyStorage:
    """Delegates to a real storage; the k-th mutating call raises, before or after it took effect."""

    def __init__(self, inner, fail_at: int | None, after: bool) -> None:
        self.inner, self.fail_at, self.after, self.count = inner, fail_at, after, 0

    def __getattr__(self, name):
        attr = getattr(self.inner, name)
        if name not in MUTATING:
            return attr

        def call(*args, **kwargs):
            self.count += 1
            if self.count == self.fail_at and not self.after:
                raise InjectedFault(f"{name} (before)")
            result = attr(*args, **kwargs)
            if self.count == self.fail_at:
                raise InjectedFault(f"{name} (after)")
            return result

        return call


class IdReflector:
    """Keeps every observation line up to its message marker: shrinks the text, keeps ids countable."""

    async def complete(self, messages, **params):
        from om_core.llm import Completion

        body = messages[-1]["content"].split("## OBSERVATIONS TO REFLECT ON\n\n", 1)[1].split("\n\n---\n\n", 1)[0]
        keep = [line[: m.end()] if (m := MID.search(line)) else line for line in body.split("\n")
                if line.strip() and not line.startswith("--- message boundary")]
        return Completion("<observations>\n" + "\n".join(keep) + "\n</observations>")


def config(profile: str, scope: str = "thread", buffering: bool = True) -> OMConfig:
    obs = ObservationConfig(message_tokens=1000) if profile == "m11" or scope == "resource" else \
        ObservationConfig(message_tokens=1000, buffer_tokens=200 if buffering else False)
    return OMConfig(profile=profile, scope=scope, observation=obs,
                    reflection=ReflectionConfig(observation_tokens=400))


async def drive(storage, cfg: OMConfig, threads=("t",)) -> list[Message]:
    """Replay TURNS; any injected fault is retried once with a fresh engine (in-process state lost)."""
    make = lambda: ObservationalMemory(cfg, storage, ScriptedObserver(), IdReflector())  # noqa: E731
    om = make()
    sent: list[Message] = []
    for i, (at, user, assistant) in enumerate(TURNS):
        tid = threads[i % len(threads)]
        u = Message(f"u{i}", "user", user, at, thread_id=tid)
        a = Message(f"a{i}", "assistant", assistant, at + timedelta(seconds=30), thread_id=tid)
        for call in (lambda: om.prepare_turn("r", tid, [u], at),  # noqa: B023 (called in the loop)
                     lambda: om.finish_turn("r", tid, [a], at + timedelta(seconds=30))):  # noqa: B023
            try:
                await call()
            except InjectedFault:
                await om.wait_idle()
                om = make()
                await call()
            await om.wait_idle()
        sent += [u, a]
    return sent


def check_consistent(storage, cfg: OMConfig, sent: list[Message], threads=("t",)) -> None:
    head = storage.get_record("resource:r" if cfg.scope == "resource" else "thread:t")
    assert len(storage.list_messages("r")) == len(sent)  # every message stored exactly once
    in_obs = Counter(MID.findall(head.active_observations))
    in_chunks = Counter(MID.findall("\n".join(c.observations for c in head.buffered_observation_chunks)))
    buffered = head.buffered_message_ids()
    cursors = {t: (storage.get_thread(t).last_observed_at if cfg.scope == "resource" else head.last_observed_at)
               for t in threads}
    for m in sent:
        mid = MID.match(m.content).group(0)
        cursor = cursors[m.thread_id]
        observed = cursor is not None and m.created_at <= cursor
        assert in_obs[mid] == (1 if observed else 0), (mid, in_obs[mid], observed)
        assert in_chunks[mid] == (1 if m.id in buffered else 0), mid
        assert not (observed and m.id in buffered), mid
    assert sum(in_obs.values()) > 0


def count_mutations(cfg: OMConfig, threads=("t",)) -> int:
    import asyncio

    flaky = FlakyStorage(InMemoryStorage(), None, False)
    sent = asyncio.run(drive(flaky, cfg, threads))
    check_consistent(flaky.inner, cfg, sent, threads)
    return flaky.count


@pytest.mark.parametrize("profile,scope,buffering,threads", [
    pytest.param("m31", "thread", True, ("t",), marks=pytest.mark.slow),  # buffering: many more steps to fault
    ("m31", "thread", False, ("t",)), ("m11", "thread", False, ("t",)),
    pytest.param("m31", "resource", False, ("t", "u", "v"), marks=pytest.mark.slow)])
async def test_fault_at_every_step_then_retry(profile, scope, buffering, threads):
    cfg = config(profile, scope, buffering)
    flaky0 = FlakyStorage(InMemoryStorage(), None, False)
    sent0 = await drive(flaky0, cfg, threads)
    check_consistent(flaky0.inner, cfg, sent0, threads)
    total = flaky0.count
    assert total >= 30
    for k in range(1, total + 1):
        for after in (False, True):
            flaky = FlakyStorage(InMemoryStorage(), k, after)
            sent = await drive(flaky, cfg, threads)
            check_consistent(flaky.inner, cfg, sent, threads)


async def test_faults_on_sqlite_roll_back(tmp_path):
    cfg = config("m31")
    for k in (3, 9, 17, 26):
        store = SQLiteStorage(tmp_path / f"om{k}.db")
        flaky = FlakyStorage(store, k, False)
        sent = await drive(flaky, cfg)
        check_consistent(store, cfg, sent)
        store.close()
