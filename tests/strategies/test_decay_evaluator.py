"""decay's evaluator (bench.strategies.decay_evaluator): seed 004's rule-based scores and the tolerant parsing of
what real models answer to the evaluator request."""

from __future__ import annotations

import pytest

from bench.strategies.decay_evaluator import parse_scores, rule_scores

VOLATILE = "The weather is lovely today and I am temporarily staying at a hostel right now."
IMPORTANT = "My name is Dana, I am allergic to peanuts and I always prefer green tea."


def test_rule_scores_follow_the_seed_rules():
    plain = rule_scores("ok see you", "assistant")
    assert (plain.importance, plain.volatility) == (0.3, 0.5)
    assert rule_scores("ok see you", "user").importance == pytest.approx(0.4)  # the user's own words
    assert rule_scores("the price today", "assistant").volatility == pytest.approx(0.9)
    assert rule_scores(VOLATILE, "user").volatility == 1.0  # three cues, capped
    assert rule_scores(IMPORTANT, "user").importance == 1.0
    assert rule_scores("x" * 101, "assistant").importance == pytest.approx(0.35)  # a long message
    s = rule_scores('We adopted a corgi named Tofu and watched "The Long Walk" with Aunt May.', "user")
    assert s.entities == ["the long walk", "tofu", "aunt may"]


@pytest.mark.parametrize("reply", [
    '{"memories": [{"id": 3, "importance": 0.9, "volatility": 0.1, "entities": ["Tofu"]}, '
    '{"id": 4, "importance": 0.2, "volatility": 0.8, "entities": []}]}',
    'Sure! Here are the scores (0-10):\n```json\n[{"id": "3", "importance": "9", "volatility": "1", '
    '"entities": "Tofu"}, {"id": 4, "importance": 2, "volatility": 8}]\n```\nLet me know if you need more.',
    '{"3": {"importance_score": "90%", "volatility_score": 10, "related_entities": ["tofu"]}, '
    '"4": {"importanceScore": 20, "volatilityScore": 80}}',
])
def test_parse_scores_reads_what_real_models_write(reply):
    got, problem = parse_scores(reply, [3, 4])
    assert problem is None
    assert (got[3].importance, got[3].volatility) == pytest.approx((0.9, 0.1))
    assert (got[4].importance, got[4].volatility) == pytest.approx((0.2, 0.8))
    assert got[3].entities == ["tofu"]


def test_parse_scores_keeps_complete_entries_of_a_cut_reply_and_names_the_rest():
    cut = '{"memories": [{"id": 3, "importance": 0.9, "volatility": 0.1, "entities": []}, {"id": 4, "importa'
    got, problem = parse_scores(cut, [3, 4, 5])
    assert list(got) == [3] and problem == "evaluator reply misses memories 4, 5"
    got, problem = parse_scores("I'm sorry, I can't rate personal messages.", [3])
    assert got == {} and problem is not None and "\n" not in problem and "no usable scores" in problem
    got, _ = parse_scores('[{"id": 3, "importance": null, "volatility": 0.2}, {"id": 99, "importance": 1, '
                          '"volatility": 0}]', [3])
    assert got == {}  # a null score and an id not asked for are both ignored


def test_rule_scores_of_non_ascii_text_match_cues_as_a_case_blind_search_does():
    # re.I folds some non-ASCII letters onto ASCII ones (the Kelvin sign onto "k", the long s onto "s"): such a
    # text holds a cue although its lower-cased form does not contain it
    kelvin = rule_scores("My api \u212aey is hidden, caf\u00e9 aside", "assistant")
    assert kelvin.importance == pytest.approx(0.6)
    assert rule_scores("I am \u017fitting here ToDay, caf\u00e9 au lait", "assistant").volatility == pytest.approx(0.9)
    assert (rule_scores("caf\u00e9 for everyone", "assistant").importance,
            rule_scores("caf\u00e9 for everyone", "assistant").volatility) == (0.3, 0.5)
    # names: a capital after a lower-case word or a comma and a space; not at a sentence start, not after quotes
    s = rule_scores('Then Mia met Ben Li, Ann and Jo. Later "Zed Zone" came, Q', "user")
    assert s.entities == ["zed zone", "mia", "ben li", "ann", "jo"]


def test_items_from_request_are_the_memory_patterns_matches():
    import random

    from bench.strategies.decay_evaluator import _MEMORY, evaluator_request, items_from_request

    rng = random.Random(30)
    parts = ['<memory id="7" source="user" date="2023/05/20 (Sat) 02:21">\n', '<memory id="12" source="assistant" date="">\n',
             '<memory id="x" source="user" date="d">\n', '<memory id="3" source="user" date="d">', "\n</memory>",
             "</memory>", "\n", "\n\n", "text", " é ", "\u0663", '"', "<memory", "\n</memory", ">"]
    for _ in range(3000):
        text = "".join(rng.choices(parts, k=rng.randint(0, 14)))
        assert items_from_request(text) == [(int(m.group(1)), m.group(2), m.group(4)) for m in _MEMORY.finditer(text)]
    # a request's own text: every memory back, contents holding newlines and tags included
    items = [(1, "user", "a\n</memory>b"), (2, "assistant", ""), (3, "user", "x\n\ny")]
    text = evaluator_request([(i, s, "d", c) for i, s, c in items])[1]["content"]
    assert items_from_request(text) == [(int(m.group(1)), m.group(2), m.group(4)) for m in _MEMORY.finditer(text)]
