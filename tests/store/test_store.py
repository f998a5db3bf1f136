import dataclasses
import json

import duckdb
import pytest

from bench.errors import UserError
from bench.records import CallRecord
from bench.store import (
    FORMAT_VERSION,
    CallRow,
    JudgmentRow,
    MemoryOutputRow,
    MemoryRow,
    QuestionResult,
    RetrievalRow,
    Results,
    RunManifest,
    SampleRow,
    Store,
    TurnRow,
)
from bench.store.schema import columns


def _s(qid, label=True, qtype="multi-session", error=None):
    return SampleRow(question_id=qid, question_type=qtype, hypothesis=f"h-{qid}", label=label, label_strict=label,
                     judge_raw="yes" if label else "no", judge_model="j", error=error,
                     is_abstention="_abs" in qid)  # the writer says (the runner asks the benchmark)


CALLS = [
    CallRow(call_idx=0, role="observer", model="m-obs", phase="ingest", prompt_tokens=1000, cost_usd=0.01,
            cache={"openai": {"cached": 0, "prefill": 1000, "write": 0, "cost_usd": 0.01}}),
    CallRow.from_record(CallRecord(role="actor", model="m-act", prompt_tokens=400, simulated=True,
                                   cache={"openai": {"cached": 300, "prefill": 100, "write": 0}}), 1),
    CallRow.from_record(CallRecord(role="actor", model="m-act", prompt_tokens=600, completion_tokens=50, cost_usd=0.02,
                                   cached_tokens_reported=256, cache={"openai": {"cached": 400, "prefill": 200, "write": 0}}), 2),
    CallRow.from_record(CallRecord(role="judge", model="j", prompt_tokens=100, cost_usd=0.001), 3),
]
TURNS = [TurnRow(turn=0, prompt_tokens=400, events=("observe", "reflect"), cache={"openai": {"cached": 300, "prefill": 100}})]
YES = [JudgmentRow(repeat_idx=0, raw="yes", label=True)]


def _q(sample, calls=(), turns=(), judgments=()):
    return QuestionResult(sample, calls, turns, judgments)


def _counts(path):
    con = duckdb.connect(str(path), read_only=True)
    out = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
           for t in ("samples", "calls", "call_cache", "turns", "turn_cache", "judgments")}
    con.close()
    return out


def test_records_are_the_table_columns():
    """The contract's fields are the columns: a column added to one and not the other fails here."""
    names = [f.name for f in dataclasses.fields(RunManifest)]
    assert names == columns("runs")
    assert ["run_key", *[f.name for f in dataclasses.fields(SampleRow)]] == columns("samples")
    extras = ("cache", "messages", "response")  # call_cache and call_texts
    assert ["run_key", "question_id", *[f.name for f in dataclasses.fields(CallRow) if f.name not in extras]] == columns("calls")
    assert ["run_key", "question_id", *[f.name for f in dataclasses.fields(TurnRow) if f.name != "cache"]] == columns("turns")
    assert ["run_key", "question_id", *[f.name for f in dataclasses.fields(JudgmentRow)]] == columns("judgments")
    assert ["run_key", "question_id", *[f.name for f in dataclasses.fields(MemoryRow)]] == columns("memory")
    assert ["run_key", "question_id", *[f.name for f in dataclasses.fields(RetrievalRow)]] == columns("retrieval")
    assert ["run_key", "question_id", *[f.name for f in dataclasses.fields(MemoryOutputRow)]] == columns("memory_outputs")


def test_idempotent_write_resume_and_replace(tmp_path):
    db = tmp_path / "r.duckdb"
    with Store(db) as s:
        s.upsert_run(RunManifest(run_key="r", name="r", strategy="om"))
        assert s.write_question("r", _q(_s("a"), CALLS, TURNS, YES)) is True
        assert s.write_question("r", _q(_s("a", label=False), CALLS, TURNS, [])) is False
        assert s.write_question("r", _q(_s("b", error="answer: outage"), CALLS[:1])) is True
        assert s.done_ids("r") == {"a", "b"} and s.done_ids("other") == set()
        assert s.errored_ids("r") == {"b"}
    assert _counts(db) == {"samples": 2, "calls": 5, "call_cache": 4, "turns": 1, "turn_cache": 1, "judgments": 1}
    with Store(db) as s:  # reopen: resume sees what was written
        assert s.done_ids("r") == {"a", "b"} and s.errored_ids("r") == {"b"}
        assert s.write_question("r", _q(_s("a", label=False), CALLS[:2]), replace=True)
        assert s.write_question("r", _q(_s("b")), replace=True)
        assert s.query("SELECT label FROM samples WHERE question_id='a'").label.tolist() == [False]
        assert s.errored_ids("r") == set()
    assert _counts(db) == {"samples": 2, "calls": 2, "call_cache": 2, "turns": 0, "turn_cache": 0, "judgments": 0}


