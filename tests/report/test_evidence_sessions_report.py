"""The report's per-strategy table and figure of where the gold evidence sessions went (issue 26): traced by the
question page's own code (bench.report.session_trace), so the report's counts are the pages' counts; wrong answers
split by where their evidence went."""

from __future__ import annotations

import pandas as pd
import pytest

from bench.report.session_trace import ALL_IN, NONE_IN, SOME_IN, wrong_split


def _rows(*qs: tuple[str, bool, list[bool | None]]) -> pd.DataFrame:
    return pd.DataFrame([{"run_key": "r", "question_id": q, "label": ok, "session_id": f"{q}-{i}",
                          "reached_memory": None, "in_prompt": p, "lost": p is False}
                         for q, ok, ps in qs for i, p in enumerate(ps)])


def test_wrong_answers_split_by_where_their_evidence_went() -> None:
    got = wrong_split(_rows(("all", False, [True, True]), ("some", False, [True, False]),
                            ("none", False, [False, False]), ("unk", False, [True, None]),
                            ("right", True, [False])))
    assert got == {ALL_IN: 1, SOME_IN: 1, NONE_IN: 1, "unknown": 1}  # a right answer is never counted
    assert wrong_split(_rows(("right", True, [True]))) == {ALL_IN: 0, SOME_IN: 0, NONE_IN: 0, "unknown": 0}


@pytest.mark.slow
def test_report_table_counts_what_the_question_pages_show(tmp_path) -> None:
    from bench.report.build import build_report
    from bench.report.data import load
    from bench.report.tables import evidence_sessions
    from bench.runner.app import run_job
    from bench.store import Results
    from bench.view.gold import gold_by_run
    from bench.view.sections import QuestionData, RunMeta, session_traces
    from tests.helpers.runner import compose_cfg

    run_job(compose_cfg(tmp_path, "dataset.limit=4", "run_strategies=[om,full_context]"))
    db = tmp_path / "bench.duckdb"
    d = load(db)
    table = next(b for b in evidence_sessions(d) if b[0] == "table")
    header, rows = table[1], {r[0]: dict(zip(table[1], r)) for r in table[2]}
    assert header[:8] == ["run", "dataset", "strategy", "questions", "sessions", "reached memory", "in Actor prompt",
                          "lost"]
    assert len(rows) == 2
    with Results(db) as res:
        gold, notes = gold_by_run(res, [r.run_key for r in d.runs], d.benchmark)
        assert not notes
        for r in d.runs:
            in_prompt = n = 0
            for s in res.samples(r.run_key).itertuples():
                q = QuestionData(run=RunMeta(r.run_key, r.label, r.kind, "#000", r.name, "x"),
                                 sample=dict(s._asdict()), calls=res.question_calls(r.run_key, s.question_id),
                                 texts=res.call_texts(r.run_key, s.question_id),
                                 turns=pd.DataFrame(), memory=res.memory(r.run_key, s.question_id),
                                 retrieval=pd.DataFrame(), judgments=pd.DataFrame(), profiles=[],
                                 gold=gold[r.run_key][s.question_id])
                traces = session_traces(q) or []  # the question page's tracing
                n += len(traces)
                in_prompt += sum(bool(t.in_prompt) for t in traces)
            row = rows[r.label]
            assert row["sessions"] == str(n) and row["in Actor prompt"].startswith(f"{in_prompt}/{n} ")
            if r.kind == "full_context":  # every session's raw messages are in its prompt; it keeps no memory
                assert in_prompt == n > 0 and row["reached memory"] == "-" and row["lost"].startswith("0/")
            else:
                assert row["reached memory"] != "-"
    rep = build_report(db, tmp_path / "report")
    md = rep.markdown.read_text(encoding="utf-8")
    assert "## Where the evidence sessions went" in md and "evidence_sessions.png" in md
    assert (tmp_path / "report" / "evidence_sessions.png").stat().st_size > 5000
    assert not [w for w in rep.warnings if "evidence" in w]
