"""bench.strategies.bm25: removing documents leaves exactly the scores of an index rebuilt from the others."""

from __future__ import annotations

import random

import pytest

from bench.strategies.bm25 import BM25Index, term_counts

WORDS = "dog beach laptop work pixel vet coffee tea walks house rental july keyboard morning".split()


def _doc(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS[: rng.randint(2, len(WORDS))]) for _ in range(rng.randint(0, 12)))


@pytest.mark.parametrize("seed", range(5))
def test_removal_scores_equal_a_rebuild_bit_for_bit(seed):
    rng = random.Random(seed)
    idx, live = BM25Index(), {}  # live: doc id -> text
    for step in range(300):
        if live and rng.random() < 0.35:
            doc = rng.choice(sorted(live))
            idx.remove(doc)
            del live[doc]
        else:
            text = _doc(rng)
            live[idx.add_counts(term_counts(text))] = text
        if step % 10:
            continue
        rebuilt, ids = BM25Index(), list(live)  # the remaining documents, in their order
        for d in ids:
            rebuilt.add_counts(term_counts(live[d]))
        assert len(idx) == len(rebuilt) == len(ids)
        assert set(idx.postings) == set(rebuilt.postings)  # the vocabulary shrinks too (it sets the idf floor)
        for query in (_doc(rng), "dog dog beach", "tea"):
            got, want = idx.scores_counts(term_counts(query)), rebuilt.scores_counts(term_counts(query))
            assert got == {ids[d]: s for d, s in want.items()}  # exact floats, not approx


def test_removing_twice_is_a_no_op():
    idx = BM25Index()
    a = idx.add(["x", "y"])
    idx.add(["y"])
    idx.remove(a)
    idx.remove(a)
    assert len(idx) == 1 and set(idx.postings) == {"y"}
