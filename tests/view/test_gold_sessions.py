"""The question page marks the gold evidence sessions for the human (issue 26, item 4): read back from the run's
dataset through the benchmark (`Benchmark.gold_sessions`), shown with where each went, memory lines carrying them
highlighted and long memory folded behind a "show all" toggle; no strategy ever sees a session id."""

from __future__ import annotations

import re

import pytest

from bench.benchmarks import get_benchmark
from bench.cli import main
from bench.store import Results


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    from bench.runner.app import run_job
    from tests.helpers.runner import compose_cfg

    tmp = tmp_path_factory.mktemp("gold")
    outcomes = run_job(compose_cfg(tmp, "dataset.limit=4", "run_strategies=[om,full_context]",
                                   "output.store_prompts=all"))
    db = tmp / "bench.duckdb"
    assert main(["view", "--db", str(db), "--out", str(tmp / "view")]) == 0
    return db, tmp / "view", outcomes


def _page(out, run_prefix: str, qid: str):
    return next(out.glob(f"q/{run_prefix}-*/{re.sub(r'[^A-Za-z0-9_-]+', '_', qid)}-*.html")).read_text()


def test_question_pages_name_the_evidence_sessions_and_where_they_went(site) -> None:
    db, out, _ = site
    with Results(db) as res:
        run = res.run(next(k for k in res.run_keys() if k.startswith("om-")))
        qids = list(res.samples(run.run_key).question_id)
    gold = get_benchmark("longmemeval").gold_sessions(run.dataset_name, qids)
    assert set(gold) == set(qids) and all(gold.values())
    marked = 0
    for qid in qids:
        html = _page(out, "om", qid)
        assert "Gold evidence sessions (shown to you, never to the strategy)" in html
        for s in gold[qid]:
            assert s.session_id in html
        assert re.search(r"reached memory|in the Actor&#39;s prompt|lost: neither", html)
        marked += html.count('class="mline ev"')
        fc = _page(out, "full_context", qid)
        assert "in the Actor&#39;s prompt (raw messages)" in fc  # full context: every session's raw messages
    assert marked > 0  # some observation lines carry an evidence session, and are highlighted


def test_no_strategy_input_holds_a_session_id(site) -> None:
    db, _, _ = site
    with Results(db) as res:
        keys = res.run_keys()
        run = res.run(keys[0])
        qids = list(res.samples(keys[0]).question_id)
        sent = [str(m) + str(r) for k in keys for q in qids for m, r in res.call_texts(k, q).values()]
    ids = {s.session_id for v in get_benchmark("longmemeval").gold_sessions(run.dataset_name, qids).values()
           for s in v}
    assert sent and ids
    assert not [i for i in ids if any(i in text for text in sent)]  # every prompt of every role, kept whole


def test_long_memory_is_folded_behind_a_show_all_toggle_not_cut(tmp_path) -> None:
    from jinja2 import Environment, PackageLoader

    from bench.view.sections import MEMORY_FOLD_LINES, QuestionData, RunMeta, memory
    from bench.store.contract import MemoryRow
    import pandas as pd

    text = "\n".join(f"* line {i}" for i in range(MEMORY_FOLD_LINES * 3))
    q = QuestionData(RunMeta("k", "om", "om", "#000", "n", "s"), {"question_id": "q", "gold_answer": "x"},
                     pd.DataFrame(), {}, pd.DataFrame(), [MemoryRow(0, "observations", text, 1, 100)],
                     pd.DataFrame(), pd.DataFrame(), [])
    sec = memory(q)
    env = Environment(loader=PackageLoader("bench.view", "templates"), autoescape=True)
    html = env.get_template("sections/" + sec.template).render(c=sec.context)
    assert f"* line {MEMORY_FOLD_LINES * 3 - 1}" in html and f"* line {MEMORY_FOLD_LINES * 3 // 2}" in html  # whole
    assert "folded" in html and f"show all {MEMORY_FOLD_LINES * 3} lines" in html


def test_a_dataset_that_cannot_be_read_leaves_a_note_not_a_failure(site) -> None:
    from bench.errors import DataError
    from bench.view.gold import gold_by_run

    class Gone:
        def gold_sessions(self, source, ids):
            raise DataError(f"{source}: file not found; check the path")

    db, _, _ = site
    with Results(db) as res:
        keys = res.run_keys()
        got, notes = gold_by_run(res, keys, Gone())
    assert got == {} and len(notes) == 1 and "file not found" in notes[0]
