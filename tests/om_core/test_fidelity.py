"""Points where om_core follows Mastra's arithmetic exactly (mastra-ai/mastra,
packages/memory/src/processors/observational-memory/: buffering-coordinator.ts,
observation-strategies/sync.ts, reflector-runner.ts, token-counter.ts)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from om_core.activation import should_buffer
from om_core.config import ObservationConfig, OMConfig, ReflectionConfig
from om_core.testing import ScriptedReflector
from om_core.llm import Completion
from om_core.memory import ObservationalMemory
from om_core.storage import InMemoryStorage
from om_core.tokens import default_counter
from om_core.types import Message

T0 = datetime(2026, 3, 3, 9, 0, tzinfo=timezone.utc)


class DatedObserver:
    """Every observation line ends in ")", which BPE merges with a following newline."""

    def __init__(self) -> None:
        self.n = 0

    async def complete(self, messages, **params) -> Completion:
        self.n += 1
        return Completion(f"<observations>\nDate: Mar 3, 2026\n* 🔴 (09:0{self.n % 10}) User went out "
                          f"number {self.n}. (meaning Mar 2, 2026)\n</observations>")


async def test_sync_observation_counts_the_whole_merged_text():
    # Mastra stores countObservations(existing + separator + new); a running sum drifts at each join
    for profile in ("m11", "m31"):
        cfg = OMConfig(profile=profile, observation=ObservationConfig(message_tokens=200, buffer_tokens=False)
                       if profile == "m31" else ObservationConfig(message_tokens=200),
                       reflection=ReflectionConfig(observation_tokens=100_000))
        om = ObservationalMemory(cfg, InMemoryStorage(), DatedObserver(), ScriptedReflector())
        for i in range(6):
            at = T0 + timedelta(minutes=i)
            await om.prepare_turn("r", "t", [Message(f"u{i}", "user", "word " * 150, at)], at)
            await om.finish_turn("r", "t", [Message(f"a{i}", "assistant", "ok " * 100, at)], at)
        rec = om.record("r", "t")
        assert rec.active_observations.count("number") >= 3
        assert rec.observation_token_count == default_counter().count_string(rec.active_observations)


def test_halved_buffer_interval_is_not_rounded():
    # bufferTokens 5001 near the threshold: Mastra's interval is 2500.5, so 24 999 -> 25 002 crosses nothing
    assert not should_buffer(25_002, 24_999, 30_000, 5001)
    assert should_buffer(25_006, 24_999, 30_000, 5001)


def test_buffered_reflection_keeps_the_later_lines_trimmed():
    store = InMemoryStorage()
    rec = store.initialize_record(lookup_key="thread:t", scope="thread", resource_id="r", thread_id="t", now=T0)
    rec = store.update_active_observations(rec.id, observations="l1\nl2", token_count=4, last_observed_at=T0, now=T0)
    rec = store.update_buffered_reflection(rec.id, reflection="R", token_count=1, input_tokens=4, line_count=2, now=T0)
    rec = store.update_active_observations(rec.id, observations="l1\nl2\n  * later", token_count=6,
                                           last_observed_at=T0, now=T0)
    new = store.swap_buffered_reflection_to_active(rec.id, count_tokens=len, now=T0)
    assert new.active_observations == "R\n\n* later"  # the unreflected tail is trimmed as a whole


async def test_sync_observation_boundary_is_stamped_with_the_newest_observed_message():
    from om_core.context import MESSAGE_BOUNDARY_RE, message_boundary

    cfg = OMConfig(observation=ObservationConfig(message_tokens=200, buffer_tokens=False),
                   reflection=ReflectionConfig(observation_tokens=100_000))
    om = ObservationalMemory(cfg, InMemoryStorage(), DatedObserver(), ScriptedReflector())
    for i in range(6):
        at = T0 + timedelta(minutes=i)
        await om.prepare_turn("r", "t", [Message(f"u{i}", "user", "word " * 150, at)], at)
        await om.finish_turn("r", "t", [Message(f"a{i}", "assistant", "ok " * 100, at + timedelta(seconds=30))],
                             at + timedelta(seconds=30))
    rec = om.record("r", "t")
    last = list(MESSAGE_BOUNDARY_RE.finditer(rec.active_observations))[-1]
    assert last.group(0) == message_boundary(rec.last_observed_at)  # not the previous cursor


class LabelObserver:
    async def complete(self, messages, **params) -> Completion:
        return Completion("<observations>\nDate: Mar 3, 2026\n* 🟡 (09:00) [travel] User might go -> Rome\n</observations>")


async def test_retrieval_mode_shows_groups_without_the_optimiser():
    # Mastra: renderObservationGroupsForReflection(...) ?? optimizeObservationsForContext(...)
    cfg = OMConfig.from_dict({"retrieval": True, "observation": {"message_tokens": 200, "buffer_tokens": False}})
    om = ObservationalMemory(cfg, InMemoryStorage(), LabelObserver(), ScriptedReflector())
    for i in range(3):
        at = T0 + timedelta(minutes=i)
        await om.prepare_turn("r", "t", [Message(f"u{i}", "user", "word " * 150, at)], at)
        await om.finish_turn("r", "t", [Message(f"a{i}", "assistant", "ok " * 100, at)], at)
    ctx = await om.context("r", "t", T0 + timedelta(days=1))
    chunk = next(m.content for m in ctx.messages if m.key == "om:chunk:0")
    assert chunk.startswith("## Group `") and "* 🟡 (09:00) [travel] User might go -> Rome" in chunk
    plain = OMConfig.from_dict({"observation": {"message_tokens": 200, "buffer_tokens": False}})
    om2 = ObservationalMemory(plain, InMemoryStorage(), LabelObserver(), ScriptedReflector())
    for i in range(3):
        at = T0 + timedelta(minutes=i)
        await om2.prepare_turn("r", "t", [Message(f"u{i}", "user", "word " * 150, at)], at)
        await om2.finish_turn("r", "t", [Message(f"a{i}", "assistant", "ok " * 100, at)], at)
    ctx2 = await om2.context("r", "t", T0 + timedelta(days=1))
    assert "* (09:00) User might go Rome" in next(m.content for m in ctx2.messages if m.key == "om:chunk:0")
