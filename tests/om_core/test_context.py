from datetime import datetime, timedelta, timezone

import pytest

from om_core.context import (
    EPOCH,
    MESSAGE_BOUNDARY_RE,
    build_actor_context,
    message_boundary,
    optimize_observations,
    split_observation_chunks,
)
from om_core.prompts import load
from om_core.types import Message

NOW = datetime(2026, 3, 24, 12, 0, tzinfo=timezone.utc)
B1 = datetime(2026, 3, 3, 9, 30, tzinfo=timezone.utc)
B2 = datetime(2026, 3, 10, 19, 0, 0, 250_000, tzinfo=timezone.utc)
CHUNK_A = "Date: Mar 3, 2026\n* 🔴 (09:12) User stated they adopted a beagle named Pixel. (meaning Feb 28, 2026)\n* 🟢 (09:22) User might take Pixel to classes"
CHUNK_B = "Date: Mar 10, 2026\n* 🔴 (18:40) User will start a new job at Lumen Labs. (meaning Mar 16, 2026)"
CHUNK_C = "Date: Mar 20, 2026\n* ✅ (08:00) User confirmed the vet visit went well"
RAW = [
    Message(id="u1", role="user", content="What about Pixel?", created_at=NOW - timedelta(minutes=5)),
    Message(id="a1", role="assistant", content="Pixel is doing great.", created_at=NOW - timedelta(minutes=4)),
]


def test_optimize_observations():
    text = (
        "Date: Mar 3, 2026\n* 🔴 (09:12) [profile, pets] User stated fact\n* 🟡 (09:13) medium  item\n"
        "  * -> sub detail\n* 🟢 low [3 items collapsed] see [docs](http://x)\n* ✅ (09:20) done\n\n\n\nDate: Mar 4, 2026"
    )
    assert optimize_observations(text) == (
        "Date: Mar 3, 2026\n* 🔴 (09:12) User stated fact\n* (09:13) medium item\n"
        " * sub detail\n* low [3 items collapsed] see [docs](http://x)\n* ✅ (09:20) done\n\nDate: Mar 4, 2026"
    )


def test_message_boundary_and_regex():
    assert message_boundary(datetime(2026, 3, 3, 9, 12, tzinfo=timezone.utc)) == (
        "\n\n--- message boundary (2026-03-03T09:12:00.000Z) ---\n\n"
    )
    est = timezone(timedelta(hours=-5))
    assert "(2026-03-03T14:12:00.250Z)" in message_boundary(datetime(2026, 3, 3, 9, 12, 0, 250_000, tzinfo=est))
    assert MESSAGE_BOUNDARY_RE.search(message_boundary(B2))
    with pytest.raises(ValueError):
        message_boundary(datetime(2026, 3, 3))


def test_split_chunks():
    text = CHUNK_A + message_boundary(B1) + CHUNK_B + message_boundary(B2) + "  \n" + message_boundary(B2) + CHUNK_C
    assert split_observation_chunks(text) == [CHUNK_A, CHUNK_B, CHUNK_C]
    assert split_observation_chunks("") == []


def test_m31_layout():
    obs = CHUNK_A + message_boundary(B1) + CHUNK_B
    ctx = build_actor_context(
        profile="m31", observations=obs, now=NOW, current_task="Primary: answer", suggested_response="Mention Pixel", unobserved=RAW
    )
    assert [c.key for c in ctx] == [
        "om:preamble", "om:open", "om:chunk:0", "om:chunk:1", "om:task", "om:suggested", "om:continuation", "msg:u1", "msg:a1",
    ]  # fmt: skip
    assert [c.role for c in ctx][:6] == ["system"] * 6
    assert ctx[0].content == load("m31", "actor_preamble") + "\n\n" + load("m31", "actor_instructions")
    assert ctx[1].content == "<observations>"
    assert ctx[2].content == (
        "Date: Mar 3, 2026 (3 weeks ago)\n"
        "* 🔴 (09:12) User stated they adopted a beagle named Pixel. (meaning Feb 28, 2026 - 3 weeks ago)\n"
        "* (09:22) User might take Pixel to classes"
    )
    assert ctx[3].content == (
        "[1 week later]\n\nDate: Mar 10, 2026 (2 weeks ago)\n"
        "* 🔴 (18:40) User will start a new job at Lumen Labs. (meaning Mar 16, 2026 - 1 week ago, likely already happened)"
    )
    assert ctx[4].content == "<current-task>\nPrimary: answer\n</current-task>"
    assert ctx[5].content == "<suggested-response>\nMention Pixel\n</suggested-response>"
    assert all("</observations>" not in c.content for c in ctx)
    cont = ctx[6]
    assert cont.role == "user" and cont.created_at == EPOCH
    assert cont.content == f"<system-reminder>{load('m31', 'continuation')}</system-reminder>"
    assert [c.breakpoint for c in ctx] == [False, False, True, True, False, True, True, False, False]
    assert ctx[7].content == "What about Pixel?" and ctx[7].created_at == RAW[0].created_at


