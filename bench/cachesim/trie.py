"""A trie over prompt units (message headers and segments) with token-level longest-common-prefix.

Each node is one unit of some earlier prompt; its path from the root is that prompt's prefix. Walking the
trie by unit key ((role, text) of a segment) costs O(#segments) and touches no tokens; only where the new
prompt leaves every stored path are token ids compared, and then with a chunked slice comparison (C speed).
Nodes reference the unit's id tuple (the tokenizer's memo), so token ids are never duplicated.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, TypeVar

from bench.render import Unit, common_len

INF = float("inf")


class Node:
    """One unit of a stored prompt. Simulators use the fields they need (times, entries, block hashes)."""

    __slots__ = ("key", "ids", "end", "children", "born", "last", "entry", "keep", "hashes", "tail", "chain")

    def __init__(self, key: Any = "", ids: tuple[int, ...] = (), end: int = 0) -> None:
        self.key = key
        self.ids = ids
        self.end = end  # tokens from the root through this unit
        self.children: dict[Any, Node] = {}
        self.born = 0.0  # when this prefix was (re)written (OpenAI max lifetime)
        self.last = 0.0  # last use (idle TTL)
        self.entry = -INF  # Anthropic: expiry time of a cache entry ending at this unit
        self.keep = False  # prune_unless_any's scratch flag: the node or a descendant satisfied pred
        self.hashes: tuple[int, ...] = ()  # vLLM: hashes of full blocks that end inside this unit
        self.tail: tuple[int, ...] = ()  # vLLM: tokens after the last full block boundary
        self.chain = 0  # vLLM: hash of the last full block up to here


class BareNode(Node):
    """A Node with only the trie fields set: for the simulators that keep nothing else on a node (ideal)."""

    __slots__ = ()

    def __init__(self, key: Any, ids: tuple[int, ...], end: int) -> None:  # (unset slots are never read)
        self.key = key
        self.ids = ids
        self.end = end
        self.children = {}


class TimedNode(Node):
    """A Node for the openai simulator: trie fields plus born/last, both set to `now`."""

    __slots__ = ()

    def __init__(self, key: Any, ids: tuple[int, ...], end: int, now: float) -> None:
        self.key = key
        self.ids = ids
        self.end = end
        self.children = {}
        self.born = now
        self.last = now


class EntryNode(Node):
    """A Node for the anthropic simulator: trie fields plus an (expired) entry."""

    __slots__ = ()

    def __init__(self, key: Any, ids: tuple[int, ...], end: int) -> None:
        self.key = key
        self.ids = ids
        self.end = end
        self.children = {}
        self.entry = -INF


Live = Callable[[Node], bool]


def common_prefix(a: Sequence[int], sa: int, b: Sequence[int], sb: int) -> int:
    """Length of the common prefix of a[sa:] and b[sb:]: slices compared in doubling chunks, then bisected."""
    n = min(len(a) - sa, len(b) - sb)
    i, step = 0, 32
    while i < n:
        s = min(step, n - i)
        if a[sa + i : sa + i + s] == b[sb + i : sb + i + s]:
            i += s
            step = min(step * 2, 16384)
            continue
        lo, hi = i, i + s  # prefix of length lo is equal, of length hi is not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if a[sa + lo : sa + mid] == b[sb + lo : sb + mid]:
                lo = mid
            else:
                hi = mid
        return lo
    return n


def _cmp_edge(edge: tuple[int, ...], units: Sequence[Unit], i: int, j: int) -> tuple[int, int, int]:
    """Match a stored unit's ids against the new stream from (unit i, offset j); may span new units.

    Returns (tokens of `edge` matched, new i, new j)."""
    k, n_e, m = 0, len(edge), len(units)
    while k < n_e and i < m:
        ids = units[i].ids
        c = common_prefix(edge, k, ids, j)
        k += c
        j += c
        if j == len(ids):
            i, j = i + 1, 0
        elif k < n_e:
            break  # mismatch inside both
    return k, i, j


def match_length(root: Node, units: Sequence[Unit], live: Live) -> int:
    """Longest common token prefix between the new prompt and any stored path of live nodes.

    Fast path: follow children whose key equals the next unit's key. Where that fails, every live child is
    compared token by token (depth-first, since a stored unit may end inside a new one and continue below).
    At a unit boundary an equal-key live child is followed alone (ties to the key path).
    """
    node, i, m = root, 0, len(units)
    while i < m:
        c = node.children.get(units[i].key)
        if c is None or not live(c):
            break
        node, i = c, i + 1
    return match_from(node, units, i, live)


def match_from(node: Node, units: Sequence[Unit], i: int, live: Live) -> int:
    """match_length's search after its fast path, which reached `node` with units[:i] (all live)."""
    m = len(units)
    if i == m or not node.children:
        return node.end
    best = node.end
    stack: list[tuple[Node, int, int]] = [(node, i, 0)]
    while stack:
        node, i, j = stack.pop()
        while j == 0 and i < m:
            c = node.children.get(units[i].key)
            if c is None or not live(c):
                break
            node, i = c, i + 1
        if node.end > best:
            best = node.end
        if i == m:
            continue
        for c in node.children.values():
            if not live(c):
                continue
            k, ii, jj = _cmp_edge(c.ids, units, i, j)
            if k == len(c.ids):
                stack.append((c, ii, jj))
            elif node.end + k > best:
                best = node.end + k
    return best


