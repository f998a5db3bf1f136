"""decay's pure rules (bench.strategies.decay_memory): seed 004's activation formula and its clamp, forgetting,
ranking by activation x relevance, consolidation groups and merged items."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import pytest

from bench.strategies.decay_memory import (
    DecayKnobs,
    MemoryItem,
    activation,
    consolidation_groups,
    forgotten,
    merge_items,
    rank,
)

T0 = datetime(2023, 5, 1, 10, 0, tzinfo=timezone.utc)


def item(i, days_ago=0.0, importance=0.5, volatility=0.5, access=0, entities=(), source="user"):
    at = T0 - timedelta(days=days_ago)
    return MemoryItem(i, f"item {i}", source, "d", at, at, importance, volatility, access, list(entities), turn=i)


def test_activation_is_the_seed_formula_with_its_defaults():
    k = DecayKnobs()
    assert (k.decay_factor, k.importance_weight, k.volatility_weight, k.access_boost) == (0.95, 0.7, 0.3, 0.1)
    want = 0.95 ** 10 * (1 + 0.5 * 0.7) * (1 - 0.2 * 0.3) + math.log10(3 + 1) * 0.1
    assert activation(0.5, 0.2, 10, 3) == pytest.approx(want)
    # older is lower, more important is higher, more volatile is lower, accessed is higher
    assert activation(0.5, 0.5, 30, 0) < activation(0.5, 0.5, 20, 0)
    assert activation(0.9, 0.5, 30, 0) > activation(0.1, 0.5, 30, 0)
    assert activation(0.5, 0.9, 30, 0) < activation(0.5, 0.1, 30, 0)
    assert activation(0.5, 0.5, 30, 5) > activation(0.5, 0.5, 30, 0)


def test_activation_is_clamped_to_zero_and_one():
    assert activation(1.0, 0.0, 0, 0) == 1.0  # 1.7 before the clamp
    assert activation(1.0, 0.0, 0, 1000) == 1.0
    assert activation(0.0, 1.0, 0, 0, DecayKnobs(volatility_weight=2.0)) == 0.0  # -1 before the clamp
    assert activation(0.0, 0.0, -5, 0) == 1.0  # a creation time after `now` counts as age 0
    assert 0 < activation(0.0, 1.0, 200, 0) < 0.001


def test_forgetting_threshold_and_max_age():
    now = T0
    items = [item(0, 40, importance=0.1, volatility=1.0), item(1, 40, importance=1.0, volatility=0.1),
             item(2, 40, importance=0.1, volatility=1.0, access=20), item(3, 5)]
    assert forgotten(items, now, DecayKnobs(), 0.1) == [0]  # the volatile, unimportant, never-used one
    assert forgotten(items, now, DecayKnobs(), 0.1, max_age_days=30) == [0, 1, 2]  # the seed's age cap


def test_rank_is_activation_times_relevance_and_ties_prefer_older():
    a, b, c = item(0, 60), item(1, 0), item(2, 0)
    top = rank([(a, 1.0), (b, 0.5), (c, 0.0)], T0, DecayKnobs(), 5)
    assert [i.id for i in top] == [b.id, a.id]  # b: 1.0 x 0.5 beats a: ~0.05 x 1.0; relevance 0 never ranks
    assert [i.id for i in rank([(c, 0.5), (b, 0.5)], T0, DecayKnobs(), 1)] == [b.id]  # same score: older first


def test_consolidation_groups_share_an_entity_and_take_the_oldest():
    items = [item(i, 10 - i, entities=["biscuit"] if i % 2 == 0 else ["kayak"]) for i in range(7)]
    items.append(item(9, 0, entities=["biscuit"], source="consolidated"))
    groups = consolidation_groups(items, 3, 5)
    assert [[i.id for i in g] for g in groups] == [[0, 2, 4], [1, 3, 5]]  # consolidated items never merge again
    merged = merge_items(20, "summary", [items[0], items[2], items[4]])
    assert merged.source == "consolidated" and merged.merged == [0, 2, 4]
    assert merged.created_at == items[4].created_at and merged.entities == ["biscuit"]
    assert consolidation_groups(items, 5, 1) == []


def _rank_every_item(scored, now, knobs, k):
    """rank() as it was before its early stop: every item's score, sorted."""
    from bench.strategies.decay_memory import item_activation

    ranked = [(-s, i.created_at, i.id, i) for i, r in scored if (s := item_activation(i, now, knobs) * r) > 0]
    ranked.sort(key=lambda x: x[:3])
    return [x[3] for x in ranked[:k]]


@pytest.mark.parametrize("k", [1, 3, 10, 50])
def test_rank_stopping_early_picks_what_scoring_every_item_picks(k):
    import random

    rng = random.Random(k)
    items = [item(i, rng.choice([0, 1, 5, 30, 90]), rng.random(), rng.random(), rng.choice([0, 0, 2, 40]))
             for i in range(200)]
    # repeated relevances and activations make ties, which the early stop must not cut
    scored = [(it, rng.choice([0.0, 0.25, 0.5, 1.0, rng.random()])) for it in items]
    assert rank(scored, T0, DecayKnobs(), k) == _rank_every_item(scored, T0, DecayKnobs(), k)


