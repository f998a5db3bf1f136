"""ideal: token-level longest common prefix with any earlier prompt of the same (model, stream)."""

from __future__ import annotations

import pytest

from bench.render import token_count
from bench.cachesim import make_simulator
from bench.prompt import Prompt
from tests.helpers.words import W, prompt

pytestmark = pytest.mark.usefixtures("words")


def test_repeat_and_append() -> None:
    sim = make_simulator("ideal")
    p1 = prompt(("system", W("s", 100)), ("user", W("u", 10)))
    r = sim.observe(0, p1)
    assert (r.prompt_tokens, r.cached_tokens, r.prefill_tokens) == (112, 0, 112)  # (1+100) + (1+10)
    assert sim.observe(1, p1).cached_tokens == 112  # no n-1 cap in the ideal cache
    p2 = prompt(("system", W("s", 100)), ("user", W("u", 10)), ("assistant", W("a", 20)), ("user", W("v", 5)))
    r = sim.observe(2, p2)
    assert (r.prompt_tokens, r.cached_tokens, r.prefill_tokens) == (112 + 21 + 6, 112, 27)


def test_change_in_the_middle_is_token_level() -> None:
    sim = make_simulator("ideal")
    sim.observe(0, prompt(("system", W("s", 100)), ("user", W("u", 10))))
    changed = W("s", 50) + " " + W("z", 50, start=50)  # first 50 words equal
    r = sim.observe(1, prompt(("system", changed), ("user", W("u", 10))))
    assert r.cached_tokens == 1 + 50


def test_match_continues_across_different_segmentation() -> None:
    sim = make_simulator("ideal")
    split = Prompt()
    split.add("system", W("s", 50))
    split.add("system", " " + W("s", 50, start=50), new_message=False)
    split.add("user", W("u", 10))
    sim.observe(0, split)
    whole = prompt(("system", W("s", 100)), ("user", W("u", 10)))
    # the stored units [s0..s49][s50..s99] match inside the new unit [s0..s99], then the keys realign
    assert sim.observe(1, whole).cached_tokens == token_count(whole) == 112


def test_grown_segment_matches_through_old_content() -> None:
    sim = make_simulator("ideal")
    sim.observe(0, prompt(("system", W("s", 100)), ("user", W("u", 10)), ("assistant", W("a", 5))))
    grown = prompt(("system", W("s", 100) + " " + W("x", 30)), ("user", W("u", 10)))
    assert sim.observe(1, grown).cached_tokens == 1 + 100  # old system block is a prefix of the new one


def test_best_of_several_branches() -> None:
    sim = make_simulator("ideal")
    sim.observe(0, prompt(("system", W("s", 10)), ("user", W("p", 40))))
    sim.observe(1, prompt(("system", W("s", 10)), ("user", W("p", 20) + " " + W("q", 5))))
    r = sim.observe(2, prompt(("system", W("s", 10)), ("user", W("p", 30) + " " + W("r", 5))))
    assert r.cached_tokens == 11 + 1 + 30  # the 40-word branch shares 30 words, the other 20


def test_streams_and_models_are_isolated() -> None:
    sim = make_simulator("ideal")
    p = prompt(("system", W("s", 100)))
    sim.observe(0, p, model="m", stream="actor")
    assert sim.observe(1, p, model="m", stream="observer").cached_tokens == 0
    assert sim.observe(2, p, model="other", stream="actor").cached_tokens == 0
    assert sim.observe(3, p, model="m", stream="actor").cached_tokens == 101


def test_cost() -> None:
    sim = make_simulator("ideal", input_per_token=1e-6)
    p = prompt(("system", W("s", 99)))  # 100 tokens
    assert sim.observe(0, p).cost_usd == pytest.approx(100e-6)
    assert sim.observe(1, p).cost_usd == pytest.approx(0.1 * 100e-6)  # read 0.1x


def test_registry_errors() -> None:
    with pytest.raises(ValueError, match="unknown cache profile"):
        make_simulator("nope")
    with pytest.raises(ValueError, match="unknown parameter"):
        make_simulator("ideal", ttl_s=3)
