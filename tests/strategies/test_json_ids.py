"""full_context's JSON session content is tokenised from its messages' ids (bench.strategies.json_ids): the ids
must be tiktoken's for the whole text, on real sessions and on random texts built to hit every escape and
split rule (quotes, backslashes, newlines, tabs, non-ASCII, runs of spaces, contractions, digits)."""

from __future__ import annotations

import random

import pytest

from bench.strategies.json_ids import json_content_ids, json_content_text
from om_core.tokens import TokenCounter, get_encoding
from tests.helpers.strategies import s_dataset

ENCODINGS = ("o200k_base", "cl100k_base")


def _check(messages: list[tuple[str, str]], counter: TokenCounter, prime: bool = True) -> None:
    if prime:  # as in a replay: the turns were counted first
        for _, text in messages:
            counter.encode(text)
    text = json_content_text(messages)
    want = tuple(get_encoding(counter.encoding_name).encode(text, disallowed_special=()))
    assert json_content_ids(text, messages, counter) == want


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_real_sessions_match_tiktoken(encoding: str) -> None:
    counter = TokenCounter(encoding)
    sessions = 0
    for inst in s_dataset().instances[:3]:
        for sess in inst.sessions:
            msgs = [(t.role, t.content) for t in sess.turns if t.content and t.content.strip()]
            if msgs:
                _check(msgs, counter)
                sessions += 1
    assert sessions > 100


_ALPHABET = (
    list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    + [" ", " ", " ", "  ", "\n", "\n\n", "\t", '"', "\\", "'", "'s", "'ll", ".", ",", ":", "*", "-", "/", "(", ")",
       "é", "ü", "’", "“", "—", "日本", "😀", "\u00a0", "\x7f", "\x01", "<|endoftext|>", "\\n", "http://x.y/z"]
)


def _random_text(rng: random.Random) -> str:
    words = []
    for _ in range(rng.randint(0, 60)):
        if rng.random() < 0.5:
            words.append("".join(rng.choice(_ALPHABET[:62]) for _ in range(rng.randint(1, 9))))
        else:
            words.append(rng.choice(_ALPHABET))
    return "".join(w + (" " if rng.random() < 0.6 else "") for w in words)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_random_texts_match_tiktoken(encoding: str) -> None:
    rng = random.Random(30)
    counter = TokenCounter(encoding)
    for k in range(1500):
        msgs = [(rng.choice(("user", "assistant")), _random_text(rng)) for _ in range(rng.randint(1, 4))]
        _check(msgs, counter, prime=k % 3 != 0)


def test_a_text_that_is_not_the_messages_json_is_tokenised_whole() -> None:
    counter = TokenCounter("o200k_base")
    msgs = [("user", "I moved to Lisbon last spring and I like it there a lot. " * 3)]
    other = json_content_text(msgs).replace("Lisbon", "Porto")
    assert json_content_ids(other, msgs, counter) == counter.encode(other)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_the_token_byte_table_is_the_same_without_tiktokens_private_ranks(encoding: str) -> None:
    """json_ids reads tiktoken's private `_mergeable_ranks` when it has one; without it (another tiktoken), the
    public per-id call must build the same table."""
    import numpy as np

    from bench.strategies import json_ids

    json_ids._TOKEN_BYTES.pop(encoding, None)
    fast = json_ids._token_bytes(encoding).copy()

    class Public:  # the encoding without its private table
        def __init__(self, enc):
            self._enc = enc

        def __getattr__(self, name):
            if name == "_mergeable_ranks":
                raise AttributeError(name)
            return getattr(self._enc, name)

    real = json_ids.get_encoding
    json_ids._TOKEN_BYTES.pop(encoding, None)
    json_ids.get_encoding = lambda name: Public(real(name))  # type: ignore[assignment]
    try:
        slow = json_ids._token_bytes(encoding)
    finally:
        json_ids.get_encoding = real  # type: ignore[assignment]
        json_ids._TOKEN_BYTES.pop(encoding, None)
    assert np.array_equal(fast, slow) and fast.sum() > 0
