"""Results measured on different data are never drawn as one (issue 26, item 2): a dataset column in the
headline, one accuracy-vs-prefill panel (frontier, ceiling) per dataset, paired tests only between runs over the
same questions, and runs labelled by their stable names, unchanged when runs are added."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from bench.cli import main
from bench.errors import UserError
from bench.report import fig_cost
from bench.report.data import load
from bench.report.tables import headline, paired
from bench.store import QuestionResult, RunManifest, SampleRow, Store
from bench.store.run_names import run_name

QIDS = [f"q{i}" for i in range(6)]  # the same ids in both datasets: other haystacks all the same


def _run(store: Store, key: str, strategy: str, dataset: str, qids: list[str], right: set[str]) -> None:
    store.upsert_run(RunManifest(run_key=key, name="exp", strategy=strategy, dataset_name=dataset,
                                 config={"strategies": {strategy: {"name": strategy}}},
                                 n_questions_planned=len(qids)))
    for q in qids:
        store.write_question(key, QuestionResult(SampleRow(q, "multi-session", label=q in right)))


def _db(path: Path) -> Path:
    with Store(path) as s:
        _run(s, "s-om", "om", "longmemeval_s", QIDS, {"q0", "q1", "q2"})
        _run(s, "s-fc", "full_context", "longmemeval_s", QIDS, {"q0"})
        _run(s, "s-oracle", "oracle", "longmemeval_s", QIDS, set(QIDS))
        _run(s, "s-om-sub", "om", "longmemeval_s", QIDS[:3], {"q0"})  # another subset: never paired
        _run(s, "syn-om", "om", "synthetic", QIDS, {"q3"})
        _run(s, "syn-fc", "full_context", "synthetic", QIDS, {"q3", "q4"})
        _run(s, "syn-oracle", "oracle", "synthetic", QIDS, {"q3", "q4", "q5"})
    return path


def _table(blocks: list[Any]) -> tuple[list[str], list[list[str]]]:
    _, header, rows = next(b for b in blocks if b[0] == "table")
    return header, rows


def test_headline_has_a_dataset_column_and_runs_grouped_by_it(tmp_path: Path) -> None:
    d = load(_db(tmp_path / "r.duckdb"))
    header, rows = _table(headline(d))
    assert header[:2] == ["run", "dataset"]
    got = {row[0]: row[1] for row in rows}
    assert got[run_name("syn-om", "exp", "om", "synthetic")] == "synthetic"
    assert got[run_name("s-om", "exp", "om", "longmemeval_s")] == "longmemeval_s"
    datasets = [row[1] for row in rows]
    assert datasets == sorted(datasets)  # one block per dataset
    assert any("different datasets" in b[1] for b in headline(d) if b[0] == "p")


def test_pairs_only_over_the_same_dataset_and_questions(tmp_path: Path) -> None:
    d = load(_db(tmp_path / "r.duckdb"))
    blocks = paired(d)
    header, rows = _table(blocks)
    ds_of = {r.label: r.dataset for r in d.runs}
    sub = d.label("s-om-sub")
    assert rows and all(ds_of[a] == ds_of[b] == ds for ds, a, b, *_ in rows)  # no pair across datasets
    assert all(sub not in (a, b) for _, a, b, *_ in rows)  # nor across subsets
    assert len(rows) == 6 and {row[3] for row in rows} == {"6"}  # 3 pairs per dataset, all 6 questions
    assert any("3 pairs of runs on one dataset not compared" in b[1] for b in blocks if b[0] == "p")


def test_one_frontier_and_one_ceiling_per_dataset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = load(_db(tmp_path / "r.duckdb"))
    d.prefill = pd.DataFrame({"run_key": [r.run_key for r in d.runs], "profile": "openai",
                              "prefill_per_question": [1000.0 * (i + 1) for i in range(len(d.runs))]})
    drawn: list[Any] = []
    monkeypatch.setattr(fig_cost, "save", lambda fig, out, name: drawn.append(fig) or out / f"{name}.png")
    f = fig_cost.accuracy_vs_prefill(d, tmp_path)
    assert f.path and "One panel per dataset (2)" in f.note
    axes = drawn[0].axes
    assert sorted(ax.get_title() for ax in axes) == ["dataset longmemeval_s", "dataset synthetic"]
    for ax in axes:
        labels = [ln.get_label() for ln in ax.get_lines()]
        assert labels.count("Pareto frontier") == 1
        ceilings = [x for x in labels if x.endswith("ceiling (evidence only)")]
        assert len(ceilings) == 1 and f"@{ax.get_title().split()[-1]}-" in ceilings[0]  # its own dataset's


def test_labels_are_run_names_and_survive_added_runs(tmp_path: Path) -> None:
    db = _db(tmp_path / "r.duckdb")
    before = {r.run_key: r.label for r in load(db).runs}
    assert before["s-om"] == run_name("s-om", "exp", "om", "longmemeval_s")
    with Store(db) as s:
        _run(s, "s-om-2", "om", "longmemeval_s", QIDS, set())
    after = {r.run_key: r.label for r in load(db).runs}
    assert {k: after[k] for k in before} == before and len(set(after.values())) == len(after)


def test_report_can_pick_a_dataset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _db(tmp_path / "r.duckdb")
    assert {r.dataset for r in load(db, datasets=["synthetic"]).runs} == {"synthetic"}
    with pytest.raises(UserError, match="--dataset nope: no run"):
        load(db, datasets=["nope"])
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "o"), "--dataset", "longmemeval_s"]) == 0
    md = (tmp_path / "o" / "report.md").read_text()
    assert "| longmemeval_s |" in md and "| synthetic |" not in md
