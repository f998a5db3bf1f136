"""The decay strategy's memory items and the pure rules over them: activation, forgetting, consolidation groups,
ranking. No I/O, no model calls, no wall clock: every function takes the replay clock's `now`.

Activation (seed 004's forgetting curve, with its defaults):

    activation = decay_factor ** age_days * (1 + importance * importance_weight)
                 * (1 - volatility * volatility_weight) + log10(access_count + 1) * access_boost

clamped to [0, 1], where `age_days` is the time since the item was created (fractional days). As in the seed,
`last_accessed_at` is kept for inspection but does not enter the formula; accesses count through `access_count`.
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from operator import attrgetter, itemgetter
from typing import Any, Iterable, Literal, Mapping, Sequence

Source = Literal["user", "assistant", "consolidated"]


@dataclass(frozen=True)
class DecayKnobs:
    """The activation formula's knobs (seed 004's defaults). `decay_factor` is per day."""

    decay_factor: float = 0.95
    importance_weight: float = 0.7
    volatility_weight: float = 0.3
    access_boost: float = 0.1


@dataclass
class MemoryItem:
    """One remembered message (or a consolidation of several).

    `importance` and `volatility` are in [0, 1] (volatility: how soon it goes out of date); times are on the
    replay clock (timezone-aware UTC); `turn` is the replay turn it came from (-1 for a consolidated item);
    `merged` the ids a consolidated item replaced."""

    id: int
    content: str
    source: Source
    date_str: str  # shown to the Actor: the session stamp (a consolidated item: its first and last)
    created_at: datetime
    last_accessed_at: datetime
    importance: float = 0.5
    volatility: float = 0.5
    access_count: int = 0
    entities: list[str] = field(default_factory=list)
    turn: int = -1
    merged: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "content": self.content, "source": self.source, "date_str": self.date_str,
            "created_at": self.created_at.isoformat(), "last_accessed_at": self.last_accessed_at.isoformat(),
            "importance": self.importance, "volatility": self.volatility, "access_count": self.access_count,
            "entities": list(self.entities), "turn": self.turn, "merged": list(self.merged),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> MemoryItem:
        return cls(
            id=int(d["id"]), content=str(d["content"]), source=d["source"], date_str=str(d["date_str"]),
            created_at=datetime.fromisoformat(d["created_at"]),
            last_accessed_at=datetime.fromisoformat(d["last_accessed_at"]),
            importance=float(d["importance"]), volatility=float(d["volatility"]),
            access_count=int(d["access_count"]), entities=[str(e) for e in d.get("entities", [])],
            turn=int(d.get("turn", -1)), merged=[int(i) for i in d.get("merged", [])],
        )


def age_days(created_at: datetime, now: datetime) -> float:
    """Fractional days from `created_at` to `now` (0 when `now` is earlier)."""
    return max(0.0, (now - created_at).total_seconds() / 86400.0)


def activation(importance: float, volatility: float, days: float, access_count: int,
               knobs: DecayKnobs = DecayKnobs()) -> float:
    """Seed 004's activation of an item `days` old, accessed `access_count` times, clamped to [0, 1]."""
    base = math.pow(knobs.decay_factor, max(0.0, days))
    value = (base * (1 + importance * knobs.importance_weight) * (1 - volatility * knobs.volatility_weight)
             + math.log10(access_count + 1) * knobs.access_boost)
    return min(1.0, max(0.0, value))


def item_activation(item: MemoryItem, now: datetime, knobs: DecayKnobs = DecayKnobs()) -> float:
    return activation(item.importance, item.volatility, age_days(item.created_at, now), item.access_count, knobs)


def forgotten(items: Iterable[MemoryItem], now: datetime, knobs: DecayKnobs, threshold: float,
              max_age_days: float | None = None) -> list[int]:
    """Ids of the items a cleanup at `now` removes: activation below `threshold`, or (when set) older than
    `max_age_days` whatever their activation."""
    out = []
    for item in items:
        too_old = max_age_days is not None and age_days(item.created_at, now) > max_age_days
        if too_old or item_activation(item, now, knobs) < threshold:
            out.append(item.id)
    return out


FORGET_MARGIN = 1e-9  # activation above the threshold that forget_after's time keeps (covers rounding)


def forget_after(item: MemoryItem, knobs: DecayKnobs, threshold: float, max_age_days: float | None = None) -> float:
    """A POSIX time (seconds) before which no cleanup forgets `item` (`forgotten` would not list it): -inf when a
    cleanup at any time must check it, inf when none ever forgets it.

    Activation falls with age only (the access term only grows), so the time stays a lower bound while the
    item gains accesses. It is where the activation, without its clamp, falls to `threshold` + FORGET_MARGIN:
    days = log((threshold + margin - access term) / A) / log(decay_factor), A = (1 + importance x
    importance_weight) x (1 - volatility x volatility_weight); the margin is far above the rounding of that
    formula, of `activation` and of POSIX times, so before this time `activation` stays at or above the
    threshold. With `max_age_days`, at most one second before the item reaches that age."""
    limit = math.inf
    if max_age_days is not None:
        limit = item.created_at.timestamp() + max_age_days * 86400.0 - 1.0
    if threshold <= 0:  # activation is clamped at 0: nothing falls below
        return limit
    boost = math.log10(item.access_count + 1) * knobs.access_boost
    if boost >= threshold:  # the decaying term is never negative (below): activation stays at or above `boost`
        return limit
    a = (1 + item.importance * knobs.importance_weight) * (1 - item.volatility * knobs.volatility_weight)
    target = threshold + FORGET_MARGIN - boost
    if a <= 0 or a <= target:  # (a <= 0 only with knobs outside their ranges)
        return -math.inf
    if knobs.decay_factor >= 1:
        return limit
    days = math.log(target / a) / math.log(knobs.decay_factor)
    return min(limit, item.created_at.timestamp() + days * 86400.0)


