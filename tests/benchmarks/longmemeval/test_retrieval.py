"""Retrieval metrics as LongMemEval defines them (src/retrieval/eval_utils.py), scored by the harness from the
opaque ids the rag strategy reports. On the real oracle split, three questions' recall@k and NDCG@k equal values
worked out by hand from the retrieved and gold turn ids."""

from __future__ import annotations

import math

import pytest

from bench.benchmarks.longmemeval.retrieval import corpus, retrieval_rows, retrieved_ids, score, turn_to_session
from bench.ingest import ingest_question
from bench.strategies import ReplaySettings, resolve_strategy
from om_core.tokens import default_counter

LOG3 = 1 / math.log2(3)  # the discount of rank 3


def test_score_by_hand():
    gold = frozenset({"a", "c"})
    # ranks: b (miss), a (hit), c (hit): DCG = 0 + 1/log2(2) + 1/log2(3); ideal = 1 + 1
    assert score(["b", "a", "c"], gold, 2, 3) == (1.0, 1.0, pytest.approx((1 + LOG3) / 2))
    assert score(["b", "a", "c"], gold, 2, 1) == (0.0, 0.0, 0.0)
    assert score(["a", "b"], gold, 2, 2) == (1.0, 0.0, pytest.approx(1 / 2))  # c never retrieved


def test_turns_mapped_to_sessions_by_hand():
    corpus_ids = ["s1_1", "s1_3", "s2_1", "s3_1"]
    # k=2 needs two distinct sessions: the first three items (s1, s1, s2) are taken
    r = turn_to_session(["s1_1", "s1_3", "s2_1"], corpus_ids, frozenset({"s2_1"}), 2)
    # relevant: items of session s2 (one in the corpus); ranked sessions s1, s1, s2 -> DCG = 1/log2(3)
    assert r == (1.0, 1.0, pytest.approx(LOG3))


class _NoModels:  # bm25 rag calls no model
    def model(self, role):
        raise AssertionError(role)

    async def embed(self, texts, role="embedder"):
        raise AssertionError(role)


@pytest.fixture(scope="module")
def oracle(real_data_dir):
    from bench.benchmarks.longmemeval.loader import load_dataset

    path = real_data_dir / "longmemeval_oracle.json.xz"
    if not path.exists():
        pytest.skip(f"{path} missing")
    return {i.question_id: i for i in load_dataset(str(path)).instances}


async def _rows(inst, **params):
    spec = resolve_strategy("rag", params, ReplaySettings(actor_model="offline/reader"))
    got = await ingest_question(inst, spec, _NoModels(), default_counter(), {})
    meta = got.question_prompt.meta
    return retrieved_ids(inst, meta["retrieved_items"]), {(r.level, r.k): r for r in retrieval_rows(inst, meta)}


# question id -> (the turns bm25 retrieves best first, the gold user turns with has_answer)
ORACLE_ROUNDS = {
    "031748ae": (["answer_8748f791_1_9", "answer_8748f791_1_11", "answer_8748f791_2_3"],
                 {"answer_8748f791_1_11", "answer_8748f791_2_3"}),
    "01493427": (["answer_a7b44747_1_7", "answer_a7b44747_2_7", "answer_a7b44747_1_5"],
                 {"answer_a7b44747_1_7", "answer_a7b44747_2_7"}),
    "0100672e": (["answer_35c9798c_2_1", "answer_35c9798c_1_1", "answer_35c9798c_2_5"],
                 {"answer_35c9798c_1_1", "answer_35c9798c_2_1"}),
}


@pytest.mark.realdata
@pytest.mark.parametrize("qid", sorted(ORACLE_ROUNDS))
async def test_rag_recall_on_the_oracle_split_equals_the_hand_computed_value(oracle, qid):
    inst = oracle[qid]
    want_ranked, want_gold = ORACLE_ROUNDS[qid]
    assert corpus(inst, "round").gold == want_gold and len(corpus(inst, "round").ids) == 12
    ranked, rows = await _rows(inst, granularity="round", top_k=3)
    assert ranked == want_ranked
    # by hand: two gold turns; @1 the first item; @3 all three (DCG over ideal DCG = 1 + 1/log2(2) = 2)
    first_is_gold = want_ranked[0] in want_gold
    assert (rows["turn", 1].recall_any, rows["turn", 1].recall_all) == (float(first_is_gold), 0.0)
    assert rows["turn", 1].ndcg_any == float(first_is_gold)
    assert (rows["turn", 3].recall_any, rows["turn", 3].recall_all) == (1.0, 1.0)
    rel = [1.0 if t in want_gold else 0.0 for t in want_ranked]
    assert rows["turn", 3].ndcg_any == pytest.approx((rel[0] + rel[1] + rel[2] * LOG3) / 2)
    # the three cases: a miss first (0.8155), then gold-gold-miss and gold-gold-miss (1.0)
    assert round(rows["turn", 3].ndcg_any, 4) == {"031748ae": 0.8155, "01493427": 1.0, "0100672e": 1.0}[qid]
    # turns mapped to sessions: both sessions are gold (oracle); @1 one of them
    assert (rows["turn_session", 1].recall_any, rows["turn_session", 1].recall_all) == (1.0, 0.0)


@pytest.mark.realdata
async def test_rag_session_recall_on_the_oracle_split(oracle):
    inst = oracle["5a7937c8"]  # three evidence sessions; bm25 at session level retrieves two
    ranked, rows = await _rows(inst, granularity="session", top_k=2)
    assert ranked == ["answer_4cef8a3c_2", "answer_4cef8a3c_3"]
    assert {k for _, k in rows} == {1, 2} and {lvl for lvl, _ in rows} == {"session"}
    r = rows["session", 2]
    assert (r.recall_any, r.recall_all, r.ndcg_any, r.n_gold) == (1.0, 0.0, 1.0, 3)


@pytest.mark.realdata
async def test_abstention_questions_get_no_retrieval_scores(oracle):
    inst = next(i for q, i in sorted(oracle.items()) if "_abs" in q)
    _, rows = await _rows(inst, granularity="round", top_k=3)
    assert rows == {}
