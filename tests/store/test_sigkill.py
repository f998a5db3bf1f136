"""A writer killed with SIGKILL mid-run loses at most the question in flight; a rerun completes the table."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

N = 12
SCRIPT = Path(__file__).resolve().parents[1] / "helpers" / "store_writer.py"
ROOT = Path(__file__).resolve().parents[2]


def _run(db: Path, delay: float) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, str(SCRIPT), str(db), str(N), str(delay)],
                            stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)


def _table(db: Path, sql: str):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


SAMPLES = "SELECT run_key, question_id, question_type, hypothesis, label FROM samples ORDER BY question_id"


@pytest.mark.slow  # writer subprocesses, one killed
def test_sigkill_then_resume_equals_uninterrupted(tmp_path):
    ref_db = tmp_path / "ref.duckdb"
    p = _run(ref_db, 0.0)
    p.communicate(timeout=120)
    assert p.returncode == 0

    db = tmp_path / "killed.duckdb"
    p = _run(db, 0.05)
    written = 0
    assert p.stdout is not None
    for line in p.stdout:
        if line.startswith("written"):
            written += 1
        if written == 4:
            os.kill(p.pid, signal.SIGKILL)
            break
    p.wait(timeout=60)
    assert p.returncode == -signal.SIGKILL
    partial = _table(db, SAMPLES)
    assert 4 <= len(partial) < N  # committed questions survived; the run did not finish
    # every stored question is complete: no orphan child rows of a half-written question
    assert _table(db, "SELECT count(*) FROM calls")[0][0] == 20 * len(partial)
    assert _table(db, "SELECT count(*) FROM turns")[0][0] == 30 * len(partial)

    p = _run(db, 0.0)  # rerun: skips done ids
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 0 and out.count("written") == N - len(partial)
    assert _table(db, SAMPLES) == _table(ref_db, SAMPLES)
    for t in ("calls", "call_cache", "turns", "judgments"):
        assert _table(db, f"SELECT count(*) FROM {t}") == _table(ref_db, f"SELECT count(*) FROM {t}")
    assert _table(db, "SELECT status FROM runs") == [("finished",)]
