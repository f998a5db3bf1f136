"""Byte-for-byte regression: a fixed prompt sequence gives the same CacheResults as before the speed-ups.

tests/cachesim/data/golden.json was computed by the simulators as first written (before the incremental
matching, cached walks and the lazy vLLM pool); see tests/cachesim/regression_seq.py for the sequence.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from itertools import repeat, takewhile
from pathlib import Path

import pytest

from bench.cachesim import make_simulator
from bench.prompt import Prompt
from tests.cachesim.regression_seq import golden_results, sequence

GOLDEN = Path(__file__).parent / "data" / "golden.json"


def test_fixed_sequence_gives_the_golden_cache_results() -> None:
    want = json.loads(GOLDEN.read_text())
    got = golden_results(want["seed"], want["turns"])
    assert set(got) == set(want["results"])
    for name, rows in want["results"].items():
        for i, (a, b) in enumerate(zip(got[name], rows)):
            assert a == b, f"{name}: observe #{i} gave {a}, golden {b}"
        assert len(got[name]) == len(rows), name


class _OrderedDictVLLM:
    """The vLLM pool as first written: every block of every request moved in an OrderedDict (the reference
    for the lazy pool). Block hashes come from a simulator of the same config (only its hash memo is used)."""

    def __init__(self, **params: object) -> None:
        self.hasher = make_simulator("vllm", **params)
        self.cfg = self.hasher.config
        self.pools: dict[str, OrderedDict[int, None]] = {}

    def observe(self, t: float, prompt: Prompt, model: str, stream: str) -> tuple[int, int]:
        cfg = self.cfg
        hashes, n = self.hasher.block_hashes(prompt, model, stream)
        pool = self.pools.setdefault(model, OrderedDict())
        hits = len(list(takewhile(pool.__contains__, hashes)))
        cap = (n - 1) // cfg.block_size * cfg.block_size if n > 0 else 0
        new_rev = hashes[hits:][::-1]
        for h in new_rev:
            pool.pop(h, None)
        pool.update(zip(new_rev, repeat(None)))
        for h in hashes[:hits][::-1]:
            pool.move_to_end(h)
        for _ in range(max(0, len(pool) - cfg.capacity_tokens // cfg.block_size)):
            pool.popitem(last=False)
        return n, min(hits * cfg.block_size, cap)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    "params",
    [
        {"block_size": 1, "capacity_tokens": 40},
        {"block_size": 2, "capacity_tokens": 150},
        {"block_size": 4, "capacity_tokens": 0},
        {"block_size": 4, "capacity_tokens": 700},
        {"block_size": 8, "capacity_tokens": 3000},
    ],
)
def test_lazy_vllm_pool_equals_the_ordered_dict_lru(words: None, seed: int, params: dict) -> None:
    sim = make_simulator("vllm", **params)
    ref = _OrderedDictVLLM(**params)
    for i, (t, p, model, stream) in enumerate(sequence(seed, 120)):
        r = sim.observe(t, p, model=model, stream=stream)
        assert (r.prompt_tokens, r.cached_tokens) == ref.observe(t, p, model, stream), f"observe #{i}"


def test_lazy_vllm_pool_sweeps_stale_heap_entries(words: None) -> None:
    sim = make_simulator("vllm", block_size=1, capacity_tokens=10_000)
    ref = _OrderedDictVLLM(block_size=1, capacity_tokens=10_000)
    from tests.helpers.words import W, prompt

    a, b = prompt(("user", W("a", 30))), prompt(("user", W("b", 30)))
    for t in range(3000):  # the same two prompts again and again: each re-stamps a cached leaf
        p = a if t % 2 else b
        r = sim.observe(t, p)
        assert (r.prompt_tokens, r.cached_tokens) == ref.observe(t, p, "", "actor")
    pool = sim._pools[""]
    assert len(pool.heap) <= 2 * len(pool) + 1025
