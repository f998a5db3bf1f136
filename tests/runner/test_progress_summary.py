"""Progress counts billed tokens apart from simulated ones, with retries, elapsed time and ETA; the summary fits
100 columns whatever the run names."""

from __future__ import annotations

from bench.runner.progress import Progress, duration, tokens
from bench.runner.summary import format_summary
from bench.store import CallRow, QuestionResult, SampleRow


def _result(restored: bool = False) -> QuestionResult:
    calls = [CallRow(0, "actor", "m", "ingest", simulated=True, prompt_tokens=5_000_000),
             CallRow(1, "observer", "m", "ingest", prompt_tokens=1000, completion_tokens=100, cost_usd=0.01, retries=2),
             CallRow(2, "actor", "m", "answer", prompt_tokens=900, completion_tokens=50, cost_usd=0.002,
                     cache={"openai": {"cached": 450}}),
             CallRow(3, "judge", "m", "judge", prompt_tokens=200, completion_tokens=1, cost_usd=0.001,
                     response_cache_hit=True)]
    return QuestionResult(SampleRow("q", checkpoint_restored=restored), calls)


def test_progress_tells_billed_from_simulated(capsys):
    p = Progress("log")
    p.start_run("om", total=4)
    p.advance("om", result=_result())
    p.advance("om", result=_result(restored=True))  # its ingestion was paid by an earlier run
    t = p._tallies["om"]
    assert t.billed_tokens == 1100 + 950 + 950 and t.simulated_tokens == 10_000_000 and t.retries == 2
    assert round(t.cost, 6) == 0.014  # response-cache hits and restored ingestion are not paid again
    line = capsys.readouterr().err.splitlines()[-1]
    assert line.startswith("[om] 2/4 elapsed ") and " eta " in line
    assert "billed 3.0k tok $0.0140 | simulated 10.0M tok | retries 2 | openai-hit 50%" in line
    assert tokens(950) == "950" and tokens(12_345) == "12.3k" and duration(75) == "1m15s" and duration(3700) == "1h01m"


def _row(i: int) -> dict:
    return {"run_key": f"om-{i}", "label": f"om#{i}", "strategy": "om", "name": "x" * 300,
            "details": "om_threshold_sweep; " + "strategies.om.params.message_tokens=10000, " * 8, "dataset": "s",
            "actor": "offline/reader", "planned": 500, "n": 498, "micro": 0.5, "macro": 0.4, "abstention": 1.0,
            "errors": 3, "status": "stopped", "per_type": {"multi-session": (0.5, 10), "weird-type-name": (1.0, 2)},
            "mean_prompt_tokens": 123456.0, "hit_rate": 0.61, "prefill_per_q": 9_876_543.0, "usd_per_q": 12.3456}


def test_summary_fits_100_columns():
    text = format_summary([_row(i) for i in range(1, 9)], "anthropic", n_dataset=500, split="S (cleaned)")
    lines = text.splitlines()
    assert max(len(x) for x in lines) <= 100
    assert any(x.startswith("om#8") and "498/500" in x for x in lines)
    assert any("3 errors, stopped (budget)" in x for x in lines)
    assert sum(x.startswith("om#") and " = " in x for x in lines) == 8  # each short label explained


def test_the_finished_line_counts_what_was_written(capsys):
    # 4 questions stored (one of them with its error), 4 that raised before anything was stored
    p = Progress("log")
    p.start_run("om", total=8)
    for i in range(4):
        p.advance("om", result=QuestionResult(SampleRow(f"q{i}", error="answer: server: boom" if i == 0 else None)))
    for _ in range(4):
        p.advance("om", failed=True)
    p.end_run("om")
    line = capsys.readouterr().err.splitlines()[-1]
    assert line.startswith("[om] finished: 4 written (1 with a stored error, retried by the next run), "
                           "4 failed and not written in ")


def test_sweep_legend_keeps_what_tells_the_jobs_apart(tmp_path):
    """Settings every job of a sweep shares (dataset, subset size) leave the summary's legend lines, so the
    thresholds that differ are not cut off at 100 columns."""
    from bench.runner.summary import summary_rows
    from bench.store import RunManifest, Store

    db = tmp_path / "bench.duckdb"
    grid = [(m, o) for m in (10000, 30000) for o in (20000, 40000)]
    with Store(db) as s:
        for m, o in grid:
            key = f"om-{m}-{o}"
            s.upsert_run(RunManifest(
                run_key=key, strategy="om", dataset_name="longmemeval_s", n_questions_planned=6,
                name=(f"om_threshold_sweep[dataset=longmemeval_s,dataset.stratified=6,experiment=om_threshold_sweep,"
                      f"strategies.om.params.message_tokens={m},strategies.om.params.observation_tokens={o}]")))
            s.write_question(key, QuestionResult(SampleRow("q1", question_type="multi-session", label=True)))
    rows, profile = summary_rows(db)
    legend = [x for x in format_summary(rows, profile).splitlines()
              if x.startswith("om_threshold_sweep") and " = " in x]
    assert len(legend) == 4 and max(len(x) for x in legend) <= 100
    shown = {x.split(" = ")[1].split("; ")[0] for x in legend}
    assert shown == {f"message_tokens={m}, observation_tokens={o}" for m, o in grid}


def test_the_bar_keeps_count_elapsed_and_eta_at_80_columns():
    # issue 26: below ~150 columns the bar used to drop n/N, elapsed and ETA and keep the token text
    import io
    import re

    from rich.console import Console

    for width in (80, 60):
        buf = io.StringIO()
        p = Progress("rich", console=Console(file=buf, width=width, force_terminal=True, color_system=None))
        with p:
            p.start_run("om_threshold_sweep_job", total=500, done=3)
            p.advance("om_threshold_sweep_job")
        text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", buf.getvalue()).replace("\r", "\n")
        last = [ln for ln in text.splitlines() if ln.strip()][-1]
        assert len(last) <= width and "4/500" in last and re.search(r"\d:\d\d:\d\d eta ", last), (width, last)


def test_sweep_jobs_progress_lines_are_told_apart():
    from bench.report.labels import progress_label

    a = progress_label("om", "om_threshold_sweep[strategies.om.params.message_tokens=1500,"
                             "strategies.om.params.observation_tokens=1000]")
    b = progress_label("om", "om_threshold_sweep[strategies.om.params.message_tokens=3000,"
                             "strategies.om.params.observation_tokens=1000]")
    assert (a, b) == ("om 1500,1000", "om 3000,1000")
    assert progress_label("om", "quick") == "om"  # a plain run: the strategy alone, as before
