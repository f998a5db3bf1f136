"""`vllm`: automatic prefix caching of vLLM V1 (vllm-project/vllm docs/design/prefix_caching.md and
vllm/v1/core/kv_cache_manager.py).

Full `block_size`-token blocks only, identified by a hash chain hash(parent hash, block token ids); the
first block's parent is a salt from the stream (like `cache_salt`), so actor and observer prompts never
share blocks although they share one KV pool per model. A lookup takes the longest run of cached blocks
from the start, capped at n-1 tokens (the last token is recomputed for logits, so a fully cached
block-aligned prompt recomputes its last block). After the request all its blocks are cached and put at
the LRU tail in reverse order (the tail blocks of the prompt are evicted first, as vLLM frees them).
The pool holds `capacity_tokens // block_size` blocks. Generated tokens are not modelled.

Speed: block hashes are memoised on a trie of prompt units, so an unchanged segment prefix reuses the
hashes computed for an earlier prompt; only the new suffix is hashed (Python's tuple hash: 64-bit,
deterministic for ints, collisions negligible at simulation scale). The walk of the stream's previous
prompt is kept, so the unchanged units are not even looked up.

The pool (`_Pool`) does the LRU above without touching every block of every request. A request touches
its whole block path, and in the LRU order a block always comes after (is more recent than) its
descendants, so eviction only ever takes a leaf and the cached blocks form a prefix-closed forest:
- the hits are found by bisection (block j cached implies blocks 0..j-1 cached);
- a block's LRU position is (the last request through it, -depth); the last request through a block is
  the latest request that ended in its subtree, so only the request's last block is stamped, and a stamp
  moves to the parent when its child is evicted;
- the blocks a request adds are one run (a list of hashes under one parent block); the leaves wait in a
  heap by stamp, and eviction cuts runs from their tail.
The result is the same as moving every block to the tail of an OrderedDict (it is tested against that).
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from collections import deque
from dataclasses import dataclass
from datetime import datetime
from heapq import heapify, heappop, heappush
from itertools import chain, repeat
from typing import Any

from bench.render import prompt_units
from bench.cachesim.base import CacheResult
from bench.cachesim.common import Pricing, check_positive, result
from bench.cachesim.trie import BareNode, Node, Walks, common_prefix, prune
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

    def multipliers(self, model: str) -> tuple[float, float]:
        return self.read_multiplier, 1.0


def _salt(stream: str) -> int:
    return int.from_bytes(hashlib.blake2b(stream.encode(), digest_size=8).digest(), "big")


class _Walk(Walks):
    """The last prompt's unit path in one stream; nblocks[i] = full blocks through path[i]."""

    __slots__ = ("nblocks",)

    def __init__(self) -> None:
        super().__init__()
        self.nblocks: list[int] = []


class _Memo:
    """Per (model, stream): the unit trie holding block hashes, an observe counter for pruning, and the walk
    of the last prompt, so the next prompt of the stream only walks what changed."""

    def __init__(self, stream: str) -> None:
        self.root = Node()
        self.root.chain = _salt(stream)
        self.seq = 0
        self.walk = _Walk()


class _Run:
    """Blocks one request added: hashes[:n] are cached, hashes[0] at depth `depth`, below block `ppos` of
    run `parent` (None: a stream root). attach[i]: cached runs below block i; stamps[i]: the latest request
    that ended at block i or in an evicted subtree of it."""

    __slots__ = ("hashes", "depth", "n", "parent", "ppos", "attach", "stamps")

    def __init__(self, hashes: list[int], depth: int, parent: _Run | None, ppos: int) -> None:
        self.hashes = hashes
        self.depth = depth
        self.n = len(hashes)
        self.parent = parent
        self.ppos = ppos
        self.attach: dict[int, int] = {}
        self.stamps: dict[int, int] = {}


