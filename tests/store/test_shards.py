import duckdb
import pyarrow.parquet as pq

from bench.cli import main
from bench.store import ShardWriter, Store, merge_shards


def _q(qid, label=True):
    return {"question_id": qid, "question_type": "temporal-reasoning", "hypothesis": qid, "label": label}


CALLS = [{"role": "actor", "model": "m", "prompt_tokens": 10, "cache": {"openai": {"cached": 5, "prefill": 5}}}]
TURNS = [{"turn": 0, "prompt_tokens": 10, "cache": {"vllm": {"cached": 0, "prefill": 10}}}]


def _count(db, table):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    finally:
        con.close()


def test_shards_roundtrip_and_idempotent_merge(tmp_path):
    w1, w2 = ShardWriter(tmp_path / "sweep" / "job0"), ShardWriter(tmp_path / "sweep" / "job1")
    w1.upsert_run("om-a", {"strategy": "om", "config": {"token": "secret-value"}})
    w2.upsert_run("om-b", {"strategy": "om"})
    for i in range(3):
        assert w1.write_question("om-a", _q(f"q{i}"), CALLS, TURNS, [{"raw": "yes", "label": True}])
        assert w2.write_question("om-b", _q(f"q{i}", i == 0), CALLS, [], [])
    assert w1.write_question("om-a", _q("q0", False), CALLS, TURNS, []) is False  # skip if present
    assert w1.done_question_ids("om-a") == {"q0", "q1", "q2"} and w1.done_question_ids("om-b") == set()
    w1.finish_run("om-a")
    # a half-written question (child shards, no samples marker) must not be merged
    (tmp_path / "sweep" / "job0" / "calls" / "orphan.parquet").write_bytes(
        (tmp_path / "sweep" / "job0" / "calls").glob("*.parquet").__next__().read_bytes())
    files = list((tmp_path / "sweep").rglob("*.parquet"))
    assert all(pq.read_table(f).num_rows >= 1 for f in files)
    assert not list((tmp_path / "sweep").rglob("*.tmp"))

    db = tmp_path / "m.duckdb"
    assert merge_shards(str(tmp_path / "sweep" / "job*"), db) == 6
    counts = {t: _count(db, t) for t in ("runs", "samples", "calls", "call_cache", "turns", "turn_cache", "judgments")}
    assert counts == {"runs": 2, "samples": 6, "calls": 6, "call_cache": 6, "turns": 3, "turn_cache": 3, "judgments": 3}
    assert merge_shards(str(tmp_path / "sweep" / "job*"), db) == 0
    assert {t: _count(db, t) for t in counts} == counts
    assert main(["merge", str(tmp_path / "sweep" / "job0"), "--db", str(db)]) == 0
    assert {t: _count(db, t) for t in counts} == counts
    with Store(db) as s:
        r = s.query("SELECT run_key, status, config FROM runs ORDER BY run_key")
        assert r.status.tolist() == ["finished", "running"] and "secret-value" not in r.config[0]
        assert s.query("SELECT count(*) AS n FROM samples WHERE run_key='om-b' AND label").n[0] == 1


def test_replace_in_shards_and_missing_folder(tmp_path, capsys):
    w = ShardWriter(tmp_path / "s")
    w.write_question("r", _q("q0"), CALLS, TURNS, [])
    assert w.write_question("r", _q("q0", False), [], [], [], replace=True)
    assert not list((tmp_path / "s" / "calls").glob("*.parquet"))
    assert pq.read_table(next((tmp_path / "s" / "samples").glob("*.parquet"))).to_pylist()[0]["label"] is False
    assert main(["merge", str(tmp_path / "nothing"), "--db", str(tmp_path / "x.duckdb")]) == 2
    assert "no shard folder" in capsys.readouterr().err