class Walks:
    """Per (model, stream): the units and the trie nodes of the last prompt walked, so the next prompt of the
    stream skips the prefix it shares with it (found by identity, see bench.render.common_len) instead of
    walking it unit by unit. A simulator drops an entry whenever its nodes may have left the trie."""

    __slots__ = ("units", "path")

    def __init__(self) -> None:
        self.units: list[Unit] = []
        self.path: list[Node] = []

    def shared(self, units: list[Unit]) -> int:
        """How many leading units of `units` the last prompt had, with their nodes in self.path."""
        return shared_len(self.units, units) if self.units else 0

    def shared_keys(self, units: list[Unit]) -> int:
        """Like shared(), counting a unit that differs only in its breakpoint flag as shared (equal keys, equal
        token ids): the breakpoint moves off the last prompt's last message, which the simulators that ignore
        breakpoints would otherwise compare token by token."""
        old = self.units
        if not old:
            return 0
        k = shared_len(old, units)
        n = min(len(old), len(units))
        while k < n and old[k].key == units[k].key:
            k += 1
        return k


# The last pair of unit lists shared_len compared, and the answer: every simulator of a profile set asks it
# for the same (previous prompt, prompt) pair in turn, so the comparison runs once per prompt, not once per
# simulator. Exact because a rendering's unit list is never changed once handed out (bench.render), and the
# strong references keep both lists (and so their identities) alive.
_LAST_SHARED: list[Any] = [None, None, 0]


def shared_len(a: list[Unit], b: list[Unit]) -> int:
    """common_len(a, b), remembered for the last pair of lists (by identity)."""
    last = _LAST_SHARED
    if last[1] is b and last[0] is a:
        k: int = last[2]
        return k
    k = common_len(a, b)
    last[0], last[1], last[2] = a, b, k
    return k


def prune(root: Node, keep: Callable[[Node], bool]) -> int:
    """Drop every child (with its subtree) for which keep() is False; returns the nodes left."""
    left, stack = 0, [root]
    while stack:
        node = stack.pop()
        dead = [k for k, c in node.children.items() if not keep(c)]
        for k in dead:
            del node.children[k]
        left += len(node.children)
        stack.extend(node.children.values())
    return left


def count_nodes(root: Node) -> int:
    n, stack = 0, [root]
    while stack:
        node = stack.pop()
        n += len(node.children)
        stack.extend(node.children.values())
    return n


def prune_unless_any(root: Node, pred: Callable[[Node], bool]) -> None:
    """Drop every subtree in which no node satisfies pred (iterative post-order: tries can be deep)."""
    order: list[Node] = []
    stack = [root]
    add, push, pop = order.append, stack.extend, stack.pop
    while stack:
        node = pop()
        add(node)
        if node.children:
            push(node.children.values())
    for node in reversed(order):  # children before parents: their `keep` flags are set
        ch = node.children
        keep = pred(node)
        if ch:
            dead = [k for k, c in ch.items() if not c.keep]
            if len(dead) < len(ch):
                keep = True
            for k in dead:
                del ch[k]
        node.keep = keep


def prune_unless_entry(root: Node, now: float) -> None:
    """prune_unless_any(root, lambda nd: nd.entry > now), without a call per node (the anthropic sweep)."""
    order: list[Node] = []
    stack = [root]
    add, push, pop = order.append, stack.extend, stack.pop
    while stack:
        node = pop()
        add(node)
        if node.children:
            push(node.children.values())
    for node in reversed(order):
        ch = node.children
        keep = node.entry > now
        if ch:
            dead = [k for k, c in ch.items() if not c.keep]
            if len(dead) < len(ch):
                keep = True
            for k in dead:
                del ch[k]
        node.keep = keep


W = TypeVar("W")


def stream_state(roots: dict, walks: dict, key: tuple[str, str], walk_factory: Callable[[], W]) -> tuple[Node, W]:
    """The trie root and the last-prompt walk of one (model, stream), created on first use."""
    root = roots.get(key)
    if root is None:
        root = roots[key] = Node()
    w = walks.get(key)
    if w is None:
        w = walks[key] = walk_factory()
    return root, w
