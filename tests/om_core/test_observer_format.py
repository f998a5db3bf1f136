from datetime import datetime, timedelta, timezone

import pytest

from om_core.observer import format_messages
from om_core.tokens import TokenCounter
from om_core.types import Message, ToolCall

T0 = datetime(2026, 3, 3, 9, 12, 5, tzinfo=timezone.utc)
COUNTER = TokenCounter()


def msg(i: str, role: str, content: str, at: datetime, calls=()) -> Message:
    return Message(id=i, role=role, content=content, created_at=at, tool_calls=tuple(calls))


def test_m31_date_header_and_time_label_suppression():
    msgs = [
        msg("1", "user", "I adopted a beagle named Pixel last weekend!", T0),
        msg("2", "assistant", "Congrats!", T0 + timedelta(seconds=30)),  # same minute: no label
        msg("3", "user", "Vets nearby?", T0 + timedelta(minutes=1)),
        msg("4", "user", "Thanks", T0 + timedelta(days=1, hours=5)),
    ]
    assert format_messages(msgs, "m31", counter=COUNTER) == (
        "Mar 3 2026:\n"
        "User (9:12 AM): I adopted a beagle named Pixel last weekend!\n"
        "Assistant: Congrats!\n"
        "User (9:13 AM): Vets nearby?\n"
        "Mar 4 2026:\n"
        "User (2:12 PM): Thanks"
    )


def test_m31_time_label_shown_again_after_date_change_even_if_same_clock():
    msgs = [msg("1", "user", "a", T0), msg("2", "user", "b", T0 + timedelta(days=1))]
    assert format_messages(msgs, "m31", counter=COUNTER) == "Mar 3 2026:\nUser (9:12 AM): a\nMar 4 2026:\nUser (9:12 AM): b"


def test_m31_timezone_is_configurable():
    tz = timezone(timedelta(hours=-10))
    out = format_messages([msg("1", "user", "hi", T0)], "m31", tz=tz, counter=COUNTER)
    assert out == "Mar 2 2026:\nUser (11:12 PM): hi"


def test_m31_tool_lines_dedup_by_call_id():
    pending = ToolCall(id="c1", name="search_vets", args={"query": "vet Oak Park"}, state="call")
    done = ToolCall(id="c1", name="search_vets", args={"query": "vet Oak Park"}, state="result", result={"hits": 2})
    failed = ToolCall(id="c2", name="book", args={}, state="error", result="no slots")
    msgs = [
        msg("1", "assistant", "", T0 + timedelta(minutes=1), [pending]),
        msg("2", "assistant", "Found some.", T0 + timedelta(minutes=1), [done, failed]),
    ]
    assert format_messages(msgs, "m31", counter=COUNTER) == (
        "Mar 3 2026:\n"
        'Tool Call search_vets (9:13 AM): query: "vet Oak Park"\n'
        "Assistant: Found some.\n"
        'Tool Result search_vets: {\n  "hits": 2\n}\n'
        "Tool Call book\n"
        "Tool Error book: no slots"
    )


def test_m31_tool_result_truncated_to_5000_tokens():
    big = " ".join(f"word{i}" for i in range(20_000))
    total = COUNTER.count_string(big)
    call = ToolCall(id="c1", name="fetch", args={"url": "x"}, state="result", result=big)
    out = format_messages([msg("1", "assistant", "", T0, [call])], "m31", counter=COUNTER)
    result_line = out.split("Tool Result fetch: ", 1)[1]
    body, note = result_line.rsplit("\n... [truncated ~", 1)
    assert note == f"{total - 5000} tokens]"
    assert COUNTER.count_string(body) <= 5000 and big.startswith(body[:1000])


def test_m31_small_tool_result_not_truncated():
    call = ToolCall(id="c1", name="fetch", args={}, state="result", result="short")
    assert "truncated" not in format_messages([msg("1", "assistant", "", T0, [call])], "m31", counter=COUNTER)


def test_m31_encrypted_content_stripped_and_long_args_outlined():
    result = {"encryptedContent": "z" * 300, "ok": True}
    args = {"text": "y" * 200, "nested": {"a": [1, 2]}}
    call = ToolCall(id="c1", name="t", args=args, state="result", result=result)
    out = format_messages([msg("1", "assistant", "", T0, [call])], "m31", counter=COUNTER)
    assert "[stripped encryptedContent: 300 characters]" in out and "zzzz" not in out
    assert "text: <string, 200 characters; preview size-limited>" in out
    assert "nested.a[0]: 1" in out and "nested.a[1]: 2" in out


def test_m31_temporal_gap_marker_messages_render_as_plain_lines():
    gap = msg("__temporal_gap_1", "user", "2 hours later — 03/03/2026, 11:12 AM", T0)
    out = format_messages([gap, msg("2", "user", "back", T0)], "m31", counter=COUNTER)
    assert out == "Mar 3 2026:\n2 hours later — 03/03/2026, 11:12 AM\nUser (9:12 AM): back"


def test_m11_format_with_tools_untruncated():
    big = "x " * 12_000
    call = ToolCall(id="c1", name="search", args={"q": "vets"}, state="result", result={"text": big})
    msgs = [
        msg("1", "user", "Find vets", T0 + timedelta(hours=5, minutes=18)),
        msg("2", "assistant", "Here you go", T0 + timedelta(hours=5, minutes=19), [call]),
    ]
    out = format_messages(msgs, "m11")
    first, second = out.split("\n\n---\n\n")
    assert first == "**User (Mar 3, 2026, 2:30 PM):**\nFind vets"
    assert second.startswith("**Assistant (Mar 3, 2026, 2:31 PM):**\nHere you go\n[Tool Call: search]\n{\n  \"q\": \"vets\"\n}\n[Tool Result: search]\n")
    assert big.strip() in second and "truncated" not in second


def test_max_part_chars_cuts_text_parts():
    out = format_messages([msg("1", "user", "a" * 600, T0)], "m31", counter=COUNTER, max_part_chars=500)
    assert out.endswith("a" * 500 + "\n... [truncated 100 characters]")  # Mastra's maybeTruncate marker


def test_max_part_chars_counts_utf16_units_as_mastra():
    # JavaScript's String.length counts 2 units for an emoji: 300 emoji are 600 units, cut at 500 units
    out = format_messages([msg("1", "user", "\U0001F600" * 300, T0)], "m11", counter=COUNTER, max_part_chars=500)
    assert out.endswith("\U0001F600" * 250 + "\n... [truncated 100 characters]")
    short = format_messages([msg("1", "user", "\U0001F600" * 250, T0)], "m11", counter=COUNTER, max_part_chars=500)
    assert "truncated" not in short


def test_bad_inputs():
    naive = Message(id="n", role="user", content="x", created_at=datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="timezone-aware"):
        format_messages([naive], "m31")
    with pytest.raises(ValueError, match="profile"):
        format_messages([], "m12")
