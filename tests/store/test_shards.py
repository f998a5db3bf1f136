import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench.cli import main
from bench.errors import UserError
from bench.store import (
    FORMAT_VERSION,
    CallRow,
    JudgmentRow,
    QuestionResult,
    RunManifest,
    SampleRow,
    ShardWriter,
    Store,
    SweepSink,
    TurnRow,
    merge_shards,
)


def _q(qid, label=True, calls=(), turns=(), judgments=(), error=None):
    return QuestionResult(SampleRow(question_id=qid, question_type="temporal-reasoning", hypothesis=qid, label=label,
                                    error=error), calls, turns, judgments)


def _run(key, **kw):
    return RunManifest(run_key=key, name=key, strategy="om", **kw)


CALLS = [CallRow(call_idx=0, role="actor", model="m", phase="answer", prompt_tokens=10,
                 cache={"openai": {"cached": 5, "prefill": 5}})]
TURNS = [TurnRow(turn=0, prompt_tokens=10, cache={"vllm": {"cached": 0, "prefill": 10}})]
YES = [JudgmentRow(repeat_idx=0, raw="yes", label=True)]
TABLES = ("runs", "samples", "calls", "call_cache", "turns", "turn_cache", "judgments")


def _count(db, table):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    finally:
        con.close()


def test_shards_roundtrip_and_idempotent_merge(tmp_path):
    w1, w2 = ShardWriter(tmp_path / "sweep" / "job0"), ShardWriter(tmp_path / "sweep" / "job1")
    w1.upsert_run(_run("om-a", config={"token": "secret-value"}))
    w2.upsert_run(_run("om-b"))
    for i in range(3):
        assert w1.write_question("om-a", _q(f"q{i}", calls=CALLS, turns=TURNS, judgments=YES))
        assert w2.write_question("om-b", _q(f"q{i}", i == 0, calls=CALLS))
    assert w1.write_question("om-a", _q("q0", False, calls=CALLS, turns=TURNS)) is False  # skip if present
    assert w1.done_ids("om-a") == {"q0", "q1", "q2"} and w1.done_ids("om-b") == set()
    w1.finish_run("om-a")
    # a half-written question (child shards, no samples marker) must not be merged
    (tmp_path / "sweep" / "job0" / "calls" / "orphan.parquet").write_bytes(
        (tmp_path / "sweep" / "job0" / "calls").glob("*.parquet").__next__().read_bytes())
    files = list((tmp_path / "sweep").rglob("*.parquet"))
    assert all(pq.read_table(f).num_rows >= 1 for f in files)
    assert not list((tmp_path / "sweep").rglob("*.tmp"))

    db = tmp_path / "m.duckdb"
    assert merge_shards(str(tmp_path / "sweep" / "job*"), db) == 6
    counts = {t: _count(db, t) for t in TABLES}
    assert counts == {"runs": 2, "samples": 6, "calls": 6, "call_cache": 6, "turns": 3, "turn_cache": 3, "judgments": 3}
    assert merge_shards(str(tmp_path / "sweep" / "job*"), db) == 0
    assert {t: _count(db, t) for t in counts} == counts
    assert main(["merge", str(tmp_path / "sweep" / "job0"), "--db", str(db)]) == 0
    assert {t: _count(db, t) for t in counts} == counts
    with Store(db) as s:
        r = s.runs().sort_values("run_key")
        assert r.status.tolist() == ["finished", "running"] and "secret-value" not in r.config.iloc[0]
        assert r.format_version.tolist() == [FORMAT_VERSION] * 2
        assert sum(x.label for x in s.sample_rows("om-b")) == 1


def test_replace_in_shards_and_missing_folder(tmp_path, capsys):
    w = ShardWriter(tmp_path / "s")
    w.write_question("r", _q("q0", calls=CALLS, turns=TURNS))
    assert w.write_question("r", _q("q0", False), replace=True)
    assert not list((tmp_path / "s" / "calls").glob("*.parquet"))
    assert pq.read_table(next((tmp_path / "s" / "samples").glob("*.parquet"))).to_pylist()[0]["label"] is False
    assert main(["merge", str(tmp_path / "nothing"), "--db", str(tmp_path / "x.duckdb")]) == 2
    assert "no shard folder" in capsys.readouterr().err


def test_errored_ids_in_shards_and_merged_file(tmp_path):
    """The shard sink answers "which questions errored", from its shards and from what earlier sweeps merged;
    a retried question's newer shard replaces the merged errored copy."""
    db = tmp_path / "bench.duckdb"
    job = tmp_path / "sweep" / "job0" / "shards"
    w = ShardWriter(job)
    w.upsert_run(_run("r"))
    w.write_question("r", _q("ok", calls=CALLS))
    w.write_question("r", _q("bad", None, error="answer: outage"))
    assert w.done_ids("r") == {"ok", "bad"} and w.errored_ids("r") == {"bad"}
    assert merge_shards(tmp_path / "sweep", db) == 2

    # the shards are gone (cleaned up): the merged file still tells what is done and what errored
    sink = SweepSink(tmp_path / "sweep2" / "shards", db)
    assert sink.done_ids("r") == {"ok", "bad"} and sink.errored_ids("r") == {"bad"}
    # in the original folder the retry lands in the shards: that copy stands for the question
    sink = SweepSink(job, db)
    assert sink.write_question("r", _q("bad", True, calls=CALLS), replace=True)
    assert sink.errored_ids("r") == set() and sink.done_ids("r") == {"ok", "bad"}
    assert merge_shards(tmp_path / "sweep", db) == 1  # the retried question replaces the errored one
    assert merge_shards(tmp_path / "sweep", db) == 0
    with Store(db) as s:
        assert s.errored_ids("r") == set() and {x.question_id: x.label for x in s.sample_rows("r")} == {"ok": True, "bad": True}
    assert _count(db, "calls") == 2


def test_shards_of_another_format_are_refused(tmp_path):
    folder = tmp_path / "old"
    ShardWriter(folder).write_question("r", _q("q0"))
    (folder / "runs").mkdir()
    pq.write_table(pa.table({"run_key": ["r"], "name": ["r"]}), folder / "runs" / "r.parquet")  # no format_version
    with pytest.raises(UserError, match="format 0"):
        merge_shards(folder, tmp_path / "m.duckdb")
    with pytest.raises(UserError, match="format 0"):
        ShardWriter(folder)


def test_answer_tries_travel_through_shards(tmp_path):
    from bench.store.contract import TryRow

    w = ShardWriter(tmp_path / "sweep" / "job0")
    w.upsert_run(_run("om-a"))
    tries = [TryRow(1, "h1", False, "no"), TryRow(2, "h2", True, "yes")]
    assert w.write_question("om-a", QuestionResult(SampleRow(question_id="q0", label=False), tries=tries))
    w.finish_run("om-a")
    db = tmp_path / "merged.duckdb"
    merge_shards(str(tmp_path / "sweep" / "*"), db)
    merge_shards(str(tmp_path / "sweep" / "*"), db)  # twice: nothing added
    con = duckdb.connect(str(db), read_only=True)
    try:
        got = con.execute("SELECT try_idx, hypothesis, label FROM answer_tries ORDER BY try_idx").fetchall()
    finally:
        con.close()
    assert got == [(1, "h1", False), (2, "h2", True)]
