import re

import duckdb
import pytest

from bench.cli import main
from bench.report import build_report
from bench.report.figures import pareto_front
from bench.store import QuestionResult, RunManifest, SampleRow, Store
from tests.helpers.results_db import LABELS, build_small_db

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def small_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("rep") / "bench.duckdb"
    labels = build_small_db(db)
    return db, labels


def test_report_writes_pngs_and_references_them(small_db, tmp_path, capsys):
    db, labels = small_db
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "out")]) == 0
    md = (tmp_path / "out" / "report.md").read_text()
    html = (tmp_path / "out" / "report.html").read_text()
    pngs = sorted((tmp_path / "out").glob("*.png"))
    names = {p.stem for p in pngs}
    assert {"accuracy_by_type", "abstention", "prompt_over_turns", "context_split", "cache_hit_rate",
            "prefill_tokens", "accuracy_vs_cost", "accuracy_vs_prefill", "cost_by_role", "threshold_sweep"} <= names
    for p in pngs:
        data = p.read_bytes()
        assert data[:8] == PNG and len(data) > 5000, p
        assert f"]({p.name})" in md and f"src='{p.name}'" in html
    assert set(re.findall(r"\]\(([^)]+\.png)\)", md)) == {p.name for p in pngs}
    # headline numbers: micro accuracy per run, computed independently from the labels written
    for rk, lab in labels.items():
        line = next(x for x in md.splitlines() if x.startswith(f"| {LABELS[rk]} ["))
        assert f"{100 * sum(lab.values()) / len(lab):.1f}% [" in line
        assert "| 12 of 500 |" in line
        assert ("[offline engine]" in line) == (rk != "external:zep")
        # the second judge's agreement sits beside the score it qualifies (only fc was judged twice)
        assert ("; 2nd judge agrees " in line) == (rk == "fc")
    assert "[external]" in md and "McNemar" in md
    # the legend maps each short label to its run; the sections the issue asks for are there
    assert all(f"| {label} |" in md and rk in md for rk, label in LABELS.items())
    for heading in ("Cost by model role", "Latency per model role", "Memory events per run", "Judge agreement"):
        assert f"## {heading}" in md, heading
    assert "second judge offline/judge2" in md and "repeats of one judge" in md


def test_figures_degrade_gracefully(tmp_path):
    db = tmp_path / "only_acc.duckdb"
    with Store(db) as s:
        s.upsert_run(RunManifest(run_key="r", name="r", strategy="rag", n_questions_planned=2))
        s.write_question("r", QuestionResult(SampleRow(question_id="a", question_type="multi-session", label=True)))
        s.write_question("r", QuestionResult(SampleRow(question_id="b", question_type="knowledge-update", label=False)))
    rep = build_report(db, tmp_path / "out")
    made = {f.name for f in rep.figures if f.path}
    assert made == {"accuracy_by_type"}  # no `_abs` id, no turns, no costs: the rest is skipped, each with a note
    md = rep.markdown.read_text()
    assert md.count("Skipped:") == len(rep.figures) - 1 and "(n=" not in md
    assert "turns" in next(f.note for f in rep.figures if f.name == "prompt_over_turns")


def test_report_opens_db_read_only(small_db, tmp_path):
    db, _ = small_db
    before = duckdb.connect(str(db), read_only=True).execute("SELECT count(*) FROM samples").fetchone()
    build_report(db, tmp_path / "o2")
    assert duckdb.connect(str(db), read_only=True).execute("SELECT count(*) FROM samples").fetchone() == before


def test_pareto_front():
    pts = [(1.0, 0.5), (2.0, 0.7), (1.5, 0.4), (3.0, 0.69), (0.5, 0.2), (4.0, 0.9)]
    assert pareto_front(pts) == [4, 0, 1, 5]


def test_missing_db_is_user_error(tmp_path, capsys):
    assert main(["report", "--db", str(tmp_path / "no.duckdb"), "--out", str(tmp_path / "o")]) == 2
    assert "not found" in capsys.readouterr().err


def test_a_named_profile_must_be_in_the_file(small_db, tmp_path, capsys):
    db, _ = small_db  # simulated profiles: openai, anthropic
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "typo"), "--profile", "anthropc"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--profile anthropc" in err and "anthropic, openai" in err
    assert not (tmp_path / "typo" / "report.md").exists()  # nothing written under another profile's name
    assert main(["report", "--db", str(db), "--out", str(tmp_path / "ok"), "--profile", "anthropic"]) == 0
    assert "use the anthropic cache profile" in (tmp_path / "ok" / "report.md").read_text()


def test_per_role_tables_follow_the_headline_order_and_name_offline_latency(small_db, tmp_path):
    db, _ = small_db
    md = build_report(db, tmp_path / "order").markdown.read_text()
    head = [ln.split(" |")[0].lstrip("| ").split(" [")[0] for ln in md.split("## Headline")[1].split("\n## ")[0]
            .splitlines() if ln.startswith("| ") and not ln.startswith("| run |")]
    for section in ("## Cost by model role", "## Latency per model role"):
        body = md.split(section)[1].split("\n## ")[0]
        runs = [ln.split(" | ")[0].lstrip("| ") for ln in body.splitlines() if ln.startswith("| ") and
                not ln.startswith(("| run |", "|---"))]
        seen = list(dict.fromkeys(runs))
        assert seen == [r for r in head if r in seen], (section, seen, head)
    latency = md.split("## Latency per model role")[1].split("\n## ")[0]
    assert "offline engine, answered in this process by rule" in latency