def test_rows_views_and_phases(tmp_path):
    with Store(tmp_path / "v.duckdb") as s:
        s.upsert_run(RunManifest(run_key="r", name="om-a", strategy="om", n_questions_planned=500))
        s.write_question("r", _q(_s("a", True, "multi-session"), CALLS, TURNS))
        s.write_question("r", _q(_s("b_abs", False, "multi-session"), CALLS))
        s.write_question("r", _q(_s("c", True, "knowledge-update"), (), TURNS))
        phases = s.query("SELECT phase, simulated FROM calls WHERE question_id='a' ORDER BY call_idx")
        assert phases.phase.tolist() == ["ingest", "ingest", "answer", "judge"]
        assert s.query("SELECT cached_reported FROM calls WHERE call_idx=2 AND question_id='a'").iloc[0, 0] == 256
        assert s.query("SELECT events FROM turns").events.tolist() == ["observe,reflect"] * 2
        assert s.query("SELECT is_abstention FROM samples ORDER BY question_id").is_abstention.tolist() == [False, True, False]
        h = s.headline().iloc[0]
        assert (h.n_judged, h.n_correct) == (3, 2) and h.micro == pytest.approx(2 / 3)
        assert h.macro == pytest.approx((0.5 + 1.0) / 2) and h.abstention == 0.0 and h.n_abstention == 1
        c = s.cache().iloc[0]
        # a, b_abs: actor calls (400+600 prompt, 700 cached); c has no actor call rows: its turn stands in.
        assert (c.prompt_tokens, c.cached_tokens) == (2 * 1000 + 400, 2 * 700 + 300)
        assert c.hit_rate == pytest.approx(1700 / 2400)
        p = s.query("SELECT * FROM v_prefill ORDER BY question_id")
        assert p.prefill_tokens.tolist() == [1300, 1300, 100] and p.background_prefill_tokens.tolist() == [1000, 1000, 0]
        cost = s.cost().iloc[0]
        assert cost.total_cost_usd == pytest.approx(2 * 0.03) and cost.judge_cost_usd == pytest.approx(0.002)
        assert cost.cost_per_correct == pytest.approx(0.06 / 2) and cost.n_costed == 2


def test_manifest_round_trip_and_secrets_scrubbed(tmp_path):
    secret_cfg = {"models": {"actor": {"api_key": "abc", "max_tokens": 800}}, "hf_token": "hf_abcdefghijklmnopqrstu",
                  "om": {"message_tokens": 30000}, "note": "sk-proj-0123456789abcdefghij", "OPENAI_SECRET": "x"}
    run = RunManifest(run_key="r", name="exp", strategy="om", config=secret_cfg, git_commit="abc123", git_dirty=False,
                      package_versions={"duckdb": "2.0.1"}, dataset_name="longmemeval_oracle", dataset_sha256="f" * 64,
                      dataset_split="oracle", n_questions_planned=12, tokenizer="o200k_base",
                      price_map_version="litellm-1/local", actor_model="offline/reader", judge_model="offline/judge",
                      extra={"my_password": "pw", "path": "/data"})
    with Store(tmp_path / "s.duckdb") as s:
        s.upsert_run(run)
        first = s.run("r")
        s.upsert_run(dataclasses.replace(run, config={"a": 1}))  # upsert updates in place, keeps the start
        again = s.run("r")
        row = s.runs().iloc[0]
    assert first is not None and again is not None
    assert again.config == {"a": 1} and again.started_at == first.started_at
    # every provenance column comes back as written
    for f in ("git_commit", "git_dirty", "package_versions", "dataset_name", "dataset_sha256", "dataset_split",
              "n_questions_planned", "tokenizer", "price_map_version", "actor_model", "judge_model", "status"):
        assert getattr(first, f) == getattr(run, f), f
    assert first.format_version == FORMAT_VERSION
    text = json.dumps(first.config) + json.dumps(first.extra)
    for secret in ("abc\"", "hf_abcdefghijklmnopqrstu", "sk-proj-0123456789abcdefghij", "\"pw\""):
        assert secret not in text
    assert first.config["models"]["actor"]["max_tokens"] == 800 and first.config["om"]["message_tokens"] == 30000
    assert first.config["models"]["actor"]["api_key"] == "<redacted>" and first.extra["path"] == "/data"
    assert row.format_version == FORMAT_VERSION


def test_bulk_write_questions(tmp_path):
    with Store(tmp_path / "b.duckdb") as s:
        s.write_question("r", _q(_s("a"), CALLS))
        n = s.write_questions("r", [_q(_s("a", False)), _q(_s("b"), CALLS[:1], TURNS, YES), _q(_s("c"))])
        assert n == 2
        got = s.query("SELECT question_id, label FROM samples ORDER BY 1")
        assert got.values.tolist() == [["a", True], ["b", True], ["c", True]]
        assert s.query("SELECT count(*) AS n FROM calls").n[0] == len(CALLS) + 1
        assert s.write_questions("r", [_q(_s("a", False)), _q(_s("c", False))], replace=True) == 2
        assert [r.label for r in s.sample_rows("r")] == [False, True, False]
        assert s.query("SELECT count(*) AS n FROM calls").n[0] == 1


def test_results_file_of_another_format_is_a_one_line_error(tmp_path):
    # a file from before format versions: the runs table has no format_version column
    old = tmp_path / "old.duckdb"
    con = duckdb.connect(str(old))
    con.execute("CREATE TABLE runs (run_key VARCHAR PRIMARY KEY, name VARCHAR, extra JSON)")
    con.execute("INSERT INTO runs VALUES ('quick-1', 'quick', NULL)")
    con.close()
    for opener in (Store, Results):
        with pytest.raises(UserError) as err:
            opener(old)
        msg = str(err.value)
        assert "\n" not in msg and str(old) in msg and "format 0" in msg and f"format {FORMAT_VERSION}" in msg
        assert "output.db=" in msg  # the fix
    # a file written by a newer om-bench
    new = tmp_path / "new.duckdb"
    with Store(new) as s:
        s.upsert_run(RunManifest(run_key="r", name="r", strategy="om", format_version=FORMAT_VERSION + 1))
    with pytest.raises(UserError) as err:
        Results(new)
    assert "newer" in str(err.value) and "upgrade om-bench" in str(err.value) and f"format {FORMAT_VERSION + 1}" in str(err.value)
