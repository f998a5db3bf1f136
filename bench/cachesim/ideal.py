"""`ideal`: an infinite cache that never expires. cached = longest common token prefix with any earlier
prompt of the same (model, stream). The upper bound every provider profile is compared against."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bench.cachesim.base import CacheResult
from bench.cachesim.common import Pricing, check_positive, result
from bench.cachesim.trie import Node, match_length
from bench.prompt import Prompt


@dataclass
class IdealConfig(Pricing):
    read_multiplier: float = 0.1  # cached tokens priced like a typical provider read

    def __post_init__(self) -> None:
        check_positive("ideal", read_multiplier=self.read_multiplier, input_per_token=self.input_per_token)


def _always(_: Node) -> bool:
    return True


class IdealSimulator:
    def __init__(self, config: IdealConfig | None = None, name: str = "ideal") -> None:
        self.name = name
        self.config = config or IdealConfig()
        self._roots: dict[tuple[str, str], Node] = {}

    def reset(self) -> None:
        self._roots.clear()

    def observe(self, t: datetime | float, prompt: Prompt, model: str = "", stream: str = "actor") -> CacheResult:
        units = prompt.units()
        root = self._roots.setdefault((model, stream), Node())
        cached = match_length(root, units, _always)
        node = root
        for u in units:  # insert this prompt's path
            c = node.children.get(u.key)
            if c is None:
                c = node.children[u.key] = Node(u.key, u.ids, node.end + len(u.ids))
            node = c
        cfg = self.config
        return result(node.end, cached, 0, cfg.base(model), cfg.read_multiplier, 1.0)
