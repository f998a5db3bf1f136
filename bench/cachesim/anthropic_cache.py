"""`anthropic`: explicit prompt caching with breakpoints (Anthropic's docs,
https://platform.claude.com/docs/en/build-with-claude/prompt-caching).

Blocks are segments; the strategy marks breakpoints (`Segment.breakpoint`). A cache entry is the prefix
up to and including a breakpoint block (its key is that exact prefix: the trie path of unit keys), so
matching is by key only. For each breakpoint the entry at that block and at up to `lookback_blocks` earlier
block boundaries is checked; the longest live one is read. Every breakpoint whose prefix reaches the
model's minimum is then written (or refreshed); write tokens = prefix through the last breakpoint minus
what was read. Entries live `ttl` (5m or 1h) from their last read or write.

More than `max_breakpoints` marked: the API would refuse the request; we keep the LAST ones, which cover
the longest prefixes (what a strategy that over-marks would have meant). `auto_breakpoint` adds one on
the last block, like the top-level automatic `cache_control`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bench.render import prompt_units
from bench.cachesim.base import CacheResult
from bench.cachesim.common import Pricing, check_positive, lookup_by_model, result, to_seconds
from bench.cachesim.trie import EntryNode, Node, Walks, prune_unless_entry, stream_state
from bench.prompt import Prompt

# Minimum cacheable prefix by model (anthropic-sdk-python#1194; litellm docs for Opus 4.7 and Opus 5).
MIN_PREFIX_BY_MODEL: tuple[tuple[str, int], ...] = (
    ("opus-4-5", 4096),
    ("opus-4-6", 4096),
    ("opus-4-7", 4096),
    ("haiku-4-5", 4096),
    ("3-5-haiku", 2048),
    ("3-haiku", 2048),
    ("haiku-3", 2048),
    ("opus-5", 512),
)


@dataclass
class AnthropicConfig(Pricing):
    ttl: str = "5m"  # "5m" | "1h": picks the lifetime and the write premium below
    ttl_5m_s: float = 300.0
    ttl_1h_s: float = 3600.0
    write_multiplier_5m: float = 1.25
    write_multiplier_1h: float = 2.0
    read_multiplier: float = 0.1
    max_breakpoints: int = 4
    lookback_blocks: int = 20  # block boundaries checked before each breakpoint
    min_prefix: int = 1024  # default minimum (Sonnet family)
    min_prefix_by_model: tuple[tuple[str, int], ...] = MIN_PREFIX_BY_MODEL
    auto_breakpoint: bool = False
    prune_every: int = 64

    def __post_init__(self) -> None:
        if self.ttl not in ("5m", "1h"):
            raise ValueError(f"anthropic: ttl must be '5m' or '1h' (got {self.ttl!r})")
        if isinstance(self.min_prefix_by_model, dict):
            self.min_prefix_by_model = tuple(self.min_prefix_by_model.items())
        check_positive(
            "anthropic", ttl_5m_s=self.ttl_5m_s, ttl_1h_s=self.ttl_1h_s, read_multiplier=self.read_multiplier,
            max_breakpoints=self.max_breakpoints, lookback_blocks=self.lookback_blocks,
            min_prefix=self.min_prefix, input_per_token=self.input_per_token,
        )

    @property
    def ttl_s(self) -> float:
        return self.ttl_1h_s if self.ttl == "1h" else self.ttl_5m_s

    @property
    def write_multiplier(self) -> float:
        return self.write_multiplier_1h if self.ttl == "1h" else self.write_multiplier_5m

    def min_prefix_for(self, model: str) -> int:
        return int(lookup_by_model(self.min_prefix_by_model, model, self.min_prefix))

    def multipliers(self, model: str) -> tuple[float, float]:
        return self.read_multiplier, self.write_multiplier

    def token_settings(self, model: str) -> dict[str, Any]:
        return {"min_prefix": self.min_prefix_for(model)}


class _Walk(Walks):
    """The last prompt's path in one stream, with the node ending each block and the marked block indices;
    nblocks[i] = blocks among units[: i + 1]. Dropped whenever the simulator prunes."""

    __slots__ = ("blocks", "marked", "nblocks")

    def __init__(self) -> None:
        super().__init__()
        self.blocks: list[Node] = []
        self.marked: list[int] = []
        self.nblocks: list[int] = []


class AnthropicSimulator:
    def __init__(self, config: AnthropicConfig | None = None, name: str = "anthropic") -> None:
        self.name = name
        self.config = config or AnthropicConfig()
        self._roots: dict[tuple[str, str], Node] = {}
        self._walks: dict[tuple[str, str], _Walk] = {}
        self._n = 0

    def reset(self) -> None:
        self._roots.clear()
        self._walks.clear()

    def observe(self, t: datetime | float, prompt: Prompt, model: str = "", stream: str = "actor") -> CacheResult:
        cfg = self.config
        now = to_seconds(t)
        units = prompt_units(prompt)
        root, w = stream_state(self._roots, self._walks, (model, stream), _Walk)
        # Nodes leave the trie only when pruned (and pruning drops every walk), so the previous prompt's
        # nodes for the shared units are still their trie path; equal units carry equal breakpoint flags.
        k = w.shared(units)
        path, blocks, marked, nblocks = w.path, w.blocks, w.marked, w.nblocks
        del path[k:], nblocks[k:]
        nb = nblocks[-1] if k else 0
        del blocks[nb:]
        while marked and marked[-1] >= nb:
            marked.pop()
        node = path[-1] if k else root
        add_path, add_block, add_nb = path.append, blocks.append, nblocks.append
        for key, ids, block, bp in units[k:]:
            c = node.children.get(key)
            if c is None:
                c = node.children[key] = EntryNode(key, ids, node.end + len(ids))
            node = c
            add_path(c)
            if block >= 0:
                if bp:
                    marked.append(nb)
                add_block(c)
                nb += 1
            add_nb(nb)
        w.units = units
        marked = list(marked)  # the walk keeps its own list; auto_breakpoint may add one below
        n = node.end
        if cfg.auto_breakpoint and blocks and (not marked or marked[-1] != len(blocks) - 1):
            marked.append(len(blocks) - 1)
        bps = marked[-cfg.max_breakpoints :] if cfg.max_breakpoints else []

        read: Node | None = None
        for b in bps:  # longest live entry within each breakpoint's lookback window
            for k in range(b, max(-1, b - cfg.lookback_blocks - 1), -1):
                if blocks[k].entry > now:
                    if read is None or blocks[k].end > read.end:
                        read = blocks[k]
                    break
        cached = read.end if read is not None else 0

        ttl_end = now + cfg.ttl_s
        if read is not None:
            read.entry = max(read.entry, ttl_end)  # refreshed on hit
        min_prefix = cfg.min_prefix_for(model)
        write = 0
        for b in bps:
            nd = blocks[b]
            if nd.end >= min_prefix:  # shorter prefixes are silently not cached
                nd.entry = max(nd.entry, ttl_end)
        if bps and blocks[bps[-1]].end >= min_prefix:
            write = max(0, blocks[bps[-1]].end - cached)

        self._n += 1
        if cfg.prune_every and self._n % cfg.prune_every == 0:
            for r in self._roots.values():  # keep a node while it or a descendant holds a live entry
                prune_unless_entry(r, now)
            self._walks.clear()
        return result(n, cached, write, cfg.base(model), *cfg.multipliers(model))

