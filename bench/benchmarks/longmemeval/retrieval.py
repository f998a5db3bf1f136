"""Retrieval metrics of a retrieving strategy (rag), scored by the harness as LongMemEval scores retrieval.

The strategy reports what it retrieved at question time as opaque labels in its prompt's meta
(`retrieved_items`: `[session label, timeline turn index or None]`, best first; `top_k`; `granularity`). The
harness maps them back to the dataset's session ids and turn positions, and judges them against the gold
labels the system under test never sees: `answer_session_ids` and the turns' `has_answer`.

Definitions follow LongMemEval's `src/retrieval/eval_utils.py` and `run_retrieval.py`
(github.com/xiaowu0162/LongMemEval), in our own code:

- turn ids are `<session id>_<position of the user turn, 1-based>`; a gold turn is a user turn with
  `has_answer` in an answer session; a gold session is an answer session with such a user turn;
- `recall_any@k` = 1 if any gold item is in the first k retrieved, `recall_all@k` = 1 if all are,
  `ndcg_any@k` = DCG of the first k (binary relevance, log2 discount from rank 2) over the ideal DCG of the
  gold items in the corpus;
- turn results are also scored at session level (`turn_session`): items become their sessions and k grows
  until the first k items cover k distinct sessions (`evaluate_retrieval_turn2session`);
- abstention questions (`_abs` in the id) and questions with no user-side `has_answer` get no scores.

Differences, by construction: our corpus items are rounds (a user turn with its reply) or whole sessions of
both roles, where LongMemEval indexes user turns only; and the strategy returns its `top_k` items, not a
ranking of the whole corpus, so k stops at `top_k` (an item not retrieved counts as ranked below them all).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from bench.benchmarks.longmemeval.rules import is_abstention
from bench.data.schema import Instance
from bench.replay import build_timeline
from bench.store.contract import RetrievalRow

KS = (1, 3, 5, 10, 30, 50)  # LongMemEval's k values


@dataclass(frozen=True)
class Corpus:
    """What the strategy could retrieve, in dataset ids: one id per corpus item, and the gold ids."""

    ids: tuple[str, ...]  # every item id in the corpus (turn ids or session ids)
    gold: frozenset[str]


def session_ids_by_label(inst: Instance) -> dict[str, str]:
    """Opaque session label (as in `inst.view()`) -> the dataset's session id."""
    view = inst.view()
    ordered = sorted(inst.sessions, key=lambda s: s.date)  # the view's order (a stable sort by date)
    if [s.date for s in ordered] != [v.date for v in view.sessions]:
        raise AssertionError("the view's session order changed; update session_ids_by_label")
    return {v.label: s.session_id for v, s in zip(view.sessions, ordered)}


def gold_turn_ids(inst: Instance) -> frozenset[str]:
    wanted = set(inst.answer_session_ids)
    return frozenset(f"{s.session_id}_{k + 1}" for s in inst.sessions if s.session_id in wanted
                     for k, t in enumerate(s.turns) if t.role == "user" and t.has_answer)


def gold_session_ids(inst: Instance) -> frozenset[str]:
    return frozenset(t.rsplit("_", 1)[0] for t in gold_turn_ids(inst))


def scorable(inst: Instance) -> bool:
    """LongMemEval scores retrieval except for abstention questions and those without a user-side gold turn."""
    return not is_abstention(inst.question_id) and bool(gold_turn_ids(inst))


def _turn_id(session_id: str, user_turn: int | None, index: int) -> str:
    # an assistant-only round has no LongMemEval id; it can never be gold
    return f"{session_id}_{user_turn + 1}" if user_turn is not None else f"{session_id}_a{index}"


def corpus(inst: Instance, granularity: str) -> Corpus:
    """The corpus a rag strategy built from `inst.view()`: rounds of the replay timeline, or sessions."""
    sid = session_ids_by_label(inst)
    if granularity == "session":
        ids = tuple(sid[v.label] for v in inst.view().sessions)
        gold = gold_session_ids(inst)
    else:
        ids = tuple(_turn_id(sid[t.thread_id], t.user_turn, t.index) for t in build_timeline(inst.view()))
        gold = gold_turn_ids(inst)
    return Corpus(ids, gold & frozenset(ids))  # as LongMemEval: the gold ids found in the corpus


def retrieved_ids(inst: Instance, items: Sequence[Sequence[Any]]) -> list[str]:
    """Dataset ids of the reported items (`[label, timeline index or None]`, best first)."""
    sid = session_ids_by_label(inst)
    by_index = {t.index: t for t in build_timeline(inst.view())}
    out = []
    for label, index in items:
        if index is None:
            out.append(sid[label])
        else:
            t = by_index[int(index)]
            out.append(_turn_id(sid[t.thread_id], t.user_turn, t.index))
    return out


def dcg(relevances: Sequence[float]) -> float:
    """Discounted cumulative gain: the first item undiscounted, item i (1-based, i >= 2) divided by log2(i)."""
    return sum(r if i == 0 else r / math.log2(i + 1) for i, r in enumerate(relevances))


def score(ranked: Sequence[str], gold: frozenset[str], n_relevant_in_corpus: int, k: int) -> tuple[float, float, float]:
    """(recall_any@k, recall_all@k, ndcg_any@k) of a ranking (best first) against the gold ids."""
    top = set(ranked[:k])
    recall_any = float(any(g in top for g in gold))
    recall_all = float(all(g in top for g in gold))
    ideal = dcg([1.0] * min(n_relevant_in_corpus, k))
    ndcg = dcg([1.0 if d in gold else 0.0 for d in ranked[:k]]) / ideal if ideal else 0.0
    return recall_any, recall_all, ndcg


def _session(turn_id: str) -> str:
    return turn_id.rsplit("_", 1)[0]


def turn_to_session(ranked: Sequence[str], corpus_ids: Sequence[str], gold: frozenset[str],
                    k: int) -> tuple[float, float, float]:
    """Turn results scored at session level: k grows until the first k items span k sessions (or the corpus
    runs out), and every item of a gold session counts as relevant, as in the official conversion."""
    sessions = [_session(d) for d in ranked]
    gold_s = frozenset(_session(g) for g in gold)
    eff = k
    while eff <= len(corpus_ids) and len(set(sessions[:eff])) < k:
        eff += 1
    n_rel = sum(1 for d in corpus_ids if _session(d) in gold_s)
    return score(sessions, gold_s, n_rel, eff)


def retrieval_rows(inst: Instance, meta: Mapping[str, Any], ks: Sequence[int] = KS) -> list[RetrievalRow]:
    """The retrieval rows of one question from its question-time prompt's meta; [] when the strategy reported
    no retrieval or LongMemEval does not score the question."""
    items = meta.get("retrieved_items")
    if items is None or not scorable(inst):
        return []
    granularity = str(meta.get("granularity") or "round")
    top_k = int(meta.get("top_k") or len(items))
    c = corpus(inst, granularity)
    ranked = retrieved_ids(inst, items)
    n_gold = len(c.gold)
    rows = []
    for k in [k for k in ks if k < top_k] + [top_k]:  # LongMemEval's k values up to top_k, and top_k
        if granularity == "session":
            rows.append(RetrievalRow("session", k, *score(ranked, c.gold, n_gold, k), n_gold, len(ranked)))
        else:
            rows.append(RetrievalRow("turn", k, *score(ranked, c.gold, n_gold, k), n_gold, len(ranked)))
            rows.append(RetrievalRow("turn_session", k, *turn_to_session(ranked, c.ids, c.gold, k),
                                     len({_session(g) for g in c.gold}), len(ranked)))
    return rows
