"""Pure resource-scope helpers: obscured ids, thread selection/batching, section merging, other block."""

from datetime import datetime, timedelta, timezone

from om_core.context import message_boundary
from om_core.scopes import (
    HASH_NAME,
    merge_thread_sections,
    obscure_thread_id,
    other_conversations_block,
    select_threads,
)
from om_core.types import Message

T0 = datetime(2026, 3, 3, 9, 0, tzinfo=timezone.utc)
B = message_boundary(T0)


def test_obscured_ids_are_stable_8_hex():
    a = obscure_thread_id("answer_4be1b6b4_2")
    assert a == obscure_thread_id("answer_4be1b6b4_2") and len(a) == 8 and int(a, 16) >= 0
    assert a != obscure_thread_id("answer_4be1b6b4_3")
    if HASH_NAME == "xxh32":
        assert obscure_thread_id("abc") == "32d153ff"  # xxhash32("abc", seed 0)


def test_select_largest_first_then_batches_oldest_first():
    counts = {"a": 500, "b": 9000, "c": 4000, "d": 3000, "e": 0}
    oldest = {k: T0 + timedelta(minutes=i) for i, k in enumerate("edcba")}
    batches = select_threads(counts, oldest, threshold=12_000, max_tokens_per_batch=10_000)
    chosen = [t for b in batches for t in b.thread_ids]
    assert set(chosen) == {"b", "c"}  # 9,000 + 4,000 ≥ 12,000; "a", "d", "e" wait
    assert chosen == ["c", "b"]  # oldest message first
    assert [b.thread_ids for b in batches] == [("c",), ("b",)]  # 13,000 > 10,000: two batches, none split
    one = select_threads({"x": 25_000}, {"x": T0}, 30_000, 10_000)
    assert [b.thread_ids for b in one] == [("x",)]  # a thread bigger than a batch still gets its own batch
    small = select_threads({"x": 100, "y": 200}, {"x": T0, "y": T0}, 30_000, 10_000)
    assert [b.thread_ids for b in small] == [("x", "y")]


def test_merge_same_date_into_first_section_else_append_after_boundary():
    existing = '<thread id="t1">\nDate: Mar 3, 2026\n* 🔴 (09:00) a\n</thread>'
    same = merge_thread_sections(existing, [("t1", "Date: Mar 3, 2026\n* 🔴 (10:00) b")], B)
    assert same == '<thread id="t1">\nDate: Mar 3, 2026\n* 🔴 (09:00) a\n* 🔴 (10:00) b\n</thread>'
    b2, b3 = message_boundary(T0 + timedelta(days=1)), message_boundary(T0 + timedelta(days=2))
    later = merge_thread_sections(same, [("t1", "Date: Mar 4, 2026\n* c"), ("t2", "Date: Mar 4, 2026\n* d")], [b2, b3])
    # each appended section follows its own boundary (Mastra appends thread by thread)
    assert later == same + b2 + '<thread id="t1">\nDate: Mar 4, 2026\n* c\n</thread>' + b3 + \
        '<thread id="t2">\nDate: Mar 4, 2026\n* d\n</thread>'
    assert merge_thread_sections("", [("t1", "* x")], B) == '<thread id="t1">\n* x\n</thread>'
    assert merge_thread_sections(existing, [("t1", "   ")], B) == existing


def test_merge_follows_mastra_first_section_rule():
    first = '<thread id="t1">\nDate: Mar 3, 2026\n* a\nDate: Mar 5, 2026\n* b\n</thread>'
    text = first + B + '<thread id="t2">\nDate: Mar 5, 2026\n* x\n</thread>' + B + '<thread id="t1">\nDate: Mar 9, 2026\n* c\n</thread>'
    # the new lines join the thread's FIRST section when it holds that date anywhere, other headers included
    out = merge_thread_sections(text, [("t1", "Date: Mar 3, 2026\n* d\nDate: Mar 4, 2026\n* e")], B)
    assert out.startswith('<thread id="t1">\nDate: Mar 3, 2026\n* a\nDate: Mar 5, 2026\n* b\n* d\nDate: Mar 4, 2026\n* e\n</thread>' + B)
    assert out.endswith('<thread id="t1">\nDate: Mar 9, 2026\n* c\n</thread>')
    # the last section's date is not enough, and a section without a date header is appended
    assert merge_thread_sections(text, [("t1", "Date: Mar 9, 2026\n* f")], B).endswith(
        '<thread id="t1">\nDate: Mar 9, 2026\n* c\n</thread>' + B + '<thread id="t1">\nDate: Mar 9, 2026\n* f\n</thread>')
    assert merge_thread_sections(first, [("t1", "* g")], B) == first + B + '<thread id="t1">\n* g\n</thread>'


def test_other_conversations_block():
    msgs = {"s1": [Message("m", "user", "hi", T0)], "s2": []}
    text = other_conversations_block(msgs, lambda ms: "User: hi", obscure=True)
    assert text == f'<other-conversation id="{obscure_thread_id("s1")}">\nUser: hi\n</other-conversation>'
    assert "s1" in other_conversations_block(msgs, lambda ms: "x", obscure=False)
