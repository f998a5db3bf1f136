"""Prompts, replies and memory are stored compressed and read back whole, in the DuckDB store and through Parquet
shards merged into it; retrieval rows and the memory/raw split of turns travel the same way."""

from __future__ import annotations

import duckdb

from bench.store import (
    CallRow,
    MemoryRow,
    QuestionResult,
    Results,
    RetrievalRow,
    RunManifest,
    SampleRow,
    ShardWriter,
    Store,
    TurnRow,
    merge_shards,
)

PROMPT = [{"role": "system", "content": "You are helpful. " * 2000}, {"role": "user", "content": "Ünïcode? ✓"}]


def _result(qid: str) -> QuestionResult:
    return QuestionResult(
        SampleRow(qid, question="What is my cat called?", gold_answer="Luna", label=True, label_second=False,
                  judge_second_model="j2"),
        [CallRow(0, "actor", "m", "answer", prompt_tokens=10, messages=PROMPT, response="Luna."),
         CallRow(1, "observer", "m", "ingest")],
        [TurnRow(0, prompt_tokens=100, memory_tokens=60, raw_tokens=40, generation=1, events=("observe",))],
        memory=[MemoryRow(0, "observations", "* cat is Luna " * 500, 2, 3000)],
        retrieval=[RetrievalRow("turn", 1, 1.0, 0.0, 0.5, 2, 3)])


def _check(db) -> None:
    with Results(db) as res:
        texts = res.call_texts("r", "q1")
        assert texts == {0: (PROMPT, "Luna.")}  # the observer call kept nothing
        [m] = res.memory("r", "q1")
        assert m.kind == "observations" and m.text == "* cat is Luna " * 500 and m.generation == 2
        t = res.turns("r", "q1")
        assert (t.memory_tokens.iloc[0], t.raw_tokens.iloc[0], t.generation.iloc[0]) == (60, 40, 1)
        r = res.question_retrieval("r", "q1")
        assert r.to_dict("records")[0]["ndcg_any"] == 0.5
        s = res.samples("r").iloc[0]
        assert (s.question, s.gold_answer, s.label_second, s.judge_second_model) == (
            "What is my cat called?", "Luna", False, "j2")
    con = duckdb.connect(str(db), read_only=True)
    stored = con.execute("SELECT octet_length(prompt) FROM call_texts").fetchone()[0]
    con.close()
    assert stored < len(PROMPT[0]["content"]) / 20  # compressed


def test_store_roundtrip(tmp_path):
    db = tmp_path / "r.duckdb"
    with Store(db) as s:
        s.upsert_run(RunManifest("r", "r", "om"))
        s.write_question("r", _result("q1"))
    _check(db)


def test_shards_roundtrip(tmp_path):
    w = ShardWriter(tmp_path / "shards")
    w.upsert_run(RunManifest("r", "r", "om"))
    w.write_question("r", _result("q1"))
    assert merge_shards(tmp_path / "shards", tmp_path / "m.duckdb") == 1
    _check(tmp_path / "m.duckdb")
