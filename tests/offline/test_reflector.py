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


def _random_log(rng: random.Random) -> list[str]:
    words = ["bike", "bought", "Mar", "3", "store", "sister", "trip", "Paris", "prefers", "tea", "the", "a"]
    kinds = ["Date: Mar {d}, 2023", "* 🔴 (09:{d}) User {w}", "* 🔴 (10:{d}) User asked {w}", "* 🟡 (11:{d}) {w}",
             "* 🟢 (12:{d}) {w}", "  * -> {w}", '<thread id="t{d}">', "</thread>", "", "* ✅ {w}", "plain {w}"]
    return [rng.choice(kinds).format(d=rng.randint(10, 12), w=" ".join(rng.choices(words, k=rng.randint(1, 8))))
            for _ in range(rng.randint(0, 60))]


def test_one_analysis_serves_every_level() -> None:
    """reflect() analyses a log once and reflects it at several levels: each level's lines equal those of a
    reflection that analyses the log itself."""
    from bench.offline.reflector import RULES, analyse, reflect_lines

    rng = random.Random(11)
    for _ in range(300):
        lines = _random_log(rng)
        shared = analyse(lines)
        for level in RULES:
            assert reflect_lines(lines, level, shared) == reflect_lines(lines, level)


def test_log_tokens_are_counted_exactly() -> None:
    """The size a reflection is checked against (per-line counts summed) is the o200k count of the whole text."""
    from bench.offline.reflector import _tokens
    from om_core import default_counter
    from om_core.formats import format_observer_output

    rng = random.Random(12)
    for _ in range(300):
        text = format_observer_output("\n".join(_random_log(rng)))
        assert _tokens(text) == len(default_counter().encode(text))


def test_one_overlap_pass_gives_every_levels_near_duplicates() -> None:
    """`best_overlaps`, computed once at the loosest share, answers every level's near-duplicate rule as the
    pairwise definition does: a line is superseded when one later line holds at least the level's share of its
    content words."""
    from bench.offline.reflector import RULES, _needed, analyse

    rng = random.Random(13)
    vocab = [f"w{i}" for i in range(25)]
    for _ in range(300):
        lines = [f"* 🟡 (11:{rng.randint(10, 59)}) " + " ".join(rng.sample(vocab, rng.randint(1, 9)))
                 for _ in range(rng.randint(0, 40))] + _random_log(rng)
        rng.shuffle(lines)
        a = analyse(lines)
        for rule in RULES.values():
            if rule.near_dup > 1:
                continue
            pairwise = {i for k, (i, words) in enumerate(a.newest_first)
                        if words and any(len(words & later) / len(words) >= rule.near_dup
                                         for _, later in a.newest_first[:k])}
            got = {i for i, (best, n) in a.overlaps.items() if best >= _needed(rule.near_dup, n)}
            assert got == pairwise
