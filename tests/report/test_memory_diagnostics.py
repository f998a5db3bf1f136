"""Memory diagnostics through the results contract: what om_core's output guards made of each Observer/Reflector
call is stored per question (DuckDB and sweep shards), and the console summary, the report and the viewer show the
same numbers; a run whose memory is mostly refused gets a one-line warning. Also the judge line and "unpriced"."""

from __future__ import annotations

from pathlib import Path

from bench.report.diagnostics import MemoryDiagnostics, by_run
from bench.benchmarks.longmemeval.rules import OFFICIAL_JUDGE
from bench.runner.summary import format_summary, judge_line, summary_rows
from bench.store import (
    CallRow,
    MemoryOutputRow,
    QuestionResult,
    Results,
    RunManifest,
    SampleRow,
    ShardWriter,
    Store,
    merge_shards,
)
from om_core.diagnostics import OutputRecord
from tests.helpers.results_db import LABELS, OUTPUTS, QIDS, build_small_db


def test_output_records_are_grouped_into_typed_rows():
    recs = [OutputRecord("observer", "rejected", "copied_input", 100, 90),
            OutputRecord("observer", "rejected", "copied_input", 50, 40),
            OutputRecord("observer", "clean", "", 300, 60), OutputRecord("reflector", "truncated", "truncated", 60, 0)]
    rows = MemoryOutputRow.group(recs)
    assert rows == [MemoryOutputRow("observer", "rejected", "copied_input", 2, 150, 130),
                    MemoryOutputRow("observer", "clean", "", 1, 300, 60),
                    MemoryOutputRow("reflector", "truncated", "truncated", 1, 60, 0)]


def test_diagnostics_per_run_from_the_store(tmp_path: Path):
    db = tmp_path / "r.duckdb"
    build_small_db(db)
    with Results(db) as res:
        outputs = res.memory_outputs()
        diag = by_run(outputs, res.memory_summary())
        assert set(diag) == {"om-30k", "om-10k"}  # full_context calls no Observer
        one = res.memory_outputs("om-10k", QIDS[0][0])
    n = len(QIDS)
    good, bad = diag["om-30k"], diag["om-10k"]
    assert good.count("observer", "clean") == 3 * n and good.count("reflector") == n and good.questions == n
    assert good.compression_ratio == 9000 / 1500 and good.generations == [1] * n and not good.unusable()
    assert bad.count("observer", "rejected") == 4 * n and bad.count("observer", "truncated") == 2 * n
    assert bad.compression_ratio == 3000 / 600  # refused calls never count toward the ratio
    assert bad.unusable() and bad.reasons.most_common(1)[0] == ("observer copied_input", 4 * n)
    assert list(one.outcome) == ["clean", "rejected", "truncated"]


def test_the_summary_shows_the_table_the_warning_and_the_judge(tmp_path: Path):
    db = tmp_path / "r.duckdb"
    build_small_db(db)
    rows, prof = summary_rows(db)
    text = format_summary(rows, prof)
    lines = text.splitlines()
    assert all(len(line) <= 100 for line in lines)
    head = next(i for i, line in enumerate(lines) if line.startswith("run") and "reflector" in line)
    table = {line.split()[0]: line for line in lines[head + 2: head + 4]}
    n = len(QIDS)
    assert f"{3 * n}/0/0/0" in table[LABELS["om-30k"]] and "6.0x" in table[LABELS["om-30k"]]
    assert f"{n}/0/{4 * n}/{2 * n}" in table[LABELS["om-10k"]] and "copied_input" in table[LABELS["om-10k"]]
    assert "warning: the judge is not LongMemEval's official" in text and "(judge: offline/judge)" in text
    assert OFFICIAL_JUDGE in text
    warnings = [r["memory"].warning(r["label"]) for r in rows if r.get("memory") is not None]
    assert [w.splitlines()[0] for w in warnings if w] == [
        f"warning: {LABELS['om-10k']}: memory probably unusable: {6 * n} of {7 * n} Observer/Reflector outputs refused"]


def test_judge_line_names_the_official_judge_without_a_warning():
    assert judge_line([{"judge": "openai/gpt-4o-2024-08-06"}]) == \
        "judge: openai/gpt-4o-2024-08-06 (LongMemEval's official judge)"
    assert judge_line([{"judge": "openai/gpt-4o-mini"}]).endswith("(judge: openai/gpt-4o-mini)")


def test_a_run_with_unpriced_calls_shows_unpriced_not_zero(tmp_path: Path):
    db = tmp_path / "r.duckdb"
    with Store(db) as store:
        store.upsert_run(RunManifest(run_key="local", name="local", strategy="om", actor_model="openai/qwen",
                                     judge_model="openai/qwen"))
        calls = [CallRow(0, "actor", "openai/qwen", "answer", prompt_tokens=100, cost_known=False),
                 CallRow(1, "judge", "openai/qwen", "judge", prompt_tokens=50, cost_known=False)]
        store.write_question("local", QuestionResult(SampleRow("q1", "multi-session", label=True, cost_usd=0.0),
                                                     calls))
    rows, prof = summary_rows(db)
    assert rows[0]["unpriced"] == 2
    lines = format_summary(rows, prof).splitlines()
    head = next(i for i, line in enumerate(lines) if "$/q" in line)
    cost_line = lines[head + 2]
    assert cost_line.startswith("local.om-") and cost_line.split()[-1] == "unpriced" and "0.0000" not in cost_line


def test_the_report_and_the_viewer_show_the_diagnostics(tmp_path: Path):
    from bench.report.build import build_report
    from bench.view.site import build_site

    db = tmp_path / "r.duckdb"
    build_small_db(db)
    report = build_report(db, tmp_path / "report")
    md = report.markdown.read_text()
    assert "Memory diagnostics" in md and "copied_input" in md and "memory probably unusable" in md
    site = build_site(db, tmp_path / "site")
    pages = list((tmp_path / "site" / "q").rglob("*.html"))
    om10 = [p.read_text() for p in pages if "om-10k" in p.read_text()]
    assert site.questions and om10
    page = om10[0]
    assert 'id="memory-diagnostics"' in page and "copied_input" in page and "memory probably unusable" in page
    runs = {p.name: p.read_text() for p in (tmp_path / "site" / "runs").glob("*.html")}
    assert sum("Memory diagnostics" in t for t in runs.values()) == 2  # the two OM runs
    fc = [p.read_text() for p in pages if LABELS["fc"] in p.read_text()]
    assert fc and all('id="memory-diagnostics"' not in t for t in fc)


def test_memory_outputs_survive_sweep_shards(tmp_path: Path):
    shards = tmp_path / "shards"
    w = ShardWriter(shards)
    w.upsert_run(RunManifest(run_key="om", name="om", strategy="om"))
    w.write_question("om", QuestionResult(SampleRow("q1", "multi-session", label=True), outputs=OUTPUTS["om-10k"]))
    db = tmp_path / "merged.duckdb"
    merge_shards(shards, db)
    with Results(db) as res:
        got = res.memory_outputs("om")
    assert sorted(zip(got.outcome, got.calls)) == [("clean", 1), ("rejected", 4), ("truncated", 2)]
    d = MemoryDiagnostics()
    assert not d.unusable() and d.warning("x") is None
