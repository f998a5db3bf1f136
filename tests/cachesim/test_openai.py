"""openai: 1024 + 128k hits on the longest live prefix, idle TTL with refresh, 1 h cap, 24h retention."""

from __future__ import annotations

import pytest

from bench.cachesim import make_simulator
from bench.cachesim.openai_cache import cacheable
from bench.cachesim.trie import count_nodes
from tests.helpers.words import W, prompt

pytestmark = pytest.mark.usefixtures("words")

BIG = prompt(("system", W("s", 2000)))  # 1 + 2000 = 2001 tokens
BIG_HIT = 1024 + 128 * ((2001 - 1024) // 128)  # 1024 + 128*7 = 1920


def test_rule() -> None:
    assert cacheable(1023) == 0
    assert cacheable(1024) == 1024
    assert cacheable(1151) == 1024  # 1024 + 128*floor(127/128)
    assert cacheable(1152) == 1152  # 1024 + 128*1


@pytest.mark.parametrize("common,expected", [(1023, 0), (1024, 1024), (1151, 1024), (1152, 1152)])
def test_rule_through_the_simulator(common: int, expected: int) -> None:
    sim = make_simulator("openai")
    sim.observe(0, BIG)
    k = common - 1  # the system header is 1 token, then k equal words, then different ones
    other = prompt(("system", W("s", k) + " " + W("z", 2000 - k, start=k)))
    r = sim.observe(1, other)
    assert (r.prompt_tokens, r.cached_tokens, r.prefill_tokens) == (2001, expected, 2001 - expected)


def test_idle_ttl_and_refresh() -> None:
    sim = make_simulator("openai")  # ttl 600 s
    assert sim.observe(0, BIG).cached_tokens == 0
    assert sim.observe(599, BIG).cached_tokens == BIG_HIT  # 599 < 600 idle
    assert sim.observe(1198, BIG).cached_tokens == BIG_HIT  # 1198 s after the write, but 599 after the hit
    assert sim.observe(1798, BIG).cached_tokens == 0  # 600 s idle: expired (then rewritten)
    assert sim.observe(1799, BIG).cached_tokens == BIG_HIT


def test_max_lifetime_one_hour() -> None:
    sim = make_simulator("openai")
    assert sim.observe(0, BIG).cached_tokens == 0
    for t in range(500, 3600, 500):  # hits every 500 s keep it warm ...
        assert sim.observe(t, BIG).cached_tokens == BIG_HIT
    assert sim.observe(3600, BIG).cached_tokens == 0  # ... but it dies 3600 s after it was written
    assert sim.observe(3700, BIG).cached_tokens == BIG_HIT  # rewritten at 3600


def test_24h_retention() -> None:
    short, long_ = make_simulator("openai"), make_simulator("openai_24h")
    for sim in (short, long_):
        sim.observe(0, BIG)
    assert short.observe(7200, BIG).cached_tokens == 0
    assert long_.observe(7200, BIG).cached_tokens == BIG_HIT
    assert long_.observe(7200 + 86400, BIG).cached_tokens == 0  # 24 h idle


def test_dead_prefix_takes_continuations_with_it() -> None:
    sim = make_simulator("openai")
    long_p = prompt(("system", W("s", 1500)), ("user", W("u", 600)))  # 1501 + 601 = 2102
    short_p = prompt(("system", W("s", 1500)))
    sim.observe(0, long_p)
    sim.observe(500, short_p)  # refreshes the system prefix only
    # at 1050 the system prefix is live (idle 550) but the user continuation is not (idle 1050)
    assert sim.observe(1050, long_p).cached_tokens == 1024 + 128 * ((1501 - 1024) // 128) == 1408


def test_costs_default_and_gpt56_writes() -> None:
    # gpt-4o: read 0.5x, writes free and not reported
    sim = make_simulator("openai", input_per_token=1e-6)
    r = sim.observe(0, BIG, model="gpt-4o")
    assert (r.write_tokens, r.cost_usd) == (0, pytest.approx(2001e-6))
    r = sim.observe(1, BIG, model="gpt-4o")
    assert r.cost_usd == pytest.approx((81 + 0.5 * 1920) * 1e-6)  # 2001 - 1920 = 81 uncached
    # GPT-5.6+: 1.25x writes of the newly cacheable prefix; gpt-5 family reads at 0.1x
    sim = make_simulator("openai_gpt56", input_per_token=1e-6)
    r = sim.observe(0, BIG, model="gpt-5.6")
    assert r.write_tokens == 1920
    assert r.cost_usd == pytest.approx((2001 - 1920 + 1.25 * 1920) * 1e-6)  # 81 + 2400 = 2481
    r = sim.observe(1, BIG, model="gpt-5.6")
    assert (r.cached_tokens, r.write_tokens) == (1920, 0)
    assert r.cost_usd == pytest.approx((81 + 0.1 * 1920) * 1e-6)  # 273e-6


def test_stream_isolation() -> None:
    sim = make_simulator("openai")
    sim.observe(0, BIG, model="gpt-4o", stream="actor")
    assert sim.observe(1, BIG, model="gpt-4o", stream="observer").cached_tokens == 0
    assert sim.observe(2, BIG, model="gpt-4o", stream="actor").cached_tokens == BIG_HIT


def test_prune_drops_expired_entries() -> None:
    sim = make_simulator("openai", prune_every=1)
    for i in range(5):
        sim.observe(i, prompt(("user", W(f"x{i}_", 10))))
    root = sim._roots[("", "actor")]
    assert count_nodes(root) == 1 + 5  # one shared "user" header node + 5 segment nodes
    sim.observe(10_000, prompt(("user", W("y", 3))))  # everything else idle > 600 s
    assert count_nodes(root) == 1 + 1  # the refreshed header and the new segment
