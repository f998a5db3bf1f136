"""vllm: 16-token full blocks, hash chain, n-1 cap, LRU eviction (tail blocks first), stream salt."""

from __future__ import annotations

import pytest

from bench.cachesim import make_simulator
from bench.prompt import Prompt
from tests.helpers.words import W, prompt

pytestmark = pytest.mark.usefixtures("words")


def test_block_aligned_prompt_recomputes_its_last_block() -> None:
    sim = make_simulator("vllm")
    p = prompt(("user", W("u", 31)))  # 1 + 31 = 32 tokens = 2 full blocks
    assert sim.observe(0, p).cached_tokens == 0
    r = sim.observe(1, p)
    # both blocks hit (32) but at most n-1 = 31 -> floor(31/16)*16 = 16
    assert (r.cached_tokens, r.prefill_tokens) == (16, 16)


def test_unaligned_prompt_caches_full_blocks_only() -> None:
    sim = make_simulator("vllm")
    p = prompt(("user", W("u", 39)))  # 40 tokens: 2 full blocks + 8
    sim.observe(0, p)
    r = sim.observe(1, p)
    assert (r.cached_tokens, r.prefill_tokens) == (32, 8)  # cap floor(39/16)*16 = 32 does not bind


def test_growth_and_divergence_inside_a_block() -> None:
    sim = make_simulator("vllm")
    sim.observe(0, prompt(("user", W("u", 39))))  # blocks [0,16) [16,32) cached; 8-token tail not
    assert sim.observe(1, prompt(("user", W("u", 60)))).cached_tokens == 32  # 61 tokens, 3 blocks, 2 hit
    # 1 header + 20 equal words = 21 equal tokens: block [0,16) equal, [16,32) differs
    diverged = prompt(("user", W("u", 20) + " " + W("z", 40, start=20)))
    assert sim.observe(2, diverged).cached_tokens == 16


def test_blocks_span_segments_and_hashes_ignore_segmentation() -> None:
    sim = make_simulator("vllm")
    sim.observe(0, prompt(("system", W("s", 10)), ("user", W("u", 30))))  # 11 + 31 = 42 tokens
    split = Prompt()
    split.add("system", W("s", 4))
    split.add("system", " " + W("s", 6, start=4), new_message=False)
    split.add("user", W("u", 30))
    # same 42 tokens through a different unit path: 2 full blocks hit, cap floor(41/16)*16 = 32
    assert sim.observe(1, split).cached_tokens == 32


def test_lru_eviction_drops_tail_blocks_first() -> None:
    sim = make_simulator("vllm", capacity_tokens=64)  # 4 blocks
    a, b = prompt(("user", W("a", 47))), prompt(("user", W("b", 47)))  # 48 tokens = 3 blocks each
    sim.observe(0, a)  # pool (LRU first): a2 a1 a0
    sim.observe(1, b)  # a2 a1 a0 b2 b1 b0 -> evict a2, a1 -> a0 b2 b1 b0
    assert sim.observe(2, a).cached_tokens == 16  # a0 hits, a1 missing
    # pool after: b2 b1 b0 a2 a1 a0 -> evict b2, b1 -> b0 a2 a1 a0
    assert sim.observe(3, b).cached_tokens == 16


def test_lru_touch_protects_recently_used_prompt() -> None:
    sim = make_simulator("vllm", capacity_tokens=96)  # 6 blocks
    a, b, c = (prompt(("user", W(x, 47))) for x in "abc")
    sim.observe(0, a)
    sim.observe(1, b)  # pool full: a2 a1 a0 b2 b1 b0
    assert sim.observe(2, a).cached_tokens == 32  # 3 hit, cap floor(47/16)*16 = 32; a moves to the tail
    sim.observe(3, c)  # evicts b2 b1 b0
    assert sim.observe(4, a).cached_tokens == 32
    assert sim.observe(5, b).cached_tokens == 0


def test_streams_are_salted_but_share_the_pool() -> None:
    sim = make_simulator("vllm", capacity_tokens=48)  # 3 blocks per model
    p = prompt(("user", W("u", 47)))  # 3 blocks
    sim.observe(0, p, model="m", stream="actor")
    assert sim.observe(1, p, model="m", stream="observer").cached_tokens == 0  # salted: its own 3 blocks ...
    assert sim.observe(2, p, model="m", stream="actor").cached_tokens == 0  # ... which evicted the actor's
    assert sim.observe(3, p, model="other", stream="actor").cached_tokens == 0  # other model: other pool
    assert sim.observe(4, p, model="other", stream="actor").cached_tokens == 32


def test_a_prompt_that_returns_to_an_older_branch_hits_its_blocks() -> None:
    # the stream's previous prompt is on another branch: the lookup leaves the kept path and finds the old one
    sim = make_simulator("vllm", block_size=4)
    base = ("system", W("s", 30))
    a, b = prompt(base, ("user", W("a", 20))), prompt(base, ("user", W("b", 20)))
    assert sim.observe(0, a).cached_tokens == 0
    assert sim.observe(1, b).cached_tokens == 32  # 32 shared tokens (headers included): 8 blocks
    assert sim.observe(2, a).cached_tokens == 48  # 52 tokens: all 13 blocks cached, cap floor(51/4)*4
    assert sim.observe(3, prompt(base, ("user", W("b", 10)))).cached_tokens == 40  # b's first 2 blocks below


def test_cost_counts_prefill_only_by_default() -> None:
    sim = make_simulator("vllm", input_per_token=1e-6)
    p = prompt(("user", W("u", 39)))
    sim.observe(0, p)
    assert sim.observe(1, p).cost_usd == pytest.approx(8e-6)  # 40 - 32 cached; reads cost 0


def test_block_hashes_are_the_chain_over_the_flat_rendering() -> None:
    sim = make_simulator("vllm", block_size=4)
    p = prompt(("system", W("s", 7)), ("user", W("o", 20)))
    hashes, n = sim.block_hashes(p)
    assert n == 29 and len(hashes) == 7 and len(set(hashes)) == 7
    assert sim.block_hashes(p, stream="observer")[0][0] != hashes[0]  # salted by stream


def test_a_dropped_simulator_is_freed_without_the_cycle_collector() -> None:
    # a replay makes fresh simulators per question: their pools (every prompt's tokens) must go when dropped,
    # not wait for a full collection (which would also walk them on every collection until then)
    import gc

    sim = make_simulator("vllm", block_size=4, capacity_tokens=200)
    base = ("system", W("s", 30))
    for t in range(40):
        sim.observe(t, prompt(base, ("user", W(f"q{t % 7}_", 20 + t % 5))))
    gc.collect()
    gc.disable()
    try:
        del sim
        assert gc.collect() == 0
    finally:
        gc.enable()
