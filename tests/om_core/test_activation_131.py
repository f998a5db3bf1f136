"""m31 follows @mastra/memory 1.31.0 where the conformance suite found it did not (thread scope, async buffering):
activation chooses its chunks from the pending count stored at the end of the previous step, and messages are
counted with 1.31.0's rule. The real-package check is conformance case 1.31.0-oracle-thread-buffering."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from om_core.config import OMConfig
from om_core.engine.observe import activate
from om_core.engine.state import MessageTokens, Status
from om_core.memory import ObservationalMemory
from om_core.records import BufferedChunk
from om_core.storage import InMemoryStorage
from om_core.testing import ScriptedObserver, ScriptedReflector, synthetic_turns
from om_core.tokens import default_counter
from om_core.types import Message

T0 = datetime(2023, 5, 24, 12, 8, tzinfo=timezone.utc)


def _chunk(n: int, tokens: int) -> BufferedChunk:
    return BufferedChunk(id=f"b{n}", cycle_id=f"c{n}", observations=f"* obs {n}", token_count=10,
                         message_ids=(f"m{n}",), message_tokens=tokens, created_at=T0,
                         last_observed_at=T0 + timedelta(seconds=n), first_message_at=T0 + timedelta(seconds=n))


def _om(profile: str = "m31") -> ObservationalMemory:
    cfg = OMConfig.from_dict({"profile": profile, "scope": "thread", "observation": {"message_tokens": 2000}})
    return ObservationalMemory(cfg, InMemoryStorage(), ScriptedObserver(), ScriptedReflector())


def _activated(om: ObservationalMemory, stored: int) -> int:
    """Chunks of 548/531/496 message tokens, 2049 pending now, `stored` pending kept from the previous step (the
    first activation of the conformance oracle run): how many chunks activate."""
    rec = om.storage.initialize_record(lookup_key="thread:t", scope="thread", resource_id="r", thread_id="t", now=T0)
    for n, tokens in enumerate((548, 531, 496), start=1):
        om.storage.append_buffered_chunk("thread:t", _chunk(n, tokens), last_buffered_at_tokens=400 * n, now=T0)
    rec = om.storage.patch_record(rec.id, now=T0, pending_message_tokens=stored)
    st = Status(record=rec, thread_id="t", unobserved=[], others={}, other_text="", pending=2049, threshold=2000)
    assert activate(om, st, "t", T0, om._turn_log(om.scope_state("thread:t")))
    return len(om.storage.get_record("thread:t").active_observations.split("\n\n"))


def test_m31_activation_chooses_from_the_pending_count_of_the_previous_step() -> None:
    # 1.31.0: target 1526 - 400 = 1126; 548+531 = 1079 is the closest boundary under it and leaves 447 >= 400, the
    # boundary over it (1575) overshoots by 449 > 0.95 * 400: 2 chunks. From the current 2049 it would be 3.
    assert _activated(_om(), stored=1526) == 2
    # nothing stored yet: the chunks' own message tokens (1575), as Mastra's `|| totalChunkMessageTokens`
    assert _activated(_om(), stored=0) == 2


async def test_m31_keeps_each_steps_pending_count_on_the_record() -> None:
    om = _om()
    for i, (at, user, assistant) in enumerate(synthetic_turns(6, words=120)):
        await om.prepare_turn("r", "t", [Message(f"u{i}", "user", user, at)], at)
        await om.finish_turn("r", "t", [Message(f"a{i}", "assistant", assistant, at)], at)
        await om.wait_idle()
        rec = om.storage.get_record("thread:t")
        assert rec is not None and rec.pending_message_tokens == om.status(rec, "t").pending > 0


def test_m31_counts_a_message_as_1_31_0_does() -> None:
    # token-counter.ts countMessage: role and text encoded apart, + 3.8, Math.round per message; 1.1.0 (m11)
    # encoded role + text together and did not round per message
    c = default_counter()
    msg = Message("m", "user", "name", T0)
    role, text, both = c.count_string("user"), c.count_string("name"), c.count_string("username")
    assert both < role + text  # "username" is fewer tokens than its parts: the rules differ here
    assert MessageTokens(c, "m31").total([msg]) == role + text + 4 + 24
    assert MessageTokens(c, "m11").total([msg]) == round(both + 3.8 + 24)
