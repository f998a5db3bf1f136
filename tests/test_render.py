"""Token rendering of a Prompt (bench.render): message headers + segment ids, memoised, shared with the tokenizer."""

from __future__ import annotations

import random
from typing import Callable

import pytest

from bench.cachesim.trie import common_prefix
from bench.prompt import Prompt
from bench.render import (
    Renderer,
    default_renderer,
    encode_incremental,
    set_default_renderer,
    token_count,
    token_ids,
    prompt_units,
)
from om_core.tokens import default_counter
from tests.helpers.words import W, prompt, word_tokenizer


def test_default_tokenizer_counts_repeated_a() -> None:
    enc = default_counter().encode
    assert len(enc(" a" * 100)) == 100  # o200k: " a" is one token and does not merge
    assert len(enc("user\n")) == 2 and len(enc("system\n")) == 2 and len(enc("assistant\n")) == 2
    p = Prompt()
    p.add("system", " a" * 100)
    p.add("user", " a" * 7)
    # (2 header + 100) + (2 header + 7) = 111
    assert token_count(p) == 111
    assert prompt_units(p)[1].ids is enc(" a" * 100)  # the tokenizer's memoised tuple, not a copy


@pytest.mark.usefixtures("words")
def test_units_layout_and_keys() -> None:
    p = Prompt()
    p.add("system", W("s", 3), breakpoint=True)
    p.add("system", W("t", 2), new_message=False)  # same message: no second header
    p.add("user", W("u", 4))
    units = prompt_units(p)
    assert [u.key[:2] for u in units] == ["h:", units[1].key[:2], units[2].key[:2], "h:", units[4].key[:2]]
    assert [u.block for u in units] == [-1, 0, 1, -1, 2]
    assert [u.breakpoint for u in units] == [False, True, False, False, False]
    assert [len(u.ids) for u in units] == [1, 3, 2, 1, 4]
    assert token_count(p) == 1 + 3 + 2 + 1 + 4 == 11
    assert token_ids(p) == tuple(t for u in units for t in u.ids)
    assert len(p.to_messages()) == 2


@pytest.mark.usefixtures("words")
def test_keys_equal_iff_role_and_text_equal() -> None:
    a = prompt(("user", W("x", 5)))
    b = prompt(("user", W("x", 5)))
    c = prompt(("assistant", W("x", 5)))
    assert prompt_units(a)[1].key == prompt_units(b)[1].key
    assert prompt_units(a)[1].key != prompt_units(c)[1].key
    assert prompt_units(a)[1].ids == prompt_units(c)[1].ids  # same tokens, different key


@pytest.mark.usefixtures("words")
def test_units_memo_invalidated_by_add_reset_and_renderer_switch() -> None:
    p = prompt(("user", W("u", 3)))
    first = prompt_units(p)
    assert prompt_units(p) is first
    p.add("assistant", W("a", 2))
    assert len(prompt_units(p)) == 4 and token_count(p) == 4 + 3
    renderer = default_renderer()
    second = renderer.render(p)
    renderer.reset()
    assert renderer.render(p) is not second and renderer.render(p) == second
    chars = Renderer(lambda text: tuple(ord(ch) for ch in text))  # one token per character
    # "user\n" = 5 chars; "u0 u1 u2" = 8; "assistant\n" = 10; "a0 a1" = 5 -> 28
    assert chars.token_count(p) == 5 + 8 + 10 + 5 and token_count(p) == 7  # the default is untouched
    previous = set_default_renderer(chars)
    try:
        assert token_count(p) == 28 and chars.segment_ids(p.segments[1]) == tuple(map(ord, "a0 a1"))
    finally:
        set_default_renderer(previous)
    assert token_count(p) == 7


def test_common_prefix_matches_naive() -> None:
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randrange(0, 3000)
        a = tuple(rng.randrange(5) for _ in range(n))
        cut = rng.randrange(0, n + 1)
        b = a[:cut] + tuple(rng.randrange(5) for _ in range(rng.randrange(0, 50)))
        sa = rng.randrange(0, 3)
        naive = 0
        while sa + naive < len(a) and naive < len(b) and a[sa + naive] == b[naive]:
            naive += 1
        assert common_prefix(a, sa, b, 0) == naive
        assert common_prefix(b, 0, a, sa) == naive


@pytest.mark.usefixtures("words")
def test_memo_is_not_data() -> None:
    import dataclasses
    import pickle

    p = prompt(("user", W("u", 3)))
    prompt_units(p)
    assert set(dataclasses.asdict(p)) == {"segments", "meta"}
    q = pickle.loads(pickle.dumps(p))
    assert set(vars(q)) == {"segments", "meta"} and q == p and token_count(q) == 4  # nothing else travels


def _tiktoken() -> Callable[[str], tuple[int, ...]]:
    from om_core.tokens import get_encoding

    enc = get_encoding("o200k_base")
    return lambda text: tuple(enc.encode(text, disallowed_special=()))


