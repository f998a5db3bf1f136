"""`vllm`: automatic prefix caching of vLLM V1 (vllm-project/vllm docs/design/prefix_caching.md and
vllm/v1/core/kv_cache_manager.py).

Full `block_size`-token blocks only, identified by a hash chain hash(parent hash, block token ids); the
first block's parent is a salt from the stream (like `cache_salt`), so actor and observer prompts never
share blocks although they share one KV pool per model. A lookup takes the longest run of cached blocks
from the start, capped at n-1 tokens (the last token is recomputed for logits, so a fully cached
block-aligned prompt recomputes its last block). After the request all its blocks are cached and put at
the LRU tail in reverse order (the tail blocks of the prompt are evicted first, as vLLM frees them).
The pool holds `capacity_tokens // block_size` blocks. Generated tokens are not modelled.

Speed: a block's hash names its whole token prefix (the chain), so the pool is kept as what the hashes
stand for, a radix tree of token runs, and no block is hashed (exact where the 64-bit hashes do not collide,
as vLLM itself assumes):
- the blocks a request adds are one run (the prompt's tokens from its first missed block to its last full
  block) below the block it last hit, or below its stream's root (the salt: streams never share); the runs
  below a block are found by their first block's tokens, so a lookup compares token slices (C speed) and
  looks up one block-sized tuple where it branches;
- the path of the stream's previous prompt is kept (which run holds each block), so the blocks of the
  prompt's leading units it shares with that prompt (found by identity, `Walks.shared`) are not looked up
  again, only checked to be still cached (eviction takes blocks from the tail of a path, so one check at the
  last shared block answers for all). The tokens after that prefix are gathered once into one list (C
  speed), which the lookup compares and the new run keeps: a prompt costs O(its tokens after the prefix).

The pool (`_Pool`) does the LRU above without touching every block of every request. A request touches
its whole block path, and in the LRU order a block always comes after (is more recent than) its
descendants, so eviction only ever takes a leaf and the cached blocks form a prefix-closed forest:
- the hits are the blocks the lookup walked (block j cached implies blocks 0..j-1 cached);
- a block's LRU position is (the last request through it, -depth); the last request through a block is
  the latest request that ended in its subtree, so only the request's last block is stamped, and a stamp
  moves to the parent when its child is evicted;
- the leaves wait in a heap by stamp, and eviction cuts runs from their tail.
The result is the same as moving every block to the tail of an OrderedDict (it is tested against that).
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from dataclasses import dataclass
from datetime import datetime
from heapq import heapify, heappop, heappush
from itertools import chain
from collections.abc import Sequence as SequenceABC
from typing import Sequence, overload

from bench.render import Unit, prompt_units
from bench.cachesim.base import CacheResult
from bench.cachesim.common import Pricing, check_positive, result
from bench.cachesim.trie import Walks
from bench.prompt import Prompt


@dataclass
class VLLMConfig(Pricing):
    block_size: int = 16  # CacheConfig.DEFAULT_BLOCK_SIZE
    capacity_tokens: int = 2_000_000  # KV pool size (tokens) per model
    read_multiplier: float = 0.0  # self-hosted: a hit costs no compute

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


Block = tuple[int, ...]


class _Run:
    """Blocks one request added: block i (i < n cached) is tokens[off + i*bs : off + (i+1)*bs] (the adding
    prompt's tokens from a block boundary on, never changed), at depth `depth + i` in the prompt, below block
    `ppos` of run `parent` (None: a stream root). It lives in the pool's `kids[(parent uid, ppos)]` (or its
    stream's root) under `key`, its first block's tokens. attach[i]: cached runs below block i; stamps[i]: the
    latest request that ended at block i or in an evicted subtree of it."""

    __slots__ = ("tokens", "off", "depth", "n", "parent", "ppos", "stream", "key", "attach", "stamps", "uid")

    def __init__(self, tokens: Sequence[int], off: int, n: int, depth: int, parent: _Run | None, ppos: int,
                 stream: str, key: Block, uid: int) -> None:
        self.tokens = tokens
        self.off = off
        self.n = n
        self.depth = depth
        self.parent = parent
        self.ppos = ppos
        self.stream = stream
        self.key = key
        self.attach: dict[int, int] = {}  # (counts, not the runs: no reference cycle keeps a dropped pool alive)
        self.stamps: dict[int, int] = {}
        self.uid = uid


class _Flat(SequenceABC[int]):
    """The token ids of units[ui:] from offset `off` in units[ui], the first `n` of them, flattened only as far
    as they are read: a lookup mostly reads a few blocks of them, and the run that keeps them as its tokens is
    often never compared again, so copying all of them (every prompt's tokens after its shared prefix, once per
    prompt) was the simulator's largest cost. Reads are slices (the lookup's) or single items."""

    __slots__ = ("units", "ui", "off", "n", "buf")

    def __init__(self, units: Sequence[Unit], ui: int, off: int, n: int) -> None:
        self.units = units  # (a rendering's unit list: never changed once handed out, bench.render)
        self.ui = ui  # the next unit to copy from, and where in it
        self.off = off
        self.n = n
        self.buf: list[int] = []  # the first len(buf) tokens

    def __len__(self) -> int:
        return self.n

    def upto(self, stop: int) -> list[int]:
        """The buffer, holding at least min(stop, n) tokens (copied a unit at a time, at least 256 more)."""
        buf = self.buf
        if len(buf) >= stop or len(buf) == self.n:
            return buf
        want = min(self.n, max(stop, len(buf) + 256))
        units, ui, off = self.units, self.ui, self.off
        while len(buf) < want:
            ids = units[ui].ids
            take = min(len(ids), off + want - len(buf))
            if take == len(ids):
                buf += ids if not off else ids[off:]
                ui, off = ui + 1, 0
            else:
                buf += ids[off:take]
                off = take
        self.ui, self.off = ui, off
        return buf

    @overload
    def __getitem__(self, i: int) -> int: ...

    @overload
    def __getitem__(self, i: slice) -> list[int]: ...

    def __getitem__(self, i: int | slice) -> int | list[int]:
        if isinstance(i, slice):
            start, stop = i.start, i.stop
            if i.step is None and stop is not None and stop >= 0 and (start is None or start >= 0):
                return self.upto(stop)[i]  # the lookup's reads
            return self.upto(self.n)[i]  # (anything else reads the whole, like a list)
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError(i)
        return self.upto(i + 1)[i]


def _common_prefix(a: Sequence[int], sa: int, b: Sequence[int], sb: int) -> int:
    """bench.cachesim.trie.common_prefix for _Flat sequences: the chunks are compared on their buffers,
    flattened chunk by chunk, so a comparison costs a few calls, not two item look-ups per step."""
    n = min(len(a) - sa, len(b) - sb)
    i, step = 0, 32
    while i < n:
        s = min(step, n - i)
        x = a.upto(sa + i + s) if isinstance(a, _Flat) else a
        y = b.upto(sb + i + s) if isinstance(b, _Flat) else b
        if x[sa + i : sa + i + s] == y[sb + i : sb + i + s]:
            i += s
            step = min(step * 2, 16384)
            continue
        lo, hi = i, i + s  # prefix of length lo is equal, of length hi is not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if x[sa + lo : sa + mid] == y[sb + lo : sb + mid]:
                lo = mid
            else:
                hi = mid
        return lo
    return n


class _Pool:
    """One model's KV pool: an LRU over blocks, lazily ordered (module docstring)."""

    __slots__ = ("roots", "kids", "heap", "seq", "size")

    def __init__(self) -> None:
        self.roots: dict[str, dict[Block, _Run]] = {}  # stream -> runs at its root, by first block
        self.kids: dict[tuple[int, int], dict[Block, _Run]] = {}  # (run uid, block) -> runs below, by first block
        self.heap: list[tuple[int, int, int, _Run]] = []  # (stamp, -depth, uid, run) of leaves; stale skipped
        self.seq = 0  # requests so far (the stamps; also the runs' uids)
        self.size = 0  # cached blocks

    def __len__(self) -> int:
        return self.size

    def _live(self, entry: tuple[int, int, int, _Run]) -> bool:
        """A heap entry still names a leaf with that stamp."""
        s, nd, _, run = entry
        pos = -nd - run.depth
        return pos == run.n - 1 and not run.attach.get(pos) and run.stamps.get(pos) == s

    def stamp(self, run: _Run, pos: int) -> None:
        """Record a request that ended at a cached block (run, pos)."""
        self._sweep()
        self.seq += 1
        r = run.stamps[pos] = self.seq
        if pos == run.n - 1 and not run.attach.get(pos):
            heappush(self.heap, (r, -(run.depth + pos), run.uid, run))

    def add(self, stream: str, tokens: Sequence[int], off: int, n: int, bs: int, depth: int, parent: _Run | None,
            ppos: int) -> _Run:
        """Record a request whose blocks from `depth` on missed: cache them as one run of n > 0 blocks of bs
        tokens, tokens[off:] (below block ppos of `parent`, or at the stream's root)."""
        self._sweep()
        self.seq += 1
        r = self.seq
        key = tuple(tokens[off : off + bs])
        if parent is None:
            home = self.roots.get(stream)
            if home is None:
                home = self.roots[stream] = {}
        else:
            home = self.kids.get((parent.uid, ppos))
            if home is None:
                home = self.kids[(parent.uid, ppos)] = {}
            parent.attach[ppos] = parent.attach.get(ppos, 0) + 1
        run = home[key] = _Run(tokens, off, n, depth, parent, ppos, stream, key, r)
        run.stamps[n - 1] = r
        self.size += n
        heappush(self.heap, (r, -(depth + n - 1), r, run))
        return run

    def _sweep(self) -> None:
        if len(self.heap) > 2 * self.size + 1024:  # re-stamped leaves leave stale entries: sweep
            self.heap = [e for e in self.heap if self._live(e)]
            heapify(self.heap)

    def evict(self, over: int) -> None:
        """Drop the `over` least recently used blocks (leaves, oldest stamp first; within a run, the tail)."""
        heap = self.heap
        while over > 0 and heap:
            s, nd, _, run = heappop(heap)
            pos = -nd - run.depth
            if pos != run.n - 1 or run.attach.get(pos) or run.stamps.get(pos) != s:
                continue  # stale: no longer a leaf, or stamped again since (_live() above)
            # Every block from the tail up to the first one with a cached child run or a newer stamp is, in
            # turn, the least recent leaf (its stamp becomes s): cut them all (as many as needed).
            stop = max((p for p, c in run.attach.items() if p < pos and c), default=-1)
            stop = max(stop, max((p for p, st in run.stamps.items() if p < pos and st > s), default=-1))
            lo = max(stop + 1, pos - over + 1)
            over -= pos + 1 - lo
            self.size -= pos + 1 - lo
            run.n = lo
            for p in [p for p in run.stamps if p >= lo]:
                del run.stamps[p]
            if lo:  # the new tail carries the stamp up
                t = lo - 1
                st = run.stamps.get(t, s)
                st = run.stamps[t] = s if st < s else st
                if not run.attach.get(t):
                    heappush(heap, (st, -(run.depth + t), run.uid, run))
                continue
            parent = run.parent  # the run is gone: its parent block may become a leaf
            if parent is None:
                del self.roots[run.stream][run.key]
                continue
            pp = run.ppos
            home = self.kids[(parent.uid, pp)]
            del home[run.key]
            c = parent.attach[pp] - 1
            if c:
                parent.attach[pp] = c
            else:
                del parent.attach[pp], self.kids[(parent.uid, pp)]
            st = parent.stamps.get(pp, s)
            st = parent.stamps[pp] = s if st < s else st
            if not c and pp == parent.n - 1:
                heappush(heap, (st, -(parent.depth + pp), parent.uid, parent))


