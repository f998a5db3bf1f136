"""The summary never crashes on empty data: a strategy that stored no turns (all questions failed, or a
strategy without turn rows) gets its notes computed over an empty frame."""

from __future__ import annotations

from bench.runner.summary import empty_memory_warnings, working_memory_notes
from bench.store.db import connect


def test_summary_notes_on_a_run_without_turns(tmp_path) -> None:
    db = tmp_path / "bench.duckdb"
    connect(db).close()  # schema only: no runs, no turns
    rows = [{"run_key": "r1", "label": "om", "strategy": "om"}]
    assert empty_memory_warnings(db, rows) == []
    assert working_memory_notes(db, rows) == []
