"""The summary says when OM's observation log grew well past its reflection threshold, and why (real runs on the
synthetic sample, offline engine, real DuckDB)."""

from __future__ import annotations

from pathlib import Path

from bench.runner.app import run_job
from bench.runner.log_notes import OVER, log_size_notes
from bench.runner.summary import summary_rows
from bench.store import Results
from tests.helpers.runner import compose_cfg


def _run(tmp_path: Path, *overrides: str) -> tuple[Path, list[str], int]:
    run_job(compose_cfg(tmp_path, "dataset.limit=2", "run_strategies=[om]", *overrides))
    db = tmp_path / "bench.duckdb"
    with Results(db) as res:
        peak = int(res.turns().memory_tokens.max())
    rows, _ = summary_rows(db)
    return db, log_size_notes(db, rows), peak


def test_a_log_past_its_threshold_is_reported_with_its_cause(tmp_path: Path) -> None:
    # a 60-token threshold no reflection can reach: every one comes back over its target, and the log grows
    _, notes, peak = _run(tmp_path, "strategies.om.params.message_tokens=300",
                          "strategies.om.params.observation_tokens=60")
    assert peak > OVER * 60
    [note] = notes
    flat = " ".join(note.split())  # the note wraps at 100 columns
    assert ".om@" in flat and f": the observation log reached {peak:,} tokens" in flat and flat.startswith("warning: ")
    assert "the reflection threshold 60" in flat and "cause: committed ones came back over their target" in flat
    assert all(len(line) <= 100 for line in note.split("\n"))


def test_a_bounded_log_says_nothing(tmp_path: Path) -> None:
    _, notes, peak = _run(tmp_path)  # the sample's own thresholds (message 2,000, observation 2,700)
    assert peak <= OVER * 2700 and notes == []
