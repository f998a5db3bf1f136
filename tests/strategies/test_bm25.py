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


@pytest.mark.parametrize("seed", range(3))
def test_top_is_the_first_k_of_every_score_sorted_best_first_ties_older_first(seed):
    """top_counts (the k-th best score found first, then only the documents reaching it sorted) equals the plain
    definition: every matching document not excluded, by (score, -id) descending, the first k; with small
    vocabularies many scores tie exactly, and rank_bm25's floor makes some negative or zero."""
    rng = random.Random(seed)
    idx = BM25Index()
    for step in range(200):
        idx.add_counts(term_counts(_doc(rng)))
        query = term_counts(_doc(rng))
        exclude = set(rng.sample(range(step + 1), min(step + 1, rng.randint(0, 4))))
        sc = {d: s for d, s in idx.scores_counts(query).items() if d not in exclude}
        for k in (1, 3, 10, 50):
            want = [d for _, d in sorted(((s, -d) for d, s in sc.items()), reverse=True)[:k]]
            assert idx.top_counts(query, k, exclude) == [-d for d in want]