class _Pool:
    """One model's KV pool: an LRU over blocks, lazily ordered (module docstring)."""

    __slots__ = ("member", "heap", "seq")

    def __init__(self) -> None:
        self.member: dict[int, _Run] = {}  # cached block hash -> its run
        self.heap: list[tuple[int, int, int]] = []  # (stamp, -depth, hash) of leaves; stale entries skipped
        self.seq = 0  # requests so far (the stamps)

    def __len__(self) -> int:
        return len(self.member)

    def hits(self, at: _BlockAt, m: int) -> int:
        """Leading blocks of the request that are cached (prefix-closed: bisect on membership)."""
        member = self.member
        if m == 0 or at(0) not in member:
            return 0
        if at(m - 1) in member:
            return m
        lo, hi = 1, m - 1  # block lo-1 cached, block hi not
        while lo < hi:
            mid = (lo + hi) // 2
            if at(mid) in member:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def _live(self, entry: tuple[int, int, int]) -> bool:
        """A heap entry still names a leaf with that stamp."""
        s, nd, h = entry
        run = self.member.get(h)
        if run is None:
            return False
        pos = -nd - run.depth
        return pos == run.n - 1 and not run.attach.get(pos) and run.stamps.get(pos) == s

    def touch(self, at: _BlockAt, m: int, hits: int) -> None:
        """Record a request of m > 0 blocks whose first `hits` were cached; cache the others as one run."""
        if len(self.heap) > 2 * len(self.member) + 1024:  # re-stamped leaves leave stale entries: sweep
            self.heap = [e for e in self.heap if self._live(e)]
            heapify(self.heap)
        self.seq += 1
        r = self.seq
        member = self.member
        if hits == m:  # it ended at a cached block
            last = at(m - 1)
            run = member[last]
            pos = m - 1 - run.depth
            run.stamps[pos] = r
            if pos == run.n - 1 and not run.attach.get(pos):
                heappush(self.heap, (r, 1 - m, last))
            return
        new = at.tail(hits)
        parent: _Run | None = None
        ppos = -1
        if hits:
            parent = member[at(hits - 1)]
            ppos = hits - 1 - parent.depth
            parent.attach[ppos] = parent.attach.get(ppos, 0) + 1
        run = _Run(new, hits, parent, ppos)
        member.update(zip(new, repeat(run)))
        run.stamps[run.n - 1] = r
        heappush(self.heap, (r, 1 - m, new[-1]))

    def evict(self, over: int) -> None:
        """Drop the `over` least recently used blocks (leaves, oldest stamp first; within a run, the tail)."""
        member, heap = self.member, self.heap
        while over > 0 and heap:
            s, nd, h = heappop(heap)
            run = member.get(h)
            if run is None:
                continue
            pos = -nd - run.depth
            if pos != run.n - 1 or run.attach.get(pos) or run.stamps.get(pos) != s:
                continue  # stale: no longer a leaf, or stamped again since (_live() below)
            # Every block from the tail up to the first one with a cached child run or a newer stamp is, in
            # turn, the least recent leaf (its stamp becomes s): cut them all (as many as needed).
            stop = max((p for p, c in run.attach.items() if p < pos and c), default=-1)
            stop = max(stop, max((p for p, st in run.stamps.items() if p < pos and st > s), default=-1))
            lo = max(stop + 1, pos - over + 1)
            deque(map(member.pop, run.hashes[lo : pos + 1]), maxlen=0)
            over -= pos + 1 - lo
            run.n = lo
            for p in [p for p in run.stamps if p >= lo]:
                del run.stamps[p]
            if lo:  # the new tail carries the stamp up
                t = lo - 1
                st = run.stamps.get(t, s)
                st = run.stamps[t] = s if st < s else st
                if not run.attach.get(t):
                    heappush(heap, (st, -(run.depth + t), run.hashes[t]))
                continue
            parent = run.parent  # the run is gone: its parent block may become a leaf
            if parent is None:
                continue
            pp = run.ppos
            c = parent.attach[pp] - 1
            if c:
                parent.attach[pp] = c
            else:
                del parent.attach[pp]
            st = parent.stamps.get(pp, s)
            st = parent.stamps[pp] = s if st < s else st
            if not c and pp == parent.n - 1:
                heappush(heap, (st, -(parent.depth + pp), parent.hashes[pp]))


class _BlockAt:
    """Block hash by index in the prompt, read from the unit path (no flat list of every hash)."""

    __slots__ = ("path", "nblocks")

    def __init__(self, path: list[Node], nblocks: list[int]) -> None:
        self.path = path
        self.nblocks = nblocks

    def __call__(self, j: int) -> int:
        u = bisect_right(self.nblocks, j)
        return self.path[u].hashes[j - (self.nblocks[u - 1] if u else 0)]

    def tail(self, j: int) -> list[int]:
        """Hashes of blocks j.. to the end."""
        nb = self.nblocks
        u = bisect_right(nb, j)
        out = list(self.path[u].hashes[j - (nb[u - 1] if u else 0) :])
        for nd in self.path[u + 1 :]:
            if nd.hashes:
                out.extend(nd.hashes)
        return out


