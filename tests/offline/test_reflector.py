"""The offline Reflector's near-duplicate rule, checked against the plain pairwise definition."""

from __future__ import annotations

import random

import pytest

from bench.offline.reflector import _repeated_later


@pytest.mark.parametrize("share", [0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 1.0])
def test_postings_give_the_pairwise_answer(share: float) -> None:
    rng = random.Random(3)
    vocab = [f"w{i}" for i in range(40)]
    for _ in range(200):
        later_sets = [set(rng.sample(vocab, rng.randint(0, 6))) for _ in range(rng.randint(0, 12))]
        words = set(rng.sample(vocab, rng.randint(1, 6)))
        postings: dict[str, list[int]] = {}
        for j, ws in enumerate(later_sets):
            for w in ws:
                postings.setdefault(w, []).append(j)
        pairwise = any(len(words & w) / len(words) >= share for w in later_sets)
        assert _repeated_later(words, later_sets, postings, share) == pairwise
