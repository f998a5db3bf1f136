"""The recall tool and observation groups (Mastra's om-tools.ts and observation-groups.ts)."""

from datetime import datetime, timedelta, timezone

import pytest

from om_core.retrieval import (
    parse_observation_groups,
    recall,
    recall_tool_schema,
    reconcile_reflection_groups,
    render_observation_groups,
    wrap_observation_group,
)
from om_core.storage import SQLiteStorage
from om_core.types import Message, ToolCall

T0 = datetime(2026, 3, 3, 9, 0, tzinfo=timezone.utc)


@pytest.fixture
def store(tmp_path):
    s = SQLiteStorage(tmp_path / "om.db")
    words = " ".join(f"w{i}" for i in range(400))
    msgs = [Message(f"m{i}", "user" if i % 2 == 0 else "assistant", f"message {i} {words}",
                    T0 + timedelta(minutes=i), thread_id="t1", resource_id="r") for i in range(30)]
    msgs.append(Message("tool", "assistant", "", T0 + timedelta(minutes=40), thread_id="t2", resource_id="r",
                        tool_calls=(ToolCall("c1", "search", {"q": "vet"}, "result", {"hits": ["x" * 50] * 200}),)))
    s.add_messages(msgs)
    yield s
    s.close()


def test_schema_is_an_openai_function():
    schema = recall_tool_schema()
    assert schema["type"] == "function" and schema["function"]["name"] == "recall"
    props = schema["function"]["parameters"]["properties"]
    assert {"cursor", "page", "limit", "detail", "anchor", "threadId"} <= set(props)
    assert props["detail"]["enum"] == ["low", "high"]


async def test_pages_forward_and_backward_from_cursor(store):
    p1 = await recall(store, "r", cursor="m10", limit=5)
    assert [m["id"] for m in p1["messages"]] == ["m10", "m11", "m12", "m13", "m14"]
    assert p1["hasNextPage"] and p1["hasPrevPage"]
    p2 = await recall(store, "r", cursor="m10", limit=5, page=2)
    assert [m["id"] for m in p2["messages"]] == ["m15", "m16", "m17", "m18", "m19"]
    back = await recall(store, "r", cursor="m10", limit=5, page=-1)
    assert [m["id"] for m in back["messages"]] == ["m5", "m6", "m7", "m8", "m9"] and back["hasPrevPage"]
    back2 = await recall(store, "r", cursor="m10", limit=5, page=-2)
    assert [m["id"] for m in back2["messages"]] == ["m0", "m1", "m2", "m3", "m4"] and not back2["hasPrevPage"]
    rng = await recall(store, "r", cursor="m3:m6", limit=2)  # a group range works as cursor
    assert [m["id"] for m in rng["messages"]] == ["m3", "m4"]
    end = await recall(store, "r", cursor="m3:m6", anchor="end", limit=2)
    assert [m["id"] for m in end["messages"]] == ["m6", "m7"]


async def test_no_cursor_uses_anchor_and_thread(store):
    first = await recall(store, "r", thread_id="t1", limit=3)
    assert [m["id"] for m in first["messages"]] == ["m0", "m1", "m2"] and not first["hasPrevPage"]
    last = await recall(store, "r", thread_id="t1", limit=3, anchor="end")
    assert [m["id"] for m in last["messages"]] == ["m27", "m28", "m29"] and not last["hasNextPage"]
    whole = await recall(store, "r", anchor="end", limit=1)
    assert [m["id"] for m in whole["messages"]] == ["tool"]


async def test_low_detail_truncates_within_budget_and_high_detail_expands(store):
    low = await recall(store, "r", cursor="m0", limit=20)
    assert low["truncated"] and low["tokens"] <= 2000 + 20
    first = low["messages"][0]["content"]
    assert first.startswith("[p0] message 0") and 'partIndex=0 detail="high"' in first
    few = await recall(store, "r", cursor="m0", limit=5)  # 500 of 2,000 tokens used: user text grows to 200
    assert len(few["messages"][0]["content"]) > 1.5 * len(few["messages"][1]["content"])
    assert few["tokens"] == 3 * 200 + 2 * 100
    high = await recall(store, "r", cursor="m0", detail="high", part_index=0)
    assert not high["truncated"] and "w399" in high["messages"][0]["content"]
    tool = await recall(store, "r", cursor="tool", detail="high", part_index=1)
    assert tool["messages"][0]["content"].startswith("[p1] search result:")
    with pytest.raises(ValueError, match="partIndex"):
        await recall(store, "r", cursor="tool", detail="high", part_index=5)


async def test_argument_validation(store):
    with pytest.raises(ValueError, match="limit"):
        await recall(store, "r", limit=50)
    with pytest.raises(ValueError, match="detail"):
        await recall(store, "r", detail="medium")
    with pytest.raises(ValueError, match="cursor"):
        await recall(store, "r", cursor="nope")
    assert (await recall(store, "r", cursor="m2", page=0, limit=1))["messages"][0]["id"] == "m2"  # 0 → 1


def test_groups_wrap_render_and_reconcile():
    msgs = [Message("a1", "user", "hi", T0), Message("a2", "assistant", "", T0), Message("a3", "assistant", "ok", T0)]
    g = wrap_observation_group("* 🔴 (09:00) User said hi", msgs)
    [parsed] = parse_observation_groups(g)
    assert parsed.range == "a1:a3" and len(parsed.id) == 16 and parsed.content == "* 🔴 (09:00) User said hi"
    assert render_observation_groups(g) == f"## Group `{parsed.id}`\n_range: `a1:a3`_\n\n* 🔴 (09:00) User said hi"
    g2 = wrap_observation_group("* later", [Message("b1", "user", "x", T0), Message("b9", "user", "y", T0)])
    merged = reconcile_reflection_groups("* condensed", g + "\n\n" + g2)
    [one] = parse_observation_groups(merged)
    assert one.kind == "reflection" and one.range == "a1:b9"
    kept = reconcile_reflection_groups(f"## Group `{parsed.id}`\n_range: `a1:a3`_\n\n* short", g + "\n" + g2)
    assert parse_observation_groups(kept)[0].range == "a1:a3" and "* short" in kept
    assert reconcile_reflection_groups("* plain", "* no groups") == "* plain"
