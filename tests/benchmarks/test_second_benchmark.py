"""The benchmark seam, proved by a benchmark the harness does not know: TinyChat (tests/benchmarks/tiny/), one
module and one dataset YAML, several questions over one conversation with its own types, judge templates,
reader layout and metric order. `ombench run` replays its conversation once per strategy, asks each question
at its own time, judges with its templates and reports its types in its order."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from bench import ingest
from bench.cli import main
from tests.benchmarks.tiny.tinybench import QUESTIONS, SESSIONS, TEMPLATES

CONF = Path(__file__).parent / "tiny" / "conf"
TURNS = sum(1 for _, _, turns in SESSIONS for role, _ in turns if role == "user")  # one timeline turn per pair


def _run(tmp_path: Path, capsys, *extra: str) -> tuple[int, str]:
    rc = main(["run", "--config-dir", str(CONF), "dataset=tiny_chat", "run_strategies=[om,full_context,oracle]",
               f"output.dir={tmp_path}", "run.progress=off", "output.report=false", *extra])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return rc, out


@pytest.mark.slow  # three strategies through `ombench run` (Hydra, DuckDB, the offline engine)
def test_a_shared_conversation_is_replayed_once_and_each_question_asked_at_its_time(tmp_path, capsys,
                                                                                    monkeypatch) -> None:
    replays: list[tuple[str, tuple[str, ...]]] = []
    real = ingest.ingest_unit

    async def counting(unit, spec, *args, **kwargs):  # type: ignore[no-untyped-def]
        replays.append((spec.name, tuple(q.question_id for q in unit.questions)))
        return await real(unit, spec, *args, **kwargs)

    monkeypatch.setattr(ingest, "ingest_unit", counting)
    _, out = _run(tmp_path, capsys)
    ids = tuple(q[0] for q in QUESTIONS)
    # om and full_context: the conversation once, all four questions in it; the oracle replays each
    # question's own evidence sessions, so each question is its own unit
    assert [r for r in replays if r[0] == "om"] == [("om", ids)]
    assert [r for r in replays if r[0] == "full_context"] == [("full_context", ids)]
    assert sorted(r[1] for r in replays if r[0] == "oracle") == [(i,) for i in ids]

    con = duckdb.connect(str(tmp_path / "bench.duckdb"), read_only=True)
    keys = dict(con.execute("SELECT strategy, run_key FROM runs").fetchall())
    # every turn of the conversation appears once over the questions of a run: replayed once, split by time
    rows = con.execute("SELECT question_id, count(*) FROM turns WHERE run_key = ? GROUP BY 1 ORDER BY 1",
                       [keys["om"]]).fetchall()
    assert sum(n for _, n in rows) == TURNS
    assert dict(rows) == {"q1": 1, "q2": 1, "q4": 1}  # q3 follows q2 with nothing new to replay
    # each question asked at its own time: after the turns before it, never after a later session
    prompts = con.execute("SELECT question_id, prompt_tokens FROM calls WHERE run_key = ? AND phase = 'answer' "
                          "ORDER BY question_id", [keys["full_context"]]).fetchall()
    sizes = dict(prompts)
    assert sizes["q1"] < sizes["q2"] < sizes["q4"]
    # its own types, its own judge templates, its benchmark in the run's provenance
    types = dict(con.execute("SELECT question_id, question_type FROM samples WHERE run_key = ?",
                             [keys["om"]]).fetchall())
    assert types == {q[0]: q[1] for q in QUESTIONS}
    judged = con.execute("SELECT count(*) FROM samples WHERE label IS NOT NULL").fetchone()
    assert judged == (12,)
    extra = json.loads(con.execute("SELECT extra FROM runs WHERE run_key = ?", [keys["om"]]).fetchone()[0])
    assert extra["benchmark"] == "tests.benchmarks.tiny.tinybench:TinyChat"
    assert extra["isolation_unit"] == "conversation"
    assert extra["judge"]["templates"].startswith("TinyChat's own wording")
    texts = con.execute("SELECT count(*) FROM call_texts t JOIN calls c USING (run_key, question_id, call_idx) "
                        "WHERE c.phase = 'judge'").fetchone()
    assert texts[0] > 0
    con.close()
    # the summary prints its types in its order, with its labels, and no LongMemEval judge warning
    head = next(line for line in out.splitlines() if line.startswith("run "))
    assert head.split()[-2:] == ["RC", "CT"]
    assert "LongMemEval" not in out

    # run again: every question is stored, nothing is replayed
    replays.clear()
    _run(tmp_path, capsys)
    assert replays == []


def test_the_judge_reads_the_benchmarks_own_templates() -> None:
    from bench.benchmarks import get_benchmark
    from bench.evaluate.judge import Judge
    from tests.helpers.strategies import ScriptedModel

    bench = get_benchmark("tests.benchmarks.tiny.tinybench:TinyChat")
    judge = Judge(ScriptedModel("judge", lambda msgs: "yes"), benchmark=bench)
    name, text = judge.prompt("q2", "count", "How many cats?", "2", "Two cats.")
    assert name == "count" and text == TEMPLATES["count"].format(question="How many cats?", answer="2",
                                                                  response="Two cats.")
