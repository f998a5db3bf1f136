"""`ombench run` with the om strategy's working memory on: the results keep the turns that changed it (event
`working_memory`), the summary says so per run, a run with it off gets no such line; and the seed's buffering
knobs in resource scope stop the run with one line."""

from __future__ import annotations

import pytest

from bench.runner.app import run_job
from bench.runner.summary import working_memory_notes
from bench.store import Results
from tests.helpers.runner import compose_cfg, ombench


@pytest.mark.slow
def test_summary_reports_working_memory_changes(tmp_path, capsys) -> None:
    run_job(compose_cfg(tmp_path, "dataset.per_type=1", "run_strategies=[om]", "experiment_name=wm",
                        "strategies.om.params.working_memory=true"))
    run_job(compose_cfg(tmp_path, "dataset.per_type=1", "run_strategies=[om]", "experiment_name=plain"))
    out = capsys.readouterr().out
    db = tmp_path / "bench.duckdb"
    with Results(db) as res:
        turns = res.turns()
        names = dict(zip(res.runs().run_key, res.runs().name))
        wm_key = next(k for k, n in names.items() if n == "wm")
        changed = turns[turns.events.fillna("").str.split(",").apply(lambda e: "working_memory" in e)]
        # the question the block changed in keeps it in its memory view (the viewer's "memory at question time")
        qid = changed.question_id.iloc[0]
        memory = res.memory(wm_key, qid)
        events = res.event_counts()
    # the synthetic sample states a preference in its single-session-preference question
    assert len(changed) >= 1 and {names[k] for k in changed.run_key} == {"wm"}
    assert [m.kind for m in memory][-1] == "working_memory" and memory[-1].text.startswith("- ")
    assert set(events[events.event == "working_memory"].run_key) == {wm_key}  # the report's memory-events table
    [note] = working_memory_notes(db)
    times = "time" if len(changed) == 1 else "times"
    head, tail = note.split("\n")
    assert f": changed {len(changed)} {times}, in " in head
    # printed at the end of the run too (its label then was the only om run's)
    assert head.split(": ", 2)[2] in out and tail in out
    assert head.endswith(f"of {turns[turns.run_key == wm_key].question_id.nunique()} questions")
    assert max(len(head), len(tail)) <= 100


@pytest.mark.slow
def test_buffering_in_resource_scope_stops_the_run_with_one_line(tmp_path) -> None:
    r = ombench("run", f"output.dir={tmp_path}", "run.progress=off", "dataset.limit=1", "run_strategies=[om]",
                "strategies.om.params.buffer_tokens=0.2", "+strategies.om.params.observation.buffer_activation=0.8")
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    [line] = [x for x in r.stderr.splitlines() if "strategies.om.params" in x]
    assert line.endswith("strategies.om.params: observation.buffer_tokens=0.2, observation.buffer_activation=0.8: "
                         "async buffering is not allowed with scope='resource' (Mastra's constructor refuses it: "
                         "resource scope observes all threads of a resource in one pass, buffering pre-computes one "
                         "thread's messages); remove these knobs (resource scope never buffers) or use "
                         "scope='thread'")
