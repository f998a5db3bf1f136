"""`vllm`: automatic prefix caching of vLLM V1 (spec C.5).

Full `block_size`-token blocks only, identified by a hash chain hash(parent hash, block token ids); the
first block's parent is a salt from the stream (like `cache_salt`), so actor and observer prompts never
share blocks although they share one KV pool per model. A lookup takes the longest run of cached blocks
from the start, capped at n-1 tokens (the last token is recomputed for logits, so a fully cached
block-aligned prompt recomputes its last block). After the request all its blocks are cached and put at
the LRU tail in reverse order (the tail blocks of the prompt are evicted first, as vLLM frees them).
The pool holds `capacity_tokens // block_size` blocks. Generated tokens are not modelled.

Speed: block hashes are memoised on a trie of prompt units, so an unchanged segment prefix reuses the
hashes computed for an earlier prompt; only the new suffix is hashed (Python's tuple hash: 64-bit,
deterministic for ints, collisions negligible at simulation scale).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict, deque
from dataclasses import dataclass
from datetime import datetime
from itertools import chain, repeat, takewhile

from bench.cachesim.base import CacheResult
from bench.cachesim.common import Pricing, check_positive, result
from bench.cachesim.trie import Node, prune
from bench.prompt import Prompt


@dataclass
class VLLMConfig(Pricing):
    block_size: int = 16  # CacheConfig.DEFAULT_BLOCK_SIZE
    capacity_tokens: int = 2_000_000  # KV pool size (tokens) per model
    read_multiplier: float = 0.0  # self-hosted: a hit costs no compute
    memo_keep: int = 16  # hash-memo paths unused for this many observes of their stream are dropped
    prune_every: int = 64

    def __post_init__(self) -> None:
        if self.block_size <= 0:
            raise ValueError(f"vllm: block_size must be > 0 (got {self.block_size})")
        check_positive(
            "vllm", capacity_tokens=self.capacity_tokens, read_multiplier=self.read_multiplier,
            input_per_token=self.input_per_token,
        )


def _salt(stream: str) -> int:
    return int.from_bytes(hashlib.blake2b(stream.encode(), digest_size=8).digest(), "big")


class _Memo:
    """Per (model, stream): the unit trie holding block hashes, and an observe counter for pruning."""

    def __init__(self, stream: str) -> None:
        self.root = Node()
        self.root.chain = _salt(stream)
        self.seq = 0


class VLLMSimulator:
    def __init__(self, config: VLLMConfig | None = None, name: str = "vllm") -> None:
        self.name = name
        self.config = config or VLLMConfig()
        self._memos: dict[tuple[str, str], _Memo] = {}
        self._pools: dict[str, OrderedDict[int, None]] = {}  # model -> block hash, LRU first

    def reset(self) -> None:
        self._memos.clear()
        self._pools.clear()

    def _extend(self, parent: Node, key: str, ids: tuple[int, ...]) -> Node:
        """Child of `parent` for one unit, with the hashes of the blocks that complete inside it."""
        bs = self.config.block_size
        c = Node(key, ids, parent.end + len(ids))
        buf = parent.tail + ids if parent.tail else ids
        full = len(buf) // bs * bs
        h, hashes = parent.chain, []
        for k in range(0, full, bs):
            h = hash((h, buf[k : k + bs]))
            hashes.append(h)
        c.hashes, c.chain, c.tail = tuple(hashes), h, buf[full:]
        return c

    def block_hashes(self, prompt: Prompt, model: str = "", stream: str = "actor") -> tuple[list[int], int]:
        """(hashes of the prompt's full blocks, prompt tokens), reusing memoised hashes of known prefixes."""
        memo = self._memos.get((model, stream))
        if memo is None:
            memo = self._memos[(model, stream)] = _Memo(stream)
        memo.seq += 1
        node, path = memo.root, []
        for u in prompt.units():
            c = node.children.get(u.key)
            if c is None:
                c = node.children[u.key] = self._extend(node, u.key, u.ids)
            c.seq = memo.seq
            path.append(c)
            node = c
        cfg = self.config
        if cfg.prune_every and memo.seq % cfg.prune_every == 0:
            oldest = memo.seq - cfg.memo_keep
            prune(memo.root, lambda nd: nd.seq > oldest)
        return list(chain.from_iterable(nd.hashes for nd in path)), node.end

    def observe(self, t: datetime | float, prompt: Prompt, model: str = "", stream: str = "actor") -> CacheResult:
        cfg = self.config
        hashes, n = self.block_hashes(prompt, model, stream)
        pool = self._pools.setdefault(model, OrderedDict())
        hits = len(list(takewhile(pool.__contains__, hashes)))
        cap = (n - 1) // cfg.block_size * cfg.block_size if n > 0 else 0
        cached = min(hits * cfg.block_size, cap)
        # Put every block at the LRU tail, last block first (it is evicted first). C-speed loops: blocks
        # past the first miss are (re)inserted, the leading hits only move.
        new_rev = hashes[hits:][::-1]
        deque(map(pool.pop, new_rev, repeat(None)), maxlen=0)
        pool.update(zip(new_rev, repeat(None)))
        deque(map(pool.move_to_end, hashes[:hits][::-1]), maxlen=0)
        over = len(pool) - cfg.capacity_tokens // cfg.block_size
        for _ in range(max(0, over)):
            pool.popitem(last=False)
        return result(n, cached, 0, cfg.base(model), cfg.read_multiplier, 1.0)