def test_m31_last_chunk_is_last_breakpoint_without_hints_and_optional_blocks():
    ctx = build_actor_context(
        profile="m31", observations=CHUNK_A, now=NOW, other_conversations='<other-conversation id="x">hi</other-conversation>',
        retrieval_instructions="Use recall.",
    )  # fmt: skip
    assert [c.key for c in ctx] == ["om:preamble", "om:other", "om:open", "om:chunk:0", "om:continuation"]
    assert ctx[0].content.endswith("\n\nUse recall.")
    assert "START_OTHER_CONVERSATIONS_BLOCK\n<other-conversation" in ctx[1].content
    assert ctx[3].breakpoint


def test_appending_a_chunk_keeps_earlier_chunks_byte_identical():
    before = CHUNK_A + message_boundary(B1) + CHUNK_B
    after = before + message_boundary(B2) + CHUNK_C
    ctx1 = build_actor_context(profile="m31", observations=before, now=NOW)
    ctx2 = build_actor_context(profile="m31", observations=after, now=NOW + timedelta(hours=3))  # same date
    chunks1 = [c for c in ctx1 if c.key.startswith("om:chunk:")]
    chunks2 = [c for c in ctx2 if c.key.startswith("om:chunk:")]
    assert len(chunks1) == 2 and len(chunks2) == 3
    assert chunks2[:2] == chunks1
    assert ctx1[:2] == ctx2[:2]
    assert chunks2[2].content.startswith("[1 week later]\n\nDate: Mar 20, 2026 (4 days ago)")


def test_static_blocks_do_not_depend_on_now():
    a = build_actor_context(profile="m31", observations=CHUNK_A, now=NOW)
    b = build_actor_context(profile="m31", observations=CHUNK_A, now=NOW + timedelta(days=30))
    assert a[0] == b[0] and a[1] == b[1] and a[-1] == b[-1]
    assert a[2] != b[2]  # relative ages move with `now`


def test_m11_layout():
    obs = CHUNK_A + message_boundary(B1) + CHUNK_B
    ctx = build_actor_context(profile="m11", observations=obs, now=NOW, suggested_response="Mention Pixel", unobserved=RAW)
    assert [c.key for c in ctx] == ["om:system", "om:continuation", "msg:u1", "msg:a1"]
    system = ctx[0]
    assert system.role == "system" and system.breakpoint
    assert system.content.startswith("\n" + load("m11", "actor_preamble") + "\n\n<observations>\nDate: Mar 3, 2026 (3 weeks ago)")
    assert "\n\n[1 week later]\n\nDate: Mar 10, 2026 (2 weeks ago)" in system.content
    assert "</observations>\n\n" + load("m11", "actor_instructions") in system.content
    assert system.content.endswith("<suggested-response>\nMention Pixel\n</suggested-response>")
    assert "MOST RECENT USER INPUT" not in system.content
    assert ctx[1].content == f"<system-reminder>{load('m11', 'continuation')}</system-reminder>"


def test_no_observations_injects_nothing():
    for profile in ("m11", "m31"):
        ctx = build_actor_context(profile=profile, observations="  ", now=NOW, current_task="x", unobserved=RAW)
        assert [c.key for c in ctx] == ["msg:u1", "msg:a1"]


def test_bad_inputs():
    with pytest.raises(ValueError, match="aware"):
        build_actor_context(profile="m31", observations=CHUNK_A, now=datetime(2026, 3, 24))
    with pytest.raises(ValueError, match="profile"):
        build_actor_context(profile="x", observations=CHUNK_A, now=NOW)


def test_raw_tail_is_built_from_each_message_as_it_is_now() -> None:
    """The raw tail's context messages are kept per message object: a render equals one built from scratch
    (every field), turn after turn, and a new message object (same id, other content, or the memo cleared)
    gets its own form, never a kept one."""
    from om_core import context as ctx
    from om_core.types import ContextMessage, ToolCall

    call = ToolCall(id="c1", name="search", args={"q": "x"}, state="result", result="found")
    msgs = [Message(f"m{i}", "user" if i % 2 == 0 else "assistant", f"text {i}", NOW - timedelta(minutes=i),
                    tool_calls=(call,) if i == 3 else ()) for i in range(8)]

    def plain(ms: list[Message]) -> list[ContextMessage]:
        return [ContextMessage(role=m.role, content=m.content, key=f"msg:{m.id}", created_at=m.created_at,
                               tool_calls=m.tool_calls) for m in ms]

    for _ in range(3):
        assert build_actor_context(profile="m31", observations="", now=NOW, unobserved=msgs) == plain(msgs)
    edited = [msgs[0], Message("m1", "assistant", "edited", NOW), *msgs[2:]]
    assert build_actor_context(profile="m31", observations="", now=NOW, unobserved=edited) == plain(edited)
    ctx._RAW.clear()
    assert build_actor_context(profile="m11", observations="", now=NOW, unobserved=msgs) == plain(msgs)
