import json
from datetime import datetime, timezone

import pytest

from om_core.tokens import CONVERSATION_OVERHEAD, JSON_PAYLOAD_DISCOUNT, MESSAGE_OVERHEAD, TokenCounter
from om_core.types import Message, ToolCall

C = TokenCounter()
T = datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_exact_o200k_counts():
    assert C.count_string("") == 0
    assert C.count_string("hello world") == 2
    assert C.decode(C.encode("hello world")) == "hello world"


def test_message_and_conversation_overheads():
    assert C.count_message("user", "hello world") == C.count_string("userhello world") + MESSAGE_OVERHEAD
    msgs = [Message("1", "user", "hello world", T), Message("2", "assistant", "hi there", T)]
    expected = C.count_string("userhello world") + C.count_string("assistanthi there") + 2 * MESSAGE_OVERHEAD
    assert C.count_messages(msgs) == round(expected + CONVERSATION_OVERHEAD)
    assert C.count_messages([]) == 0
    assert C.count_messages([{"role": "user", "content": "hello world"}]) == round(
        C.count_string("userhello world") + MESSAGE_OVERHEAD + CONVERSATION_OVERHEAD
    )


def test_json_payload_discount():
    payload = {"a": [1, 2, 3], "b": "text"}
    raw = C.count_string("tool" + json.dumps(payload))
    assert C.count_message("tool", payload) == max(0, raw - JSON_PAYLOAD_DISCOUNT) + MESSAGE_OVERHEAD


def test_tool_results_add_an_extra_message_overhead():
    call = ToolCall(id="c", name="search", args={"q": "x"}, state="call")
    done = ToolCall(id="c", name="search", args={"q": "x"}, state="result", result="found it")
    base = C.count_message("assistant", "ok")
    with_call = C.count_message("assistant", "ok", [call])
    with_result = C.count_message("assistant", "ok", [done])
    assert with_call > base
    assert with_result == with_call + MESSAGE_OVERHEAD + C.count_string("found it")
    msg = Message("1", "assistant", "ok", T, tool_calls=(done,))
    assert C.count_messages([msg]) == round(with_result + CONVERSATION_OVERHEAD)


def test_truncate():
    text = " ".join(f"w{i}" for i in range(100))
    kept, dropped = C.truncate(text, 10)
    assert C.count_string(kept) <= 10 and dropped == C.count_string(text) - 10
    assert C.truncate("short", 10) == ("short", 0)
    with pytest.raises(ValueError):
        C.truncate("x", -1)


def test_memoised_by_content(monkeypatch):
    counter = TokenCounter()
    calls = 0
    real = counter._enc.encode

    def counting(*a, **k):
        nonlocal calls
        calls += 1
        return real(*a, **k)

    monkeypatch.setattr(counter._enc, "encode", counting)
    history = [Message(str(i), "user", f"message number {i}", T) for i in range(50)]
    counter.count_messages(history)
    first = calls
    counter.count_messages(history + [Message("x", "user", "one more", T)])
    assert first == 50 and calls == 51  # only the new message is tokenised


def test_memos_are_bounded_by_characters_and_stay_exact() -> None:
    from om_core.tokens import TokenCounter

    c = TokenCounter(max_chars=10_000)
    texts = [f"block {i} " + "word " * 400 for i in range(20)]  # ~2k chars each
    expected = [len(c._enc.encode(t)) for t in texts]
    assert [c.count_string(t) for t in texts] == expected
    assert [len(c.encode(t)) for t in texts] == expected
    assert c._memo_chars <= 10_000 and c._ids_chars <= 10_000
    assert sum(map(len, c._memo)) == c._memo_chars and sum(map(len, c._ids)) == c._ids_chars
    assert len(c._memo) < 20 and len(c._ids) < 20  # old entries were evicted
    assert c.count_string(texts[0]) == expected[0]  # recomputed after eviction, still exact
