"""anthropic: breakpoints, 20-block lookback, max 4 breakpoints, per-model minimum, 5m/1h TTL, premiums."""

from __future__ import annotations

import pytest

from bench.cachesim import make_simulator
from bench.cachesim.trie import count_nodes
from bench.prompt import Prompt
from tests.helpers.words import W, prompt

pytestmark = pytest.mark.usefixtures("words")


def conv(n_msgs: int, bps: set[int], sys_words: int = 1500) -> Prompt:
    """Block 0 = system (sys_words words), block k = user message m_k (10 words); bps = blocks marked.

    Block ends: system 1 + sys_words; m_k: 1 + sys_words + 11k (1 header + 10 words each)."""
    p = Prompt()
    p.add("system", W("s", sys_words), breakpoint=0 in bps)
    for k in range(1, n_msgs + 1):
        p.add("user", W(f"m{k}_", 10), breakpoint=k in bps)
    return p


SYS_END = 1501


def end(k: int) -> int:
    return SYS_END + 11 * k


def test_write_then_read_with_premiums() -> None:
    sim = make_simulator("anthropic", input_per_token=1e-6)
    p = prompt(("system", W("s", 2000), True), ("user", W("u", 10)))  # 2001 + 11 = 2012 tokens
    r = sim.observe(0, p)
    assert (r.prompt_tokens, r.cached_tokens, r.write_tokens, r.prefill_tokens) == (2012, 0, 2001, 2012)
    assert r.cost_usd == pytest.approx((11 + 1.25 * 2001) * 1e-6)  # 11 + 2501.25
    r = sim.observe(60, p)
    assert (r.cached_tokens, r.write_tokens, r.prefill_tokens) == (2001, 0, 11)
    assert r.cost_usd == pytest.approx((11 + 0.1 * 2001) * 1e-6)  # 211.1e-6


def test_one_hour_ttl_costs_2x() -> None:
    sim = make_simulator("anthropic_1h", input_per_token=1e-6)
    p = prompt(("system", W("s", 2000), True), ("user", W("u", 10)))
    assert sim.observe(0, p).cost_usd == pytest.approx((11 + 2.0 * 2001) * 1e-6)
    assert sim.observe(3000, p).cached_tokens == 2001  # still live after 50 min
    assert sim.observe(3000 + 3600, p).cached_tokens == 0


def test_five_minute_ttl_refreshed_on_hit() -> None:
    sim = make_simulator("anthropic")
    p = prompt(("system", W("s", 2000), True))
    assert sim.observe(0, p).cached_tokens == 0
    assert sim.observe(299, p).cached_tokens == 2001
    assert sim.observe(598, p).cached_tokens == 2001  # 598 s after the write, 299 after the hit
    r = sim.observe(898, p)  # 300 s idle: expired, written again
    assert (r.cached_tokens, r.write_tokens) == (0, 2001)


def test_lookback_finds_entry_three_blocks_back() -> None:
    sim = make_simulator("anthropic")
    sim.observe(0, conv(1, {1}))  # writes the prefix through m1 (end 1512)
    r = sim.observe(10, conv(4, {4}))  # breakpoint on m4: checks m4, m3, m2, m1 -> hit at m1
    assert (r.prompt_tokens, r.cached_tokens) == (end(4), end(1))  # 1545, 1512
    assert r.write_tokens == end(4) - end(1) == 33


def test_lookback_window_is_20_blocks() -> None:
    sim = make_simulator("anthropic")
    sim.observe(0, conv(1, {1}))
    assert sim.observe(1, conv(21, {21})).cached_tokens == end(1)  # m1 is 20 blocks before m21: found
    sim = make_simulator("anthropic")
    sim.observe(0, conv(1, {1}))
    r = sim.observe(1, conv(22, {22}))  # m1 is 21 blocks before m22: not found
    assert (r.cached_tokens, r.write_tokens) == (0, end(22))  # 1743 written


def test_lookback_is_configurable() -> None:
    sim = make_simulator("anthropic", lookback_blocks=2)
    sim.observe(0, conv(1, {1}))
    assert sim.observe(1, conv(4, {4})).cached_tokens == 0  # m1 is 3 back, window is 2


def test_only_the_last_four_breakpoints_count() -> None:
    sim = make_simulator("anthropic")
    r = sim.observe(0, conv(5, {0, 1, 2, 3, 4, 5}))  # 6 marked: system and m1 are ignored
    assert r.write_tokens == end(5) == 1556
    r = sim.observe(1, conv(1, {1}))  # looks at m1 and system: neither was written
    assert r.cached_tokens == 0
    assert sim.observe(2, conv(2, {2})).cached_tokens == end(2)  # m2 was written: 1523


def test_several_breakpoints_read_the_longest_and_write_the_rest() -> None:
    sim = make_simulator("anthropic")
    sim.observe(0, conv(3, {0, 3}))
    r = sim.observe(1, conv(30, {0, 3, 30}))  # m3 hit (m30's window [10, 30] has nothing)
    assert (r.cached_tokens, r.write_tokens) == (end(3), end(30) - end(3))


def test_minimum_prefix_per_model() -> None:
    p = prompt(("system", W("s", 2000), True))  # 2001-token prefix
    for model, cached in [
        ("claude-sonnet-4-5", 2001),  # 1024
        ("claude-3-5-haiku-20241022", 0),  # 2048
        ("claude-haiku-4-5", 0),  # 4096
        ("anthropic/claude-opus-4.5", 0),  # 4096
    ]:
        sim = make_simulator("anthropic")
        first = sim.observe(0, p, model=model)
        assert first.write_tokens == (2001 if cached else 0), model
        assert sim.observe(1, p, model=model).cached_tokens == cached, model
    sim = make_simulator("anthropic", min_prefix=3000)
    sim.observe(0, p)
    assert sim.observe(1, p).cached_tokens == 0


def test_no_breakpoint_no_cache_and_auto_breakpoint() -> None:
    p = prompt(("system", W("s", 2000)), ("user", W("u", 10)))  # 2012 tokens, nothing marked
    sim = make_simulator("anthropic")
    assert sim.observe(0, p).write_tokens == 0
    assert sim.observe(1, p).cached_tokens == 0
    auto = make_simulator("anthropic", auto_breakpoint=True)
    assert auto.observe(0, p).write_tokens == 2012  # breakpoint on the last block
    assert auto.observe(1, p).cached_tokens == 2012


def test_stream_isolation() -> None:
    sim = make_simulator("anthropic")
    p = prompt(("system", W("s", 2000), True))
    sim.observe(0, p, stream="actor")
    assert sim.observe(1, p, stream="observer").cached_tokens == 0
    assert sim.observe(2, p, stream="actor").cached_tokens == 2001


def test_prune_keeps_only_paths_to_live_entries() -> None:
    sim = make_simulator("anthropic", prune_every=1)
    sim.observe(0, conv(2, {2}))
    root = sim._roots[("", "actor")]
    assert count_nodes(root) == 2 + 2 * 2  # system header+block, then header+block per message
    sim.observe(1000, prompt(("user", W("x", 3))))  # entry expired at 300; this prompt writes nothing
    assert count_nodes(root) == 0
