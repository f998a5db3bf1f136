"""om_core.overlap's early-stopping copy test against its plain definition."""

from __future__ import annotations

import random

from om_core.overlap import SHINGLE_WORDS, reproduced_share, reproduces
from om_core.testing import synthetic_turns

SHARES = (0.0, 0.05, 0.25, 0.5, 0.8, 0.9, 1.0)


def _text(rng: random.Random, words: list[str], lines: int) -> str:
    out = []
    for _ in range(lines):
        n = rng.choice([0, 2, 7, 8, 9, 12, 20])
        out.append(rng.choice(["", "- ", "* 🔴 (09:12) ", "  "]) + " ".join(rng.choice(words) for _ in range(n)))
    return "\n".join(out)


def test_reproduces_is_reproduced_share_at_least_share_on_random_texts() -> None:
    """Sources and outputs from a small vocabulary (repeated runs, short lines, blank lines), outputs that copy a
    random part of the source's lines with marks added, unrelated outputs and empty ones: the same answer as
    `reproduced_share(...) >= share` for every share, run length and pair."""
    rng = random.Random(3)
    words = ["the", "User", "said", "bike", "bought", "a", "red", "Σίσυφος", "école", "42", "it's", "x_y"]
    checked = copies = 0
    for _ in range(1500):
        source = _text(rng, words, rng.randint(0, 30))
        lines = source.split("\n")
        kept = [ln for ln in lines if rng.random() < rng.random()]
        text = rng.choice([
            "\n".join("* 🔴 " + ln for ln in kept),
            "\n".join(kept) + "\n" + _text(rng, words, rng.randint(0, 5)),
            _text(rng, words, rng.randint(0, 10)),
            source,
            "",
        ])
        for k in (2, 3, SHINGLE_WORDS):
            for share in SHARES:
                plain = reproduced_share(text, source, k=k) >= share
                assert reproduces(text, source, share, k=k) == plain, (text, source, k, share)
                checked += 1
                copies += plain
    assert checked and 0 < copies < checked  # both answers occur


def test_reproduces_on_a_conversation_and_its_copies() -> None:
    """A synthetic conversation's text: a verbatim copy and a marked copy reproduce it, a summary does not, the
    same as the plain definition."""
    source = "\n".join(f"User: {u}\nAssistant: {a}" for _, u, a in synthetic_turns(20, words=60))
    summary = "* 🔴 (09:12) User talked about their week and asked for advice"
    marked = "\n".join("* 🟡 " + line for line in source.split("\n"))
    half = "\n".join(source.split("\n")[: len(source.split("\n")) // 2])
    for text in (source, marked, summary, half):
        for share in SHARES:
            assert reproduces(text, source, share) == (reproduced_share(text, source) >= share)
    assert reproduces(marked, source, 0.8) and not reproduces(summary, source, 0.8)
