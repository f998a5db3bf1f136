"""decay: a memory that forgets (seed 004). Every message is scored when it is stored, its activation decays
with age, items below a threshold are forgotten, related items are periodically consolidated into one, and the
Actor sees the items that score best by activation x relevance.

Replay, per user turn: at a new session the previous session's unscored messages are scored (event
`evaluate`), the memory is cleaned up at the session's time (`cleanup`), and every `consolidate_every`
sessions groups of related items are merged by the summariser (`consolidate`); then the top items for the
user message are retrieved (`retrieve` when the set changed; each shown item's `access_count` and
`last_accessed_at` are updated) and the prompt rendered; then the pair joins the current session, and every
`evaluate_every` rounds the pending messages are scored in one call. At question time the pending messages
are scored, the memory cleaned up at the question's time, and the question is the query.

Prompt (the layout of rag): [system] system prompt | [system] header + the retrieved items, oldest first, each
with its date and who said it | the last `recent_turns` rounds of the current session, raw | [user] the new
message (at question time `Current Date: …\nQuestion: …`). Each item is its own segment, so a changed retrieval
misses the cache from the first item that differs. Activation is never shown (it changes every turn).

Scores come from the `evaluator` model role (`evaluator: model`, a JSON request; a reply that cannot be used
falls back to the rule-based scores for the memories it misses, event `evaluate_fallback`, one line kept in the
state) or from seed 004's keyword and source rules (`evaluator: rules`, no calls). Consolidation is a
summarisation, so the summariser role writes it (see docs/decay.md).
"""

from __future__ import annotations

import heapq
import logging
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from bench.prompt import Prompt, Segment
from bench.replay import ReplayTurn, as_utc
from bench.roles import Role
from bench.strategies.base import Range, StrategyBase, StrategyContext, TurnResult
from bench.strategies.bm25 import BM25Index, term_counts
from bench.strategies.decay_evaluator import Scores, evaluator_request, parse_scores, rule_scores
from bench.strategies.decay_memory import (
    DecayKnobs,
    MemoryItem,
    consolidation_groups,
    forget_after,
    forgotten,
    item_activation,
    merge_items,
    rank_doc_scores,
)
from bench.strategies.history import Msg, SegmentCache, question_text, system_segments, turn_msgs, user_msg

log = logging.getLogger(__name__)

MEMORY_HEADER = (
    "Things you remember from earlier conversations with this user, oldest first. Each starts with its date "
    "and who said it; your memory fades, so what is here is what stayed relevant. Use them when they help.\n"
)
CONSOLIDATE_SYSTEM = (
    "You keep an assistant's long-term memory of one user. The memories the user sends are separate "
    "observations about the same subject, each with its date and who said it. Merge them into one short, "
    "general memory that keeps every concrete detail the user may need later: names, numbers, places, dates, "
    "preferences, and the latest value where one changed (say that it changed). Never combine two facts into "
    "a claim neither of them made. Output only the merged memory."
)
CONSOLIDATE_REQUEST = "Memories to merge:\n\n"
MAX_FAILURES_KEPT = 20
MAX_QUERY_COUNTS_KEPT = 64  # bounds the memo when queries never become items (remember nothing, questions)


