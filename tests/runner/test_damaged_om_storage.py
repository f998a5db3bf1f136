"""A damaged OM storage file (`strategies.om.params.storage_path`) stops the run with one line naming the file and
the fix (move it aside), instead of failing its questions on every re-run with exit 0: the config check refuses it
before anything is written (exit 2); moved aside, the same command makes a fresh file and finishes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.runner import ombench


@pytest.mark.slow  # two `ombench run` subprocesses
def test_a_damaged_om_storage_file_is_one_line_with_the_fix_before_anything_runs(tmp_path: Path) -> None:
    store = tmp_path / "om store.sqlite"
    store.write_bytes(b"\x13garbled, not an SQLite file\x00" * 400)
    args = ["run", f"output.dir={tmp_path}", "output.report=false", "run.progress=off", "dataset.limit=1",
            "run_strategies=[om]", "run.checkpoints=false", f"+strategies.om.params.storage_path={store}"]
    p = ombench(*args)
    assert p.returncode == 2, p.stdout[-2000:] + p.stderr[-2000:]
    [line] = [ln for ln in p.stderr.splitlines() if ln.startswith("ombench: error:")]
    assert str(store) in line and "is not an SQLite file" in line
    assert "move the file aside" in line and "Traceback" not in p.stderr
    assert not (tmp_path / "bench.duckdb").exists()  # refused before anything was written
    store.rename(tmp_path / "om store.sqlite.bad")  # what the line says to do
    again = ombench(*args)
    assert again.returncode == 0, again.stderr[-2000:]
    assert store.is_file() and ".om@" in again.stdout  # the om run's name in the summary
