"""The OM threshold-sweep figure draws one sweep: runs of another dataset (or model) at the same thresholds are left
out and named, never averaged into the sweep's points."""

from pathlib import Path

import pytest

from bench.report import build_report
from bench.report.data import load
from bench.report.fig_sweep import sweep_grid
from bench.store import QuestionResult, RunManifest, SampleRow, Store, TurnRow
from tests.helpers.results_db import QIDS, build_small_db


def _add_om_run(db: Path, key: str, dataset: str, label: bool, *, actor: str = "offline/echo") -> None:
    """An OM run at Mastra's default thresholds (30k/40k) whose every answer is `label`, cache hit 0."""
    params = {"message_tokens": 30000, "observation_tokens": 40000}
    cfg = {"strategies": {"om": {"name": "om", "params": params}}, "dataset": {"name": dataset}}
    with Store(db) as s:
        s.upsert_run(RunManifest(run_key=key, name=key, strategy="om", config=cfg, n_questions_planned=500,
                                 actor_model=actor, judge_model="offline/judge", dataset_name=dataset))
        for qid, qtype in QIDS:
            turn = TurnRow(turn=0, prompt_tokens=1000, cache={"openai": {"cached": 0, "prefill": 1000}})
            s.write_question(key, QuestionResult(SampleRow(question_id=qid, question_type=qtype, label=label),
                                                 turns=[turn]))
        s.finish_run(key)


@pytest.fixture()
def db(tmp_path):
    path = tmp_path / "bench.duckdb"
    labels = build_small_db(path)  # om-10k and om-30k on longmemeval_s: the sweep
    _add_om_run(path, "om-oracle-split", "longmemeval_oracle", label=False)  # same thresholds, other dataset
    _add_om_run(path, "om-other-actor", "longmemeval_s", label=False, actor="openai/gpt-4o")  # other model
    return path, labels


def test_sweep_points_come_from_one_dataset_and_model(db):
    path, labels = db
    d = load(path)
    grid, note = sweep_grid(d)
    at = {(r.message_tokens, r.observation_tokens): r for r in grid.itertuples()}
    assert set(at) == {(10000.0, 40000.0), (30000.0, 40000.0)}
    for key, x in (("om-30k", 30000.0), ("om-10k", 10000.0)):
        expected = sum(labels[key].values()) / len(labels[key])
        assert at[(x, 40000.0)].accuracy == pytest.approx(expected)  # not pooled with the all-wrong runs
        assert at[(x, 40000.0)].n == len(QIDS)
    hit = d.cache[(d.cache.profile == "openai") & (d.cache.run_key == "om-30k")].hit_rate.iloc[0]
    assert at[(30000.0, 40000.0)].hit_rate == pytest.approx(hit) and hit > 0
    left = note.split("Left out")[1]
    assert d.label("om-oracle-split") in left and d.label("om-other-actor") in left
    assert d.label("om-30k") in note.split("Left out")[0]


def test_report_names_what_the_sweep_figure_left_out(db, tmp_path):
    path, _ = db
    rep = build_report(path, tmp_path / "out")
    fig = next(f for f in rep.figures if f.name == "threshold_sweep")
    assert fig.path is not None and fig.path.exists()
    md = rep.markdown.read_text()
    after = md.split("](threshold_sweep.png)")[1]
    assert "Left out, as another dataset, subset, model or setting" in after.split("\n## ")[0]


def test_no_sweep_when_only_other_datasets_differ(tmp_path):
    path = tmp_path / "bench.duckdb"
    _add_om_run(path, "om-s", "longmemeval_s", label=True)
    _add_om_run(path, "om-o", "longmemeval_oracle", label=False)
    with Store(path) as s:  # the oracle-split run at other thresholds: still not a sweep of the S run
        s.upsert_run(RunManifest(run_key="om-o2", name="om-o2", strategy="om", n_questions_planned=500,
                                 config={"strategies": {"om": {"name": "om", "params": {"message_tokens": 10000}}},
                                         "dataset": {"name": "longmemeval_s", "stratified": 30}},
                                 actor_model="offline/echo", judge_model="offline/judge", dataset_name="longmemeval_s"))
        s.write_question("om-o2", QuestionResult(SampleRow(question_id="q1", question_type="multi-session", label=True)))
    grid, _ = sweep_grid(load(path))
    assert grid.empty


def test_paired_comparisons_stay_within_a_dataset(db, tmp_path):
    """The oracle split shares question ids with S but not haystacks: its run is never paired with S runs."""
    path, _ = db
    md = build_report(path, tmp_path / "paired").markdown.read_text()
    d = load(path)
    body = md.split("## Paired comparisons")[1].split("\n## ")[0]
    rows = [ln.strip("| ").split(" | ") for ln in body.splitlines()
            if ln.startswith("| ") and not ln.startswith("| dataset |")]
    pairs = [(r[1], r[2]) for r in rows]  # columns: dataset, A, B, ...
    oracle, zep = d.label("om-oracle-split"), d.label("external:zep")
    with_oracle = [set(p) for p in pairs if oracle in p]
    assert pairs and with_oracle == [{oracle, zep}]  # an import names no dataset: compared with every run
    s_runs = {d.label(k) for k in ("fc", "om-10k", "om-30k", "om-other-actor", "external:zep")}  # zep: no dataset
    rest = [p for p in pairs if oracle not in p]
    assert {p[0] for p in rest} | {p[1] for p in rest} == s_runs


def test_paired_comparisons_reach_every_run_and_count_the_rest(tmp_path):
    path = tmp_path / "many.duckdb"
    with Store(path) as s:
        for i in range(14):  # the first 12 runs only were compared before; 91 pairs here, 60 shown
            key = f"rag-{i:02d}"
            s.upsert_run(RunManifest(run_key=key, name=key, strategy="rag", dataset_name="longmemeval_s",
                                     n_questions_planned=2))
            for qid, lab in (("a", i % 2 == 0), ("b", True)):
                s.write_question(key, QuestionResult(SampleRow(question_id=qid, question_type="multi-session",
                                                               label=lab)))
    md = build_report(path, tmp_path / "o").markdown.read_text()
    body = md.split("## Paired comparisons")[1].split("\n## ")[0]
    d = load(path)
    assert f"| {d.label('rag-13')} |" in body or f" {d.label('rag-13')} | 2 |" in body
    assert "31 more pairs not shown" in body