@dataclass
class DecayParams:
    evaluator: Literal["model", "rules"] = "model"  # the evaluator model role, or seed 004's rules (no calls)
    evaluate_every: Annotated[int, Range(ge=1, unit="rounds")] = 4  # rounds scored per evaluator call (and at every session end)
    decay_factor: Annotated[float, Range(gt=0, le=1, unit="(activation kept per day)")] = 0.95
    importance_weight: Annotated[float, Range(ge=0)] = 0.7
    volatility_weight: Annotated[float, Range(ge=0, le=1)] = 0.3
    access_boost: Annotated[float, Range(ge=0)] = 0.1
    cleanup_threshold: Annotated[float, Range(ge=0, lt=1)] = 0.1  # items whose activation falls below this are forgotten
    # also forget items older than this whatever their activation (seed: 30)
    max_age_days: Annotated[float | None, Range(gt=0, unit="days (or null)")] = None
    consolidate_every: Annotated[int, Range(ge=0, unit="sessions (0 = never)")] = 5  # sessions between consolidation passes
    consolidate_group_size: Annotated[int, Range(ge=2)] = 4  # items sharing an entity merged into one
    consolidate_max_groups: Annotated[int, Range(ge=1)] = 2  # merges per pass (bounds the summariser calls)
    consolidation_max_tokens: Annotated[int, Range(ge=16, unit="tokens")] = 300
    top_k: Annotated[int, Range(ge=1)] = 10
    recent_turns: Annotated[int, Range(ge=0, unit="rounds")] = 4  # rounds of the current session kept raw
    remember_assistant: bool = True  # store the assistant's messages too (LongMemEval asks about them)
    stopwords: bool = True  # BM25 relevance: drop function words
    k1: Annotated[float, Range(ge=0)] = 1.5
    b: Annotated[float, Range(ge=0, le=1)] = 0.75


@dataclass
class _Pending:
    """A message waiting to be scored."""

    source: Literal["user", "assistant"]
    content: str
    date_str: str
    at: datetime
    turn: int


