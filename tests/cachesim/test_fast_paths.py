"""The simulators' shared fast paths against their plain definitions, on random inputs: the vLLM tail flattened
on demand, the anthropic sweep without a call per node, the shared prefix asked once per prompt, and the shared
prefix by unit key."""

from __future__ import annotations

import random
from typing import Any

import pytest

from bench.cachesim.trie import (EntryNode, Node, Walks, common_prefix, prune_unless_any, prune_unless_entry,
                                 shared_len)
from bench.cachesim.vllm_cache import _common_prefix, _Flat
from bench.render import Unit, common_len


def _units(rng: random.Random, n: int) -> list[Unit]:
    return [Unit(("user", f"t{i}"), tuple(rng.randrange(1000) for _ in range(rng.randrange(0, 40))), i)
            for i in range(n)]


@pytest.mark.parametrize("seed", range(30))
def test_flat_reads_equal_the_flattened_list(seed: int) -> None:
    rng = random.Random(seed)
    units = _units(rng, rng.randrange(1, 12))
    flat_all = [t for u in units for t in u.ids]
    ui = rng.randrange(len(units))
    before = sum(len(u.ids) for u in units[:ui])
    off = rng.randrange(len(units[ui].ids) + 1)
    rest = flat_all[before + off :]
    n = rng.randrange(len(rest) + 1)
    plain = rest[:n]
    flat = _Flat(units, ui, off, n)
    assert len(flat) == n
    for _ in range(40):  # reads in any order: slices as the lookup takes them, items, past the end
        a = rng.randrange(n + 5)
        b = a + rng.randrange(0, 300)
        assert flat[a:b] == plain[a:b]
        if n:
            i = rng.randrange(-n, n)
            assert flat[i] == plain[i]
    assert flat[0:n] == plain
    assert flat[-3:] == plain[-3:] and flat[::-2] == plain[::-2] and flat[:] == plain
    with pytest.raises(IndexError):
        flat[n]


@pytest.mark.parametrize("seed", range(30))
def test_vllm_common_prefix_is_the_plain_one(seed: int) -> None:
    rng = random.Random(seed)
    base = [rng.randrange(50) for _ in range(rng.randrange(0, 2000))]
    other = list(base)
    if other and rng.random() < 0.8:
        other[rng.randrange(len(other))] = 99  # one difference somewhere
    other += [rng.randrange(50) for _ in range(rng.randrange(0, 100))]

    def as_units(tokens: list[int]) -> tuple[list[Unit], list[int]]:
        cuts = sorted(rng.sample(range(len(tokens) + 1), min(5, len(tokens) + 1)))
        cuts = [0, *cuts, len(tokens)]
        return [Unit(("u", str(i)), tuple(tokens[a:b]), i) for i, (a, b) in enumerate(zip(cuts, cuts[1:]))], cuts

    for x, y in ((base, other), (other, base)):
        sa, sb = rng.randrange(len(x) + 1), rng.randrange(len(y) + 1)
        plain = common_prefix(x, sa, y, sb)
        ux, _ = as_units(x)
        uy, _ = as_units(y)
        assert _common_prefix(_Flat(ux, 0, 0, len(x)), sa, _Flat(uy, 0, 0, len(y)), sb) == plain
        assert _common_prefix(x, sa, _Flat(uy, 0, 0, len(y)), sb) == plain


def _random_trie(rng: random.Random, now: float) -> Node:
    root = Node()
    nodes: list[Node] = [root]
    for i in range(rng.randrange(1, 80)):
        parent = rng.choice(nodes)
        c = parent.children[i] = EntryNode(i, (), parent.end + 1)
        if rng.random() < 0.15:
            c.entry = now + rng.choice((-5.0, 0.0, 5.0))
        nodes.append(c)
    return root


def _shape(node: Node) -> Any:
    return {k: _shape(c) for k, c in node.children.items()}


@pytest.mark.parametrize("seed", range(40))
def test_prune_unless_entry_is_prune_unless_any(seed: int) -> None:
    now = 100.0
    a, b = _random_trie(random.Random(seed), now), _random_trie(random.Random(seed), now)
    assert _shape(a) == _shape(b)
    prune_unless_any(a, lambda nd: nd.entry > now)
    prune_unless_entry(b, now)
    assert _shape(a) == _shape(b)


@pytest.mark.parametrize("seed", range(30))
def test_shared_len_and_shared_keys_are_the_plain_prefixes(seed: int) -> None:
    rng = random.Random(seed)
    old = _units(rng, rng.randrange(0, 15))
    new = list(old[: rng.randrange(len(old) + 1)])
    # then units equal by key but with the breakpoint flag flipped (the moving breakpoint), then new ones
    for u in old[len(new) : len(new) + rng.randrange(3)]:
        new.append(u._replace(breakpoint=not u.breakpoint))
    new += _units(rng, rng.randrange(3))
    w = Walks()
    w.units = old
    plain = next((i for i, (x, y) in enumerate(zip(old, new)) if x != y), min(len(old), len(new)))
    by_key = next((i for i, (x, y) in enumerate(zip(old, new)) if x.key != y.key), min(len(old), len(new)))
    assert w.shared(new) == (plain if old else 0)
    assert shared_len(old, new) == plain == common_len(old, new)  # the remembered pair answers the same
    assert w.shared_keys(new) == (by_key if old else 0)
    other = list(new)  # an equal list that is not the remembered one is compared afresh
    if other:
        other[-1] = other[-1]._replace(ids=other[-1].ids + (1,))
    assert shared_len(old, other) == common_len(old, other)
