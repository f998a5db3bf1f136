"""`ideal`: an infinite cache that never expires. cached = longest common token prefix with any earlier
prompt of the same (model, stream). The upper bound every provider profile is compared against."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bench.render import prompt_units
from bench.cachesim.base import CacheResult
from bench.cachesim.common import Pricing, check_positive, result
from bench.cachesim.trie import BareNode, Node, Walks, match_from
from bench.prompt import Prompt


@dataclass
class IdealConfig(Pricing):
    read_multiplier: float = 0.1  # cached tokens priced like a typical provider read

    def __post_init__(self) -> None:
        check_positive("ideal", read_multiplier=self.read_multiplier, input_per_token=self.input_per_token)

    def multipliers(self, model: str) -> tuple[float, float]:
        return self.read_multiplier, 1.0


def _always(_: Node) -> bool:
    return True


class IdealSimulator:
    def __init__(self, config: IdealConfig | None = None, name: str = "ideal") -> None:
        self.name = name
        self.config = config or IdealConfig()
        self._roots: dict[tuple[str, str], Node] = {}
        self._walks: dict[tuple[str, str], Walks] = {}

    def reset(self) -> None:
        self._roots.clear()
        self._walks.clear()

    def observe(self, t: datetime | float, prompt: Prompt, model: str = "", stream: str = "actor") -> CacheResult:
        units = prompt_units(prompt)
        key = (model, stream)
        root = self._roots.get(key)
        if root is None:
            root = self._roots[key] = Node()
            self._walks[key] = Walks()
        w = self._walks[key]
        # Nodes are never removed, so the previous prompt's nodes for the shared units are still the trie
        # path of those units: start the fast path of match_length after them.
        k = w.shared(units)
        path = w.path
        del path[k:]
        node, i, m = (path[-1] if k else root), k, len(units)
        while i < m:
            c = node.children.get(units[i].key)
            if c is None:
                break
            path.append(c)
            node, i = c, i + 1
        cached = match_from(node, units, i, _always)
        for u in units[i:]:  # insert the rest of this prompt's path (new nodes: no look-ups needed)
            c = node.children[u.key] = BareNode(u.key, u.ids, node.end + len(u.ids))
            path.append(c)
            node = c
        w.units = units
        cfg = self.config
        return result(node.end, cached, 0, cfg.base(model), *cfg.multipliers(model))