class DecayStrategy(StrategyBase):
    name = "decay"
    params_type = DecayParams
    roles = frozenset({Role.EVALUATOR, Role.SUMMARIZER})  # narrowed by model_roles

    def __init__(self, p: DecayParams, ctx: StrategyContext) -> None:
        self.p = p
        self.ctx = ctx
        self.knobs = DecayKnobs(p.decay_factor, p.importance_weight, p.volatility_weight, p.access_boost)
        roles = self.model_roles(p)
        self.evaluator = ctx.model(Role.EVALUATOR, self.name) if Role.EVALUATOR in roles else None
        self.summarizer = ctx.model(Role.SUMMARIZER, self.name) if Role.SUMMARIZER in roles else None
        self._reset()

    def _reset(self) -> None:
        self.items: dict[int, MemoryItem] = {}
        self.next_id = 0
        self.pending: list[_Pending] = []
        self.pending_rounds = 0
        self.cur: list[tuple[int, list[Msg]]] = []  # (turn index, messages) per round of the current session
        self.label: str | None = None
        self.sessions = 0
        self.now: datetime | None = None  # the replay clock's latest reading
        self.last_ids: list[int] = []
        self.failures: list[str] = []
        self.stats = {"evaluated": 0, "evaluator_calls": 0, "fallbacks": 0, "forgotten": 0, "consolidations": 0,
                      "accesses": 0}
        self._index = BM25Index(self.p.k1, self.p.b)
        self._doc_item: list[int] = []  # BM25 doc id -> item id (ids of removed documents included)
        self._item_doc: dict[int, int] = {}  # item id -> its BM25 doc id
        # replay turn -> the ids of the items made from its messages (of removed items too): a retrieval leaves
        # out the documents of the rounds shown raw without looking at every match's item
        self._turn_items: dict[int, list[int]] = {}
        # term counts of the user messages queried since the last evaluation: each becomes an item soon after
        self._query_counts: dict[str, Counter[str]] = {}
        self._stale = False  # loaded from a state: build the index before the next query
        self._item_segs: dict[tuple[int, bool], Segment] = {}
        self._segs = SegmentCache()
        # (forget_after's time, item id) per item (of removed items too, until popped): a cleanup checks only
        # the items whose time has come
        self._due: list[tuple[float, int]] = []

    # ---- protocol ---------------------------------------------------------------------------------------
    async def add_turn(self, turn: ReplayTurn) -> TurnResult:
        events: list[str] = []
        self.now = turn.user_at
        if turn.thread_id != self.label:
            await self._flush(events)
            self.label, self.cur = turn.thread_id, []
            self.sessions += 1
            self._cleanup(turn.user_at, events)
            if self.p.consolidate_every and self.sessions > 1 and (self.sessions - 1) % self.p.consolidate_every == 0:
                await self._consolidate(events)
        user = user_msg(turn, self.ctx.line_tokens)
        result = TurnResult(prompt=None, events=events)
        if user is not None:
            window = self.cur[-self.p.recent_turns:] if self.p.recent_turns else []
            ids = self._retrieve(user.text, turn.user_at, exclude={t for t, _ in window})
            if ids != self.last_ids:
                events.append("retrieve")
            self.last_ids = ids
            result.prompt = self._render(ids, [m for _, ms in window for m in ms], user)
        msgs = list(turn_msgs(turn, self.ctx.line_tokens, user))
        self.cur.append((turn.index, msgs))
        for m in msgs:
            if m.role == "user" or self.p.remember_assistant:
                at = turn.user_at if m.role == "user" else turn.assistant_at
                self.pending.append(_Pending("user" if m.role == "user" else "assistant", m.text, turn.date_str, at,
                                             turn.index))
        self.pending_rounds += 1
        if self.pending_rounds >= self.p.evaluate_every:
            await self._flush(events)
        self.now = turn.assistant_at
        return result

    async def question_prompt(self, question: str, question_date: datetime, question_date_str: str) -> Prompt:
        events: list[str] = []
        await self._flush(events)
        now = as_utc(question_date)
        self.now = max(now, self.now) if self.now else now
        self._cleanup(self.now, events)
        self.cur = []
        ids = self._retrieve(question, self.now, exclude=set())
        self.last_ids = ids
        return self._render(ids, [], Msg("user", question_text(question, question_date_str), "question", 0))

    def state(self) -> dict[str, Any]:
        now = self.now
        items = []
        for item in self.items.values():
            d = item.to_json()
            if now is not None:  # for inspection only: recomputed from the fields, never loaded
                d["activation"] = round(item_activation(item, now, self.knobs), 4)
            items.append(d)
        return {
            "clock": now.isoformat() if now else None,
            "label": self.label,
            "sessions": self.sessions,
            "next_id": self.next_id,
            "items": items,
            "pending": [[q.source, q.content, q.date_str, q.at.isoformat(), q.turn] for q in self.pending],
            "pending_rounds": self.pending_rounds,
            "window": [[t, [[m.role, m.text, m.key] for m in ms]] for t, ms in self.cur],
            "last_retrieved": list(self.last_ids),
            "stats": dict(self.stats),
            "evaluator_failures": list(self.failures),
        }

    def load_state(self, state: dict[str, Any]) -> None:
        self._reset()
        clock = state.get("clock")
        self.now = datetime.fromisoformat(clock) if clock else None
        self.label = state.get("label")
        self.sessions = int(state.get("sessions", 0))
        self.next_id = int(state.get("next_id", 0))
        for d in state.get("items", []):
            item = MemoryItem.from_json(d)
            self.items[item.id] = item
            self._watch(item)
            self._turn_items.setdefault(item.turn, []).append(item.id)
        self.pending = [_Pending(s, c, ds, datetime.fromisoformat(at), int(t)) for s, c, ds, at, t in state.get("pending", [])]
        self.pending_rounds = int(state.get("pending_rounds", 0))
        self.cur = [(int(t), [Msg(r, x, k, self.ctx.tokens(x)) for r, x, k in ms]) for t, ms in state.get("window", [])]
        self.last_ids = [int(i) for i in state.get("last_retrieved", [])]
        self.stats.update(state.get("stats", {}))
        self.failures = list(state.get("evaluator_failures", []))
        self._stale = True

    @classmethod
    def model_roles(cls, p: DecayParams) -> frozenset[Role]:
        roles = set()
        if p.evaluator == "model":
            roles.add(Role.EVALUATOR)
        if p.consolidate_every > 0:
            roles.add(Role.SUMMARIZER)
        return frozenset(roles)

    # ---- scoring ----------------------------------------------------------------------------------------
    async def _flush(self, events: list[str]) -> None:
        """Score the pending messages and store them as items."""
        pending, self.pending, self.pending_rounds = self.pending, [], 0
        if not pending:
            return
        ids = list(range(self.next_id, self.next_id + len(pending)))
        rules = {i: rule_scores(q.content, q.source) for i, q in zip(ids, pending)}
        scores: dict[int, Scores] = rules
        if self.evaluator is not None:
            request = evaluator_request((i, q.source, q.date_str, q.content) for i, q in zip(ids, pending))
            reply = await self.evaluator.complete(request, role=Role.EVALUATOR.value, temperature=0.0,
                                                  max_tokens=100 + 60 * len(pending))
            self.stats["evaluator_calls"] += 1
            got, problem = parse_scores(reply.text, ids)
            if problem:
                line = f"{pending[0].date_str}: {problem}; rule-based scores used for {len(ids) - len(got)} of {len(ids)}"
                log.warning("decay: %s", line)
                self.failures = [*self.failures, line][-MAX_FAILURES_KEPT:]
                self.stats["fallbacks"] += 1
                events.append("evaluate_fallback")
            scores = {i: got.get(i, rules[i]) for i in ids}
        for i, q in zip(ids, pending):
            s = scores[i]
            self._add(MemoryItem(id=i, content=q.content, source=q.source, date_str=q.date_str, created_at=q.at,
                                 last_accessed_at=q.at, importance=s.importance, volatility=s.volatility,
                                 entities=list(s.entities), turn=q.turn))
        self.next_id += len(pending)
        self.stats["evaluated"] += len(pending)
        events.append("evaluate")

    # ---- forgetting and consolidation -------------------------------------------------------------------
    def _cleanup(self, now: datetime, events: list[str]) -> None:
        """Forget what `forgotten` lists of the items, checking only those whose `forget_after` time has come
        (the others are not listed); the checked items that stay are watched again from their new time."""
        due, now_s = self._due, now.timestamp()
        ids = []
        while due and due[0][0] <= now_s:
            i = heapq.heappop(due)[1]
            if i in self.items:
                ids.append(i)
        if not ids:
            return
        checked = [self.items[i] for i in sorted(ids)]  # in the items' order (ids only grow)
        gone = forgotten(checked, now, self.knobs, self.p.cleanup_threshold, self.p.max_age_days)
        kept = set(ids).difference(gone)
        for item in checked:
            if item.id in kept:
                self._watch(item)
        if gone:
            self._remove(gone)
            self.stats["forgotten"] += len(gone)
            events.append("cleanup")

    async def _consolidate(self, events: list[str]) -> None:
        assert self.summarizer is not None
        groups = consolidation_groups(self.items.values(), self.p.consolidate_group_size, self.p.consolidate_max_groups)
        for group in groups:
            body = "\n\n".join(f"On {i.date_str} the {i.source} said: {i.content}" for i in group)
            request = [{"role": "system", "content": CONSOLIDATE_SYSTEM},
                       {"role": "user", "content": CONSOLIDATE_REQUEST + body}]
            reply = await self.summarizer.complete(request, role=Role.SUMMARIZER.value, temperature=0.0,
                                                   max_tokens=self.p.consolidation_max_tokens)
            text = reply.text.strip()
            if not text:
                continue  # nothing to replace the group with: keep it
            self._remove([i.id for i in group])
            self._add(merge_items(self.next_id, text, group))
            self.next_id += 1
            self.stats["consolidations"] += 1
        if groups:
            events.append("consolidate")

    # ---- the items and their index ----------------------------------------------------------------------
    def _watch(self, item: MemoryItem) -> None:
        heapq.heappush(self._due, (forget_after(item, self.knobs, self.p.cleanup_threshold, self.p.max_age_days),
                                   item.id))

    def _add(self, item: MemoryItem) -> None:
        self.items[item.id] = item
        self._watch(item)
        self._turn_items.setdefault(item.turn, []).append(item.id)
        if not self._stale:
            counts = self._query_counts.pop(item.content, None) or term_counts(item.content, self.p.stopwords)
            self._item_doc[item.id] = self._index.add_counts(counts)
            self._doc_item.append(item.id)

    def _remove(self, ids: list[int]) -> None:
        for i in ids:
            self.items.pop(i, None)
            self._item_segs.pop((i, False), None)
            self._item_segs.pop((i, True), None)
            doc = self._item_doc.pop(i, None)
            if doc is not None:  # the index scores as if rebuilt from the remaining items
                self._index.remove(doc)

    def _reindex(self) -> None:
        """BM25 over the live items (after load_state: the index is not part of the state)."""
        self._index = BM25Index(self.p.k1, self.p.b)
        self._doc_item = []
        self._item_doc = {}
        for item in self.items.values():
            self._item_doc[item.id] = self._index.add_counts(term_counts(item.content, self.p.stopwords))
            self._doc_item.append(item.id)
        self._stale = False

    def _retrieve(self, query: str, now: datetime, exclude: set[int]) -> list[int]:
        """Ids of the top items by activation x relevance (BM25 over the live items, divided by the best
        score; only items sharing a term with the query), oldest first; items from the rounds in `exclude`
        (shown raw) are left out. Each returned item counts an access at `now`."""
        if self._stale:
            self._reindex()
        if not self._index:
            return []
        counts = term_counts(query, self.p.stopwords)
        if len(self._query_counts) < MAX_QUERY_COUNTS_KEPT:
            self._query_counts[query] = counts
        scores = self._index.scores_counts(counts)
        item_doc = self._item_doc
        for t in exclude:  # the documents of items from the rounds shown raw (the same as testing each match's turn)
            for i in self._turn_items.get(t, ()):
                d = item_doc.get(i)
                if d is not None:
                    scores.pop(d, None)
        # relevance: the score over the best one. BM25 gives a term found in half the items or more no weight
        # (idf <= 0): when no matching term carries any, every match is equally relevant and activation alone
        # ranks them
        top = rank_doc_scores(scores, self.items, self._doc_item, now, self.knobs, self.p.top_k)
        for item in top:
            item.access_count += 1
            item.last_accessed_at = now
        self.stats["accesses"] += len(top)
        return [i.id for i in sorted(top, key=lambda i: (i.created_at, i.id))]

    # ---- rendering --------------------------------------------------------------------------------------
    def _render(self, ids: list[int], window: list[Msg], new: Msg) -> Prompt:
        # cache breakpoints (Anthropic): system prompt, end of the memories, and the last message
        segs = system_segments(self.ctx.system_prompt)
        if ids:
            idx = len(segs)
            segs.append(self._segs.get("system", MEMORY_HEADER, "decay:header", False, idx))
            segs.extend(self._item_segment(i, idx, i == ids[-1]) for i in ids)
        idx = (segs[-1].message_index + 1) if segs else 0
        segs.extend(self._segs.get(m.role, m.text, m.key, False, idx + n) for n, m in enumerate(window))
        segs.append(Segment(new.role, new.text, new.key, True, idx + len(window)))
        return Prompt(segments=segs, meta={"retrieved": len(ids), "items": len(self.items)})

    def _item_segment(self, item_id: int, index: int, breakpoint: bool) -> Segment:
        """One retrieved item; the same Segment object in every prompt that shows it at that place."""
        seg = self._item_segs.get((item_id, breakpoint))
        if seg is None or seg.message_index != index:
            item = self.items[item_id]
            who = "consolidated memory" if item.source == "consolidated" else item.source
            seg = Segment("system", f"\n[{item.date_str}] {who}: {item.content}\n", f"decay:item:{item_id}",
                          breakpoint, index)
            self._item_segs[(item_id, breakpoint)] = seg
        return seg