def consolidation_groups(items: Iterable[MemoryItem], group_size: int, max_groups: int) -> list[list[MemoryItem]]:
    """Groups of `group_size` related items (sharing an entity) to merge, at most `max_groups`, no item twice.

    Consolidated items are never merged again (a summary of summaries would grow without bound). The entity
    shared by the most candidates goes first (ties: alphabetical); each group takes that entity's oldest
    items (specific early observations are what the seed folds into general knowledge)."""
    if group_size < 2 or max_groups < 1:
        return []
    pool = sorted((i for i in items if i.source != "consolidated"), key=attrgetter("created_at", "id"))
    # each entity's items in pool order, built once: taking a group removes its items from their entities' lists
    # (what a rebuild from the items not taken would give)
    by_entity: dict[str, list[MemoryItem]] = defaultdict(list)
    for item in pool:
        for e in dict.fromkeys(item.entities):
            by_entity[e].append(item)
    groups: list[list[MemoryItem]] = []
    while len(groups) < max_groups:
        ready = [(len(v), e) for e, v in by_entity.items() if len(v) >= group_size]
        if not ready:
            break
        _, entity = min(ready, key=lambda ne: (-ne[0], ne[1]))
        group = by_entity[entity][:group_size]
        groups.append(group)
        taken = {i.id for i in group}
        for e in {e for i in group for e in i.entities}:
            by_entity[e] = [i for i in by_entity[e] if i.id not in taken]
    return groups


def merge_items(new_id: int, content: str, group: list[MemoryItem]) -> MemoryItem:
    """The consolidated item replacing `group`: the most important member's importance, the most stable one's
    volatility, the newest member's creation time (merging does not make old knowledge young), accesses summed,
    entities united in order."""
    first = min(group, key=lambda i: (i.created_at, i.id))
    last = max(group, key=lambda i: (i.created_at, i.id))
    dates = first.date_str if first.date_str == last.date_str else f"{first.date_str} to {last.date_str}"
    return MemoryItem(
        id=new_id, content=content, source="consolidated", date_str=dates,
        created_at=last.created_at, last_accessed_at=max(i.last_accessed_at for i in group),
        importance=max(i.importance for i in group), volatility=min(i.volatility for i in group),
        access_count=sum(i.access_count for i in group),
        entities=list(dict.fromkeys(e for i in group for e in i.entities)),
        merged=[i.id for i in group],
    )


def rank_scores(scored: list[tuple[MemoryItem, float]], now: datetime, knobs: DecayKnobs, k: int) -> list[MemoryItem]:
    """rank() of the items with relevance max(0, score) / best score (1 for all when the best is not
    positive), from their raw scores (e.g. BM25): the relevance is computed only for the items rank visits.
    The same items as rank() (relevance grows with the score, so they are visited in an order rank() may take,
    and its result does not depend on the order among equal relevances)."""
    if not scored:
        return []
    best = max(s for _, s in scored)
    by_score = sorted(scored, key=itemgetter(1), reverse=True)
    if best > 0:
        return _top(((item, max(0.0, s) / best) for item, s in by_score), now, knobs, k)
    return _top(((item, 1.0) for item, _ in by_score), now, knobs, k)


def rank_doc_scores(scores: Mapping[int, float], items: Mapping[int, MemoryItem], doc_item: Sequence[int],
                    now: datetime, knobs: DecayKnobs, k: int) -> list[MemoryItem]:
    """rank_scores() of [(items[doc_item[d]], s) for d, s in scores.items()] (raw scores per document id, e.g.
    BM25's), looking up only the items rank visits: a query matches hundreds of items and rank visits about k."""
    if not scores:
        return []
    best = max(scores.values())
    by_score = sorted(scores.items(), key=itemgetter(1), reverse=True)  # stable: as rank_scores' sort
    if best > 0:
        return _top(((items[doc_item[d]], max(0.0, s) / best) for d, s in by_score), now, knobs, k)
    return _top(((items[doc_item[d]], 1.0) for d, _ in by_score), now, knobs, k)


def rank(scored: Iterable[tuple[MemoryItem, float]], now: datetime, knobs: DecayKnobs, k: int) -> list[MemoryItem]:
    """The top `k` items by activation x relevance (relevance in [0, 1]); items scoring 0 never rank.
    Ties: the older item first.

    Activation is at most 1, so an item scores at most its relevance: items are visited by falling relevance
    and the rest skipped once a relevance is below the k-th best score so far (they could not even tie)."""
    return _top(sorted(scored, key=itemgetter(1), reverse=True), now, knobs, k)


def _top(by_relevance: Iterable[tuple[MemoryItem, float]], now: datetime, knobs: DecayKnobs, k: int) -> list[MemoryItem]:
    """rank() of items given by falling relevance."""
    ranked = []
    best_k: list[float] = []  # a min-heap of the k best scores so far
    for item, relevance in by_relevance:
        if 0 < k <= len(best_k) and relevance < best_k[0]:
            break
        score = item_activation(item, now, knobs) * relevance
        if score > 0:
            ranked.append((-score, item.created_at, item.id, item))
            if len(best_k) < k:
                heapq.heappush(best_k, score)
            elif 0 < k and score > best_k[0]:
                heapq.heapreplace(best_k, score)
    ranked.sort(key=lambda r: r[:3])
    return [r[3] for r in ranked[:k]]