class VLLMSimulator:
    def __init__(self, config: VLLMConfig | None = None, name: str = "vllm") -> None:
        self.name = name
        self.config = config or VLLMConfig()
        self._memos: dict[tuple[str, str], _Memo] = {}
        self._pools: dict[str, _Pool] = {}  # model -> its KV pool

    def reset(self) -> None:
        self._memos.clear()
        self._pools.clear()

    def _extend(self, parent: Node, key: Any, ids: tuple[int, ...], sibling: Node | None = None) -> Node:
        """Child of `parent` for one unit, with the hashes of the blocks that complete inside it.

        `sibling`, another child of `parent` (the unit this one replaces, e.g. a block that grew at its end),
        lends the hashes of the full blocks both share: same parent, same tokens so far, same hashes."""
        bs = self.config.block_size
        c = BareNode(key, ids, parent.end + len(ids))  # + the fields set here and seq (set by _path)
        buf = parent.tail + ids if parent.tail else ids
        full = len(buf) // bs * bs
        h, hashes, start = parent.chain, [], 0
        if sibling is not None and sibling.hashes and full >= 4 * bs:
            lead = len(parent.tail)
            same = lead + common_prefix(sibling.ids, 0, ids, 0)
            reuse = min(same // bs, len(sibling.hashes))
            if reuse:
                hashes = list(sibling.hashes[:reuse])
                h, start = hashes[-1], reuse * bs
        for k in range(start, full, bs):
            h = hash((h, buf[k : k + bs]))
            hashes.append(h)
        c.hashes, c.chain, c.tail = tuple(hashes), h, buf[full:]
        return c

    def _path(self, prompt: Prompt, model: str, stream: str) -> _Walk:
        """The memo-trie nodes of the prompt's units (block hashes memoised on them), reusing the nodes of
        the units it shares with the stream's previous prompt. A node's hashes depend only on the tokens
        of its path, so a node the memo pruned since still holds the right ones."""
        memo = self._memos.get((model, stream))
        if memo is None:
            memo = self._memos[(model, stream)] = _Memo(stream)
        memo.seq += 1
        units = prompt_units(prompt)
        w = memo.walk
        k = w.shared(units)
        path, nblocks = w.path, w.nblocks
        replaced = path[k] if len(path) > k else None  # the previous prompt's unit after the shared ones
        del path[k:], nblocks[k:]
        node = path[-1] if k else memo.root
        seq, bs = memo.seq, self.config.block_size
        for u in units[k:]:
            c = node.children.get(u.key)
            if c is None:
                c = node.children[u.key] = self._extend(node, u.key, u.ids, replaced)
            replaced = None  # (the next units hang below a new parent)
            c.seq = seq
            path.append(c)
            nblocks.append(c.end // bs)
            node = c
        w.units = units
        cfg = self.config
        if cfg.prune_every and seq % cfg.prune_every == 0:
            for nd in path[:k]:  # the shared prefix was not stamped above: keep it in the memo
                nd.seq = seq
            oldest = seq - cfg.memo_keep
            prune(memo.root, lambda nd: nd.seq > oldest)
        return w

    def block_hashes(self, prompt: Prompt, model: str = "", stream: str = "actor") -> tuple[list[int], int]:
        """(hashes of the prompt's full blocks, prompt tokens), reusing memoised hashes of known prefixes."""
        path = self._path(prompt, model, stream).path
        return list(chain.from_iterable(nd.hashes for nd in path)), (path[-1].end if path else 0)

    def observe(self, t: datetime | float, prompt: Prompt, model: str = "", stream: str = "actor") -> CacheResult:
        cfg = self.config
        bs = cfg.block_size
        w = self._path(prompt, model, stream)
        n = w.path[-1].end if w.path else 0
        m = n // bs
        pool = self._pools.get(model)
        if pool is None:
            pool = self._pools[model] = _Pool()
        at = _BlockAt(w.path, w.nblocks)
        hits = pool.hits(at, m)
        cap = (n - 1) // bs * bs if n > 0 else 0
        cached = min(hits * bs, cap)
        if m:
            pool.touch(at, m, hits)
        over = len(pool) - cfg.capacity_tokens // bs
        if over > 0:
            pool.evict(over)
        return result(n, cached, 0, cfg.base(model), *cfg.multipliers(model))
