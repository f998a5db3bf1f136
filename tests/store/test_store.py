import json

import duckdb
import pytest

from bench.records import CallRecord
from bench.store import Store


def _q(qid, label=True, qtype="multi-session"):
    return {"question_id": qid, "question_type": qtype, "hypothesis": f"h-{qid}", "label": label,
            "label_strict": label, "judge_raw": "yes" if label else "no", "judge_model": "j"}


CALLS = [
    {"role": "observer", "model": "m-obs", "prompt_tokens": 1000, "cost_usd": 0.01,
     "cache": {"openai": {"cached": 0, "prefill": 1000, "write": 0, "cost_usd": 0.01}}},
    CallRecord(role="actor", model="m-act", prompt_tokens=400, simulated=True,
               cache={"openai": {"cached": 300, "prefill": 100, "write": 0}}),
    CallRecord(role="actor", model="m-act", prompt_tokens=600, completion_tokens=50, cost_usd=0.02,
               cached_tokens_reported=256, cache={"openai": {"cached": 400, "prefill": 200, "write": 0}}),
    {"role": "judge", "model": "j", "prompt_tokens": 100, "cost_usd": 0.001},
]
TURNS = [{"turn": 0, "prompt_tokens": 400, "events": ["observe", "reflect"],
          "cache": {"openai": {"cached": 300, "prefill": 100}}}]


def _counts(path):
    con = duckdb.connect(str(path), read_only=True)
    out = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
           for t in ("samples", "calls", "call_cache", "turns", "turn_cache", "judgments")}
    con.close()
    return out


def test_idempotent_write_resume_and_replace(tmp_path):
    db = tmp_path / "r.duckdb"
    with Store(db) as s:
        s.upsert_run("r", {"strategy": "om"})
        assert s.write_question("r", _q("a"), CALLS, TURNS, [{"raw": "yes", "label": True}]) is True
        assert s.write_question("r", _q("a", label=False), CALLS, TURNS, [{"raw": "no", "label": False}]) is False
        assert s.write_question("r", _q("b"), CALLS[:1], [], []) is True
        assert s.done_question_ids("r") == {"a", "b"} and s.done_question_ids("other") == set()
    assert _counts(db) == {"samples": 2, "calls": 5, "call_cache": 4, "turns": 1, "turn_cache": 1, "judgments": 1}
    with Store(db) as s:  # reopen: resume sees what was written
        assert s.done_question_ids("r") == {"a", "b"}
        assert s.write_question("r", _q("a", label=False), CALLS[:2], [], [], replace=True)
        assert s.query("SELECT label FROM samples WHERE question_id='a'").label.tolist() == [False]
    assert _counts(db) == {"samples": 2, "calls": 3, "call_cache": 3, "turns": 0, "turn_cache": 0, "judgments": 0}


def test_rows_views_and_phases(tmp_path):
    with Store(tmp_path / "v.duckdb") as s:
        s.upsert_run("r", {"name": "om-a", "strategy": "om", "n_questions_planned": 500})
        s.write_question("r", _q("a", True, "multi-session"), CALLS, TURNS, [])
        s.write_question("r", _q("b_abs", False, "multi-session"), CALLS, [], [])
        s.write_question("r", _q("c", True, "knowledge-update"), [], TURNS, [])
        phases = s.query("SELECT phase, simulated FROM calls WHERE question_id='a' ORDER BY call_idx")
        assert phases.phase.tolist() == ["ingest", "ingest", "answer", "judge"]
        assert s.query("SELECT cached_reported FROM calls WHERE call_idx=2 AND question_id='a'").iloc[0, 0] == 256
        assert s.query("SELECT events FROM turns").events.tolist() == ["observe,reflect"] * 2
        h = s.query("SELECT * FROM v_headline").iloc[0]
        assert (h.n_judged, h.n_correct) == (3, 2) and h.micro == pytest.approx(2 / 3)
        assert h.macro == pytest.approx((0.5 + 1.0) / 2) and h.abstention == 0.0 and h.n_abstention == 1
        c = s.query("SELECT * FROM v_cache").iloc[0]
        # a, b_abs: actor calls (400+600 prompt, 700 cached); c has no actor call rows: its turn stands in.
        assert (c.prompt_tokens, c.cached_tokens) == (2 * 1000 + 400, 2 * 700 + 300)
        assert c.hit_rate == pytest.approx(1700 / 2400)
        p = s.query("SELECT * FROM v_prefill ORDER BY question_id")
        assert p.prefill_tokens.tolist() == [1300, 1300, 100] and p.background_prefill_tokens.tolist() == [1000, 1000, 0]
        cost = s.query("SELECT * FROM v_cost").iloc[0]
        assert cost.total_cost_usd == pytest.approx(2 * 0.03) and cost.judge_cost_usd == pytest.approx(0.002)
        assert cost.cost_per_correct == pytest.approx(0.06 / 2) and cost.n_costed == 2


def test_secrets_are_scrubbed(tmp_path):
    with Store(tmp_path / "s.duckdb") as s:
        s.upsert_run("r", {"config": {"models": {"actor": {"api_key": "abc", "max_tokens": 800}},
                                      "hf_token": "hf_abcdefghijklmnopqrstu", "om": {"message_tokens": 30000},
                                      "note": "sk-proj-0123456789abcdefghij", "OPENAI_SECRET": "x"},
                           "package_versions": {"duckdb": "2.0.1"}, "my_password": "pw"})
        s.upsert_run("r", {"config": {"a": 1}, "status": "running"})  # upsert updates in place
        (cfg,), = s.con.execute("SELECT config FROM runs").fetchall()
        assert json.loads(cfg) == {"a": 1}
        s.upsert_run("r", {"config": {"models": {"actor": {"api_key": "abc", "max_tokens": 800}},
                                      "hf_token": "hf_abcdefghijklmnopqrstu", "om": {"message_tokens": 30000},
                                      "note": "sk-proj-0123456789abcdefghij"}, "my_password": "pw"})
        row = s.query("SELECT * FROM runs").iloc[0]
    text = row.config + str(row.extra)
    for secret in ("abc\"", "hf_abcdefghijklmnopqrstu", "sk-proj-0123456789abcdefghij", "\"pw\""):
        assert secret not in text
    cfg = json.loads(row.config)
    assert cfg["models"]["actor"]["max_tokens"] == 800 and cfg["om"]["message_tokens"] == 30000
    assert cfg["models"]["actor"]["api_key"] == "<redacted>"


def test_bulk_write_questions(tmp_path):
    with Store(tmp_path / "b.duckdb") as s:
        s.write_question("r", _q("a"), CALLS, [], [])
        n = s.write_questions("r", [_q("a", False), (_q("b"), CALLS[:1], TURNS, [{"raw": "yes", "label": True}]), _q("c")])
        assert n == 2
        got = s.query("SELECT question_id, label FROM samples ORDER BY 1")
        assert got.values.tolist() == [["a", True], ["b", True], ["c", True]]
        assert s.query("SELECT count(*) AS n FROM calls").n[0] == len(CALLS) + 1
        assert s.write_questions("r", [_q("a", False), _q("c", False)], replace=True) == 2
        assert s.query("SELECT label FROM samples ORDER BY question_id").label.tolist() == [False, True, False]
        assert s.query("SELECT count(*) AS n FROM calls").n[0] == 1