def test_incremental_encoding_equals_full_encoding_on_random_edits() -> None:
    encode = _tiktoken()
    rng = random.Random(3)
    alphabet = list("abcXYZ \n\n\t.,:;'!?-/()[]<>\"0123456789")
    alphabet += ["é", "日本", "🔴", "\r\n", "  ", "\n\n", "'s", "'ll", "—"]
    used = 0
    for _ in range(4000):
        old = "".join(rng.choice(alphabet) for _ in range(rng.randrange(5, 300)))
        k = rng.randrange(len(old) + 1)
        tail = old[k + rng.randrange(10) :] if rng.random() < 0.3 else ""
        new = old[:k] + "".join(rng.choice(alphabet) for _ in range(rng.randrange(50))) + tail
        ids = encode_incremental(old, encode(old), new, encode, min_cut=0)
        if ids is not None:
            used += 1
            assert ids == encode(new), (old, new)
    assert used > 1000


def test_incremental_encoding_of_a_growing_block_and_its_use_in_rendering() -> None:
    encode = _tiktoken()
    rng = random.Random(5)
    words = ["User", "said", "they", "bought", "a", "bike", "on", "Mar", "3", "2023", "(9:12", "AM):", "’s", "—", "🔴"]

    def conv(i: int) -> str:
        lines = [" ".join(rng.choice(words) for _ in range(rng.randrange(3, 25))) for _ in range(rng.randrange(3, 12))]
        return f'<other-conversation id="c{i}">\n' + "\n".join(lines) + "\n</other-conversation>"

    block = "<other-conversations>\n" + "\n\n".join(conv(i) for i in range(60))
    text = block + "\n</other-conversations>"
    assert encode_incremental(text, encode(text), text + "x", encode) is not None
    for i in range(60, 70):  # the block grows at its end, as om's OTHER-conversations block does
        block += "\n\n" + conv(i)
        new = block + "\n</other-conversations>"
        got = encode_incremental(text, encode(text), new, encode)
        assert got is not None and got == encode(new)
        text = new
        p = Prompt()
        p.add("system", "sys")
        p.add("user", text, key="om:other")
        assert prompt_units(p)[-1].ids == encode(text)  # the rendering (incremental after the first) is exact


def test_segment_memo_is_bounded_by_tokens() -> None:
    renderer = Renderer(word_tokenizer, max_memo_tokens=100)
    for i in range(50):
        p = prompt(("user", W(f"t{i}-", 30)))
        assert renderer.token_count(p) == 31
        assert 30 <= renderer.memo_tokens <= 100
    again = prompt(("user", W("t0-", 30)))  # evicted long ago: rendered again, same ids
    assert renderer.render(again)[1].ids == word_tokenizer(W("t0-", 30)) and renderer.token_count(again) == 31


def test_segment_tokens_count_each_text_as_the_counter_does() -> None:
    """The per-segment counts om's prompt split reads equal tokens(text) of every segment, headers excluded,
    for the default renderer and for a custom tokenizer; and a StrategyContext takes them from the rendering
    only when the renderer tokenises with its own counter."""
    from bench.strategies.base import StrategyContext

    counter = default_counter()
    p = Prompt()
    p.add("system", "You are helpful.")
    p.add("user", "first line\nsecond 🔴 line", key="msg:a")
    p.add("user", "", key="om:empty")
    p.add("assistant", "ok " * 50, key="msg:b")
    want = [len(counter.encode(s.text)) for s in p.segments]
    assert default_renderer().segment_tokens(p) == want
    assert sum(want) < token_count(p)  # headers are not in the per-segment counts
    words = Renderer(word_tokenizer)
    assert words.segment_tokens(p) == [len(word_tokenizer(s.text)) for s in p.segments]
    ctx = StrategyContext(models={}, embed=None, counter=counter, actor_model="gpt-4o", max_input_tokens=128_000,
                          output_budget=800, system_prompt="", resource_id="r")
    assert ctx.segment_tokens(p) == want
    previous = set_default_renderer(words)  # a renderer with another tokenizer: the context counts itself
    try:
        assert ctx.segment_tokens(p) == want
    finally:
        set_default_renderer(previous)


def test_remembered_ids_are_rendered_without_tokenising() -> None:
    calls: list[str] = []

    def tok(text: str) -> tuple[int, ...]:
        calls.append(text)
        return tuple(range(len(text.split())))

    r = Renderer(tok)
    r.remember("user", "three words here", (7, 8, 9))
    p = Prompt()
    p.add("user", "three words here")
    assert [u.ids for u in r.render(p) if u.block >= 0] == [(7, 8, 9)]
    assert "three words here" not in calls
    r.remember("user", "three words here", (1,))  # an entry already held is kept
    p2 = Prompt()
    p2.add("user", "three words here", key="other")
    assert r.token_count(p2) == len(r.header_ids("user")) + 3
