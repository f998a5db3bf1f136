"""`openai`: automatic prompt caching (OpenAI's guide, https://developers.openai.com/api/docs/guides/prompt-caching).

cached = 0 if L < min_prefix else min_prefix + block*floor((L - min_prefix)/block), L = longest common
token prefix with a live entry of the same (model, stream). Every prompt is written whole; an entry dies
after `ttl_s` without use or `max_lifetime_s` after it was written, whichever comes first; a use (the
prompt walking through it) refreshes the idle timer. A prefix that died takes its continuations with it.
Not modelled: machine routing and the ~15 requests/min overflow to other machines (misses).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from datetime import datetime

from bench.render import prompt_units
from bench.cachesim.base import CacheResult
from bench.cachesim.common import Pricing, check_positive, lookup_by_model, result, to_seconds
from bench.cachesim.trie import INF, Node, TimedNode, Walks, match_from, prune, stream_state
from bench.prompt import Prompt

# Cached-input price / input price, by model family (litellm 1.110.2 cost map, BerriAI/litellm
# model_prices_and_context_window.json).
READ_MULTIPLIERS: tuple[tuple[str, float], ...] = (
    ("gpt-4o", 0.5),
    ("gpt-4o-mini", 0.5),
    ("gpt-4.1", 0.25),
    ("o3", 0.25),
    ("o4-mini", 0.25),
    ("gpt-5", 0.1),
)


@dataclass
class OpenAIConfig(Pricing):
    min_prefix: int = 1024  # prompts shorter than this are never cached
    block_tokens: int = 128  # hits grow in blocks of this size above min_prefix
    retention: str = "in_memory"  # "in_memory" | "24h" (prompt_cache_retention)
    ttl_s: float = 600.0  # idle eviction, in-memory ("5-10 min": the upper end)
    max_lifetime_s: float = 3600.0  # in-memory entries never outlive this ("always within 1 h")
    extended_ttl_s: float = 86400.0  # both limits under retention="24h"
    write_multiplier: float = 1.0  # 1.25 for GPT-5.6+ (then write tokens are reported)
    read_multiplier: float | None = None  # None => by model family (READ_MULTIPLIERS)
    default_read_multiplier: float = 0.5  # models not in the table
    prune_every: int = 64  # observes between sweeps of dead entries

    def __post_init__(self) -> None:
        if self.retention not in ("in_memory", "24h"):
            raise ValueError(f"openai: retention must be 'in_memory' or '24h' (got {self.retention!r})")
        check_positive(
            "openai", min_prefix=self.min_prefix, ttl_s=self.ttl_s, max_lifetime_s=self.max_lifetime_s,
            write_multiplier=self.write_multiplier, input_per_token=self.input_per_token,
        )
        if self.block_tokens <= 0:
            raise ValueError(f"openai: block_tokens must be > 0 (got {self.block_tokens})")

    @property
    def idle_s(self) -> float:
        return self.extended_ttl_s if self.retention == "24h" else self.ttl_s

    @property
    def lifetime_s(self) -> float:
        return self.extended_ttl_s if self.retention == "24h" else self.max_lifetime_s

    def read_mult(self, model: str) -> float:
        if self.read_multiplier is not None:
            return self.read_multiplier
        return lookup_by_model(READ_MULTIPLIERS, model, self.default_read_multiplier)

    def multipliers(self, model: str) -> tuple[float, float]:
        return self.read_mult(model), self.write_multiplier


def cacheable(length: int, min_prefix: int = 1024, block: int = 128) -> int:
    """The 1024 + 128k rule: tokens served from a common prefix of `length` tokens."""
    if length < min_prefix:
        return 0
    return min_prefix + block * ((length - min_prefix) // block)


class _Walk(Walks):
    """The last prompt's path in one stream: all its nodes were refreshed at `t` (so they share `last`), and
    born_min[i] is the oldest `born` among path[: i + 1]."""

    __slots__ = ("t", "born_min")

    def __init__(self) -> None:
        super().__init__()
        self.t = 0.0
        self.born_min: list[float] = []


class OpenAISimulator:
    def __init__(self, config: OpenAIConfig | None = None, name: str = "openai") -> None:
        self.name = name
        self.config = config or OpenAIConfig()
        self._roots: dict[tuple[str, str], Node] = {}
        self._walks: dict[tuple[str, str], _Walk] = {}
        self._t_max = -INF
        self._n = 0

    def reset(self) -> None:
        self._roots.clear()
        self._walks.clear()
        self._t_max = -INF

    def observe(self, t: datetime | float, prompt: Prompt, model: str = "", stream: str = "actor") -> CacheResult:
        cfg = self.config
        now, idle, life = to_seconds(t), cfg.idle_s, cfg.lifetime_s

        def live(nd: Node) -> bool:
            return now - nd.last < idle and now - nd.born < life

        if now < self._t_max:
            self._walks.clear()  # the clock went back: a pruned node could look live again; walk from the root
        else:
            self._t_max = now
        units = prompt_units(prompt)
        root, w = stream_state(self._roots, self._walks, (model, stream), _Walk)
        # The previous prompt of this stream walked (and refreshed) path[:k] at w.t. Along that path `born`
        # never decreases with depth (a revived node loses its children), so its live part is a prefix:
        # nothing if w.t is idle-expired, else up to the first node past its max lifetime. Dead or pruned
        # nodes lie after that prefix (a pruned node was dead when pruned, and the clock has not gone back).
        k = w.shared_keys(units)
        path, born_min = w.path, w.born_min
        del path[k:], born_min[k:]
        j = 0
        if k and now - w.t < idle:
            j = k
            if now - born_min[-1] >= life:
                j = bisect_left([now - b >= life for b in born_min], True)
        # match_length's fast path: the live prefix, then children while live
        node, i, m = (path[j - 1] if j else root), j, len(units)
        if j == k:
            while i < m:
                c = node.children.get(units[i].key)
                if c is None or not (now - c.last < idle and now - c.born < life):  # live(c), inlined
                    break
                node, i = c, i + 1
        common = match_from(node, units, i, live)
        # write (or refresh) this prompt's path: the live prefix only gets its idle timer reset
        for nd in path[:j]:
            nd.last = now
        del path[j:], born_min[j:]
        node, b_min = (path[-1], born_min[-1]) if j else (root, INF)
        add_path, add_born = path.append, born_min.append
        for key, ids, _, _ in units[j:]:
            c = node.children.get(key)
            if c is None:
                c = node.children[key] = TimedNode(key, ids, node.end + len(ids), now)
            elif now - c.last < idle and now - c.born < life:  # live(c), inlined
                c.last = now
            else:
                c.children.clear()  # its continuations were computed on a prefix that is gone
                c.born = c.last = now
            node = c
            add_path(c)
            if c.born < b_min:
                b_min = c.born
            add_born(b_min)
        w.units, w.t = units, now
        n = node.end
        cached = cacheable(common, cfg.min_prefix, cfg.block_tokens)
        write = 0
        if cfg.write_multiplier != 1.0:  # writes are reported only where they cost extra
            write = cacheable(n, cfg.min_prefix, cfg.block_tokens) - cached
        self._n += 1
        if cfg.prune_every and self._n % cfg.prune_every == 0:
            for r in self._roots.values():
                prune(r, live)
        return result(n, cached, write, cfg.base(model), *cfg.multipliers(model))