def test_no_cleanup_before_forget_after_forgets_an_item():
    """forget_after's time is a lower bound of when `forgotten` lists the item: checked at random times and at
    the bound itself (and just after it, where the activation is within rounding of the threshold)."""
    import random

    from bench.strategies.decay_memory import forget_after

    rng = random.Random(7)
    checked = listed = 0
    for n in range(3000):
        knobs = DecayKnobs(rng.choice([0.95, 0.5, 0.999, 0.0001, 1.0]), rng.uniform(0, 2), rng.uniform(0, 1),
                           rng.choice([0.0, 0.1, 0.5]))
        threshold = rng.choice([0.0, 0.1, 0.3, rng.uniform(0, 0.99)])
        max_age = rng.choice([None, None, 0.5, 30.0])
        it = item(n, rng.uniform(-1, 40), importance=rng.uniform(0, 1), volatility=rng.uniform(0, 1),
                  access=rng.choice([0, 0, 1, 3, 50]))
        bound = forget_after(it, knobs, threshold, max_age)
        times = [T0 + timedelta(days=rng.uniform(-5, 60)) for _ in range(5)]
        if math.isfinite(bound):
            at = datetime.fromtimestamp(bound, timezone.utc)
            times += [at - timedelta(microseconds=1), at, at + timedelta(microseconds=1), at + timedelta(seconds=1)]
        for now in times:
            gone = forgotten([it], now, knobs, threshold, max_age) == [it.id]
            listed += gone
            if now.timestamp() < bound:
                checked += 1
                assert not gone, (knobs, threshold, max_age, it, now, bound)
    assert checked > 5000 and listed > 1000  # both sides were exercised


@pytest.mark.parametrize("k", [1, 3, 10])
def test_rank_from_raw_scores_is_rank_of_the_score_over_the_best(k):
    import random

    from bench.strategies.decay_memory import rank_scores

    rng = random.Random(k)
    for _ in range(200):
        items = [item(i, rng.choice([0, 1, 5, 30]), rng.random(), rng.random(), rng.choice([0, 2])) for i in range(40)]
        # BM25 scores: repeated ones, negative ones (idf floor), sometimes none positive
        pool = [rng.uniform(-2, 9), 3.0, 1.5, -0.5, 0.0] if rng.random() < 0.8 else [-1.0, -0.25, 0.0]
        scored = [(it, rng.choice(pool)) for it in items if rng.random() < 0.7]
        best = max((s for _, s in scored), default=0.0)
        relevance = [(it, max(0.0, s) / best if best > 0 else 1.0) for it, s in scored]
        assert rank_scores(scored, T0, DecayKnobs(), k) == rank(relevance, T0, DecayKnobs(), k)


@pytest.mark.parametrize("k", [1, 3, 10])
def test_rank_from_doc_scores_is_rank_scores_of_the_items(k):
    import random

    from bench.strategies.decay_memory import rank_doc_scores, rank_scores

    rng = random.Random(100 + k)
    for _ in range(200):
        items = {i: item(i, rng.choice([0, 1, 5, 30]), rng.random(), rng.random(), rng.choice([0, 2])) for i in range(40)}
        doc_item = rng.sample(range(40), 40)  # document id -> item id, not in item order
        pool = [rng.uniform(-2, 9), 3.0, 1.5, -0.5, 0.0] if rng.random() < 0.8 else [-1.0, -0.25, 0.0]
        docs = [d for d in rng.sample(range(40), 40) if rng.random() < 0.7]  # the matches in any order
        scores = {d: rng.choice(pool) for d in docs}
        plain = rank_scores([(items[doc_item[d]], s) for d, s in scores.items()], T0, DecayKnobs(), k)
        assert rank_doc_scores(scores, items, doc_item, T0, DecayKnobs(), k) == plain


def _groups_rebuilt_each_pass(items, group_size, max_groups):
    """consolidation_groups by its plain definition: each pass regroups the items not taken yet."""
    from collections import defaultdict

    pool = sorted((i for i in items if i.source != "consolidated"), key=lambda i: (i.created_at, i.id))
    taken, groups = set(), []
    while len(groups) < max_groups:
        by_entity = defaultdict(list)
        for it in pool:
            if it.id not in taken:
                for e in dict.fromkeys(it.entities):
                    by_entity[e].append(it)
        ready = [(len(v), e) for e, v in by_entity.items() if len(v) >= group_size]
        if not ready:
            break
        _, entity = min(ready, key=lambda ne: (-ne[0], ne[1]))
        group = by_entity[entity][:group_size]
        taken.update(i.id for i in group)
        groups.append(group)
    return groups


def test_consolidation_groups_match_a_regrouping_per_pass():
    import random

    rng = random.Random(7)
    names = ["ann", "bob", "cat", "dog", "eve", "fox"]
    for _ in range(300):
        items = [item(i, rng.choice([0, 0, 1, 2.5]), entities=rng.choices(names, k=rng.randint(0, 4)),
                      source=rng.choice(["user", "assistant", "consolidated"])) for i in rng.sample(range(60), 40)]
        size, most = rng.randint(2, 5), rng.randint(1, 4)
        assert consolidation_groups(items, size, most) == _groups_rebuilt_each_pass(items, size, most)
