"""A fixed, seeded prompt sequence that exercises every simulator path, for the byte-for-byte regression test.

The sequence mimics the strategies: growing histories that reuse Segment objects (and sometimes rebuild equal
ones), a breakpoint that moves to the last message, retrieved items that change, summaries that reset the
history (compaction), a sliding window that renumbers headers, background prompts on other streams, two
models, the same prompt observed twice, and clock gaps from seconds to hours (idle expiry, max lifetime,
TTLs). Profiles are set small (min prefixes, block sizes, vLLM capacity, prune intervals) so that caching,
eviction and pruning all happen at this scale. `golden_results()` is what tests/cachesim/data/golden.json
holds: the CacheResult numbers of every profile for every observe, computed before the speed-ups.
"""

from __future__ import annotations

import random
from typing import Any, Iterator

from bench.cachesim import make_simulator
from bench.prompt import Prompt, Segment
from bench.render import Renderer, set_default_renderer
from tests.helpers.words import word_tokenizer

PROFILES: dict[str, dict[str, Any]] = {
    "ideal": {},
    "openai": {"min_prefix": 64, "block_tokens": 16, "prune_every": 5},
    "openai_24h": {"min_prefix": 64, "block_tokens": 16, "prune_every": 7},
    "openai_gpt56": {"min_prefix": 32, "block_tokens": 8, "prune_every": 3, "ttl_s": 120.0, "max_lifetime_s": 900.0},
    "anthropic": {"min_prefix": 40, "prune_every": 4, "lookback_blocks": 3},
    "anthropic_1h": {"min_prefix": 40, "prune_every": 9, "auto_breakpoint": True, "max_breakpoints": 2},
    "vllm": {"block_size": 4, "capacity_tokens": 600},
}
EXTRA: dict[str, tuple[str, dict[str, Any]]] = {
    "vllm_big": ("vllm", {"block_size": 16, "capacity_tokens": 4000}),
    "vllm_tiny": ("vllm", {"block_size": 1, "capacity_tokens": 50}),
    "anthropic_auto": ("anthropic", {"min_prefix": 1, "auto_breakpoint": True, "lookback_blocks": 1, "prune_every": 2}),
}


def _words(rng: random.Random, tag: str, n: int) -> str:
    return " ".join(f"{tag}{rng.randrange(40)}" for _ in range(n))


def sequence(seed: int = 7, turns: int = 160) -> Iterator[tuple[float, Prompt, str, str]]:
    """(t, prompt, model, stream) in observe order."""
    rng = random.Random(seed)
    t = 0.0
    sys_seg = Segment("system", _words(rng, "s", 30), "sys", True, 0)
    history: list[Segment] = []  # shared objects, like compaction's _segs
    docs: list[Segment] = []
    summary: Segment | None = None
    window_start = 0
    for turn in range(turns):
        t += rng.choice([1, 5, 30, 90, 200, 400, 700, 1500, 4000, 90000]) * (1 if rng.random() < 0.8 else 0.1)
        model = "m1" if rng.random() < 0.85 else "m2"
        kind = rng.random()
        base = [sys_seg] + ([summary] if summary is not None else [])
        idx = len(base)
        if kind < 0.55:  # history agent (full_context / compaction like)
            hist = history[window_start:]
            segs = list(base)
            for _k, s in enumerate(hist):
                if rng.random() < 0.03:  # an equal segment rebuilt as a new object
                    s = Segment(s.role, s.text, s.key, s.breakpoint, s.message_index)
                segs.append(s)
            new = Segment("user", _words(rng, "u", rng.randrange(1, 25)), f"u{turn}", True, idx + len(hist))
            segs.append(new)
            p = Prompt(segments=segs)
        elif kind < 0.8:  # retrieval agent (rag like): items change, positions shift
            p = Prompt(segments=list(base))
            if docs:
                chosen = sorted(rng.sample(range(len(docs)), min(len(docs), rng.randrange(1, 5))))
                p.segments.append(Segment("system", "memories header", "rag:h", False, idx))
                for j, d in enumerate(chosen):
                    p.segments.append(Segment("system", docs[d].text, docs[d].key, j == len(chosen) - 1, idx))
            p.add("user", _words(rng, "q", rng.randrange(1, 12)), key=f"q{turn}", breakpoint=True)
        else:  # background call on its own stream
            p = Prompt()
            p.add("system", "observer instructions " + _words(rng, "o", 20), key="system:0")
            p.add("user", " ".join(s.text for s in history[-rng.randrange(1, 8):]) or "empty", key="user:1")
            yield t, p, model, "observer"
            if rng.random() < 0.3:
                yield t, p, model, "observer"  # the same prompt twice
            continue
        yield t, p, model, "actor"
        if rng.random() < 0.2:
            yield t + 1, p, model, "actor"
        # commit the turn
        for role in ("user", "assistant"):
            history.append(Segment(role, _words(rng, role[0], rng.randrange(2, 30)), f"m{turn}{role[0]}", False,
                                   idx + len(history)))
        docs.append(Segment("system", _words(rng, "d", rng.randrange(3, 40)), f"doc{turn}", False, 0))
        r = rng.random()
        if r < 0.05:  # compaction: a new summary, the history restarts (new positions)
            summary = Segment("system", _words(rng, "S", rng.randrange(5, 30)), f"sum{turn}", True, 1)
            keep = history[-2:]
            history = [Segment(s.role, s.text, s.key, False, 2 + k) for k, s in enumerate(keep)]
            window_start = 0
        elif r < 0.1 and len(history) > 6:  # sliding window drops the oldest messages
            window_start += 2


def golden_results(seed: int = 7, turns: int = 160) -> dict[str, list[list[Any]]]:
    previous = set_default_renderer(Renderer(word_tokenizer))
    try:
        sims = {name: make_simulator(name, **params) for name, params in PROFILES.items()}
        sims.update({name: make_simulator(kind, **params) for name, (kind, params) in EXTRA.items()})
        for sim in sims.values():  # prices, so cost_usd is exercised too
            sim.config.input_per_token = 1e-6
        out: dict[str, list[list[Any]]] = {name: [] for name in sims}
        for t, p, model, stream in sequence(seed, turns):
            for name, sim in sims.items():
                r = sim.observe(t, p, model=model, stream=stream)
                out[name].append([r.prompt_tokens, r.cached_tokens, r.prefill_tokens, r.write_tokens,
                                  round(r.cost_usd, 12)])
        return out
    finally:
        set_default_renderer(previous)
