"""A 2×2 OM-threshold multirun with the joblib launcher merges into one DuckDB file and a re-run adds nothing;
a dry run prints a per-role cost estimate priced with the configured real models, offline."""

from __future__ import annotations

import duckdb
import pytest

from bench.runner.app import run_job
from tests.helpers.runner import compose_cfg, ombench


def _db_counts(db) -> tuple[int, int, int]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return tuple(con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("runs", "samples", "calls"))
    finally:
        con.close()


@pytest.mark.slow  # ombench subprocesses: a 2-job joblib sweep, run twice
def test_joblib_sweep_merges_and_rerun_adds_nothing(tmp_path) -> None:
    args = ["run", "-m", "experiment=om_threshold_sweep", "dataset.limit=2", "hydra/launcher=joblib",
            "hydra.launcher.n_jobs=2", f"output.dir={tmp_path}", "run.progress=off", "output.report=true",
            "strategies.om.params.message_tokens=1500,3000", "strategies.om.params.observation_tokens=1000,4000"]
    first = ombench(*args)
    assert first.returncode == 0, first.stderr[-2000:]
    # the sweep's report draws the threshold figure from strategies.om.params; the summary fits 100 columns
    # with short labels, each explained on its own line by its swept settings
    assert (tmp_path / "report" / "threshold_sweep.png").stat().st_size > 5000
    assert "![OM threshold sweep" in (tmp_path / "report" / "report.md").read_text()
    summary = first.stdout.split("questions added or retried")[1].splitlines()[1:]
    assert summary and all(len(line) <= 100 for line in summary)
    # each job's stable name (cut in the middle, its hash kept) explained by the settings that tell it apart
    legend = [ln for ln in first.stdout.splitlines() if ln.startswith("om_threshold_sweep") and " = " in ln]
    assert len(legend) == 4
    assert any(" = message_tokens=1500, observation_tokens=1000; " in ln for ln in legend)
    runs, samples, calls = _db_counts(tmp_path / "bench.duckdb")
    assert (runs, samples) == (4, 8) and calls > 0
    con = duckdb.connect(str(tmp_path / "bench.duckdb"), read_only=True)
    names = {r[0] for r in con.execute("SELECT name FROM runs").fetchall()}
    con.close()
    assert len(names) == 4  # each job is named by its overrides

    second = ombench(*args)
    assert second.returncode == 0, second.stderr[-2000:]
    assert _db_counts(tmp_path / "bench.duckdb") == (runs, samples, calls)
    assert "0 questions added or retried" in second.stdout


def test_dry_run_prices_with_real_models_offline(tmp_path, capsys) -> None:
    cfg = compose_cfg(tmp_path, "model=gpt-4o", "dry_run=true", "dry_run_sample=2", "run_strategies=[om,full_context]")
    run_job(cfg)
    out = capsys.readouterr().out
    assert "DRY RUN" in out and "offline engine" in out
    assert "gemini/gemini-2.5-flash" in out and "openai/gpt-4o-2024-08-06" in out
    assert "[om]" in out and "[full_context]" in out
    # nothing was written to the results database
    assert not (tmp_path / "bench.duckdb").exists()
    # the actor row carries a positive dollar estimate for gpt-4o prices
    actor = next(line for line in out.splitlines() if line.startswith("actor") and "gpt-4o" in line)
    assert float(actor.split()[-1]) > 0


def test_dry_run_names_the_worst_case_of_retries(tmp_path, capsys) -> None:
    """answer.retries: the dry run prices every question retried max times (om has a question thread), and says
    how many tries its own table holds; full_context does not retry, so it gets no such line."""
    flags = tmp_path / "flags.txt"
    run_job(compose_cfg(tmp_path, "model=gpt-4o", "dry_run=true", "dry_run_sample=2", "dataset.limit=4",
                        "run_strategies=[om,full_context]", "answer.retries.max=2"))
    out = capsys.readouterr().out
    [line] = [x for x in out.splitlines() if x.startswith("retries (answer.retries.max=2)")]
    assert "worst case, every question answered wrongly every time: 8 tries (answer + judge)" in line
    assert "run.max_usd plans for the worst case" in line
    assert float(line.split("~$")[1].split(";")[0]) > 0
    flags.write_text("no-such-question\n")
    run_job(compose_cfg(tmp_path / "f", "model=gpt-4o", "dry_run=true", "dry_run_sample=2", "dataset.limit=4",
                        "run_strategies=[om]", "answer.retries.max=2", f"answer.retries.flags_file={flags}"))
    assert "the 0 flagged questions (answer.retries.flags_file)" in capsys.readouterr().out


@pytest.mark.slow  # loads LongMemEval_S
def test_mastra_dry_run_on_real_s(real_data_dir, tmp_path, capsys) -> None:
    cfg = compose_cfg(tmp_path, "experiment=mastra_gpt5mini", "dry_run=true", "dry_run_sample=1",
                      f"dataset.data_dir={real_data_dir}")
    run_job(cfg)
    out = capsys.readouterr().out
    assert "498 questions" in out and "S (cleaned)" in out
    assert "observer" in out and "gpt-5-mini" in out