class _Walk(Walks):
    """The last prompt of one stream: ends[i] = tokens through units[i]; its blocks' places in the pool as
    segments: blocks starts[i].. (up to the next segment's start) are blocks poss[i].. of runs[i]."""

    __slots__ = ("ends", "starts", "runs", "poss")

    def __init__(self) -> None:
        super().__init__()
        self.ends: list[int] = []
        self.starts: list[int] = []
        self.runs: list[_Run] = []
        self.poss: list[int] = []


class VLLMSimulator:
    def __init__(self, config: VLLMConfig | None = None, name: str = "vllm") -> None:
        self.name = name
        self.config = config or VLLMConfig()
        self._walks: dict[tuple[str, str], _Walk] = {}
        self._pools: dict[str, _Pool] = {}  # model -> its KV pool

    def reset(self) -> None:
        self._walks.clear()
        self._pools.clear()

    def block_hashes(self, prompt: Prompt, model: str = "", stream: str = "actor") -> tuple[list[int], int]:
        """(hash chain of the prompt's full blocks, prompt tokens): the block identities the pool stands for
        (vLLM's hash(parent hash, block tokens), here with Python's tuple hash). For tests; observe() never
        hashes a block."""
        bs = self.config.block_size
        ids = tuple(chain.from_iterable(u.ids for u in prompt_units(prompt)))
        h, out = _salt(stream), []
        for k in range(0, len(ids) // bs * bs, bs):
            h = hash((h, ids[k : k + bs]))
            out.append(h)
        return out, len(ids)

    def observe(self, t: datetime | float, prompt: Prompt, model: str = "", stream: str = "actor") -> CacheResult:
        cfg = self.config
        bs = cfg.block_size
        units = prompt_units(prompt)
        w = self._walks.get((model, stream))
        if w is None:
            w = self._walks[(model, stream)] = _Walk()
        pool = self._pools.get(model)
        if pool is None:
            pool = self._pools[model] = _Pool()
        k = w.shared_keys(units)
        ends = w.ends
        del ends[k:]
        total = ends[-1] if k else 0
        for u in units[k:]:
            total += len(u.ids)
            ends.append(total)
        w.units = units
        n = total
        m = n // bs
        # blocks of the previous prompt's path this prompt shares (its first units), while still cached
        starts, runs, poss = w.starts, w.runs, w.poss
        b = (ends[k - 1] // bs if k else 0) if starts else 0
        i = bisect_right(starts, b - 1) - 1 if b else -1
        if i >= 0 and poss[i] + (b - 1 - starts[i]) >= runs[i].n:  # evicted since: keep what is left
            last = i  # segments' first blocks: cached, then not (a path loses blocks from its end)
            i = bisect_right(range(i + 1), False, key=lambda s: runs[s].n <= poss[s]) - 1
            if i >= 0:
                end = starts[i] + runs[i].n - poss[i]
                b = min(b, end, starts[i + 1]) if i < last else min(b, end)
            else:
                b = 0
        del starts[i + 1 :], runs[i + 1 :], poss[i + 1 :]
        run: _Run | None = None
        p = -1
        if b:
            run = runs[-1]
            p = poss[-1] + (b - 1 - starts[-1])
        # the lookup, from block b: the run's own next blocks, else a run below the last matched block
        j = b
        tail: Sequence[int] = ()
        if j < m:
            lo = b * bs
            ui = bisect_right(ends, lo)
            tail = _Flat(units, ui, lo - (ends[ui - 1] if ui else 0), (m - b) * bs)
            root = pool.roots.get(stream)
            while j < m:
                if run is not None and p + 1 < run.n:
                    c = _common_prefix(run.tokens, run.off + (p + 1) * bs, tail, (j - b) * bs) // bs
                    if c:
                        c = min(c, run.n - p - 1)
                        p += c
                        j += c
                        if j == m:
                            break
                below = pool.kids.get((run.uid, p)) if run is not None else root
                if not below:
                    break
                o = (j - b) * bs
                nxt = below.get(tuple(tail[o : o + bs]))
                if nxt is None:
                    break
                starts.append(j)
                runs.append(nxt)
                poss.append(0)
                run, p, j = nxt, 0, j + 1
        hits = j
        cap = (n - 1) // bs * bs if n > 0 else 0
        cached = min(hits * bs, cap)
        if m:
            if hits == m:
                assert run is not None
                pool.stamp(run, p)
            else:
                new = pool.add(stream, tail, (hits - b) * bs, m - hits, bs, hits, run, p)
                starts.append(hits)
                runs.append(new)
                poss.append(0)
        over = len(pool) - cfg.capacity_tokens // bs
        if over > 0:
            pool.evict(over)
        return result(n, cached, 0, cfg.base(model), *cfg.multipliers(model))
