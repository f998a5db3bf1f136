"""A run killed with SIGKILL halfway, then re-run with the same command, ends with the same `samples` table
as an uninterrupted run: no question lost, none duplicated."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import duckdb
import pytest

from tests.helpers.runner import ROOT


def _cmd(out) -> list[str]:
    return [sys.executable, "-m", "bench.cli", "run", f"output.dir={out}", "run_strategies=[om]",
            "run.concurrency=1", "run.progress=log", "output.report=false"]


def _samples(db) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(
            "SELECT question_id, question_type, is_abstention, hypothesis, label, label_strict, prompt_tokens "
            "FROM samples ORDER BY question_id").fetchall()
    finally:
        con.close()


def _env() -> dict[str, str]:
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1", "CI": "1"}


@pytest.mark.slow  # three ombench subprocesses, one killed
def test_sigkill_then_rerun_matches_uninterrupted(tmp_path) -> None:
    full, killed = tmp_path / "full", tmp_path / "killed"
    subprocess.run(_cmd(full), cwd=ROOT, env=_env(), check=True, capture_output=True, timeout=600)
    expected = _samples(full / "bench.duckdb")
    assert len(expected) == 16

    proc = subprocess.Popen(_cmd(killed), cwd=ROOT, env=_env(), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 300
    try:
        for line in proc.stderr:  # progress lines: "[om] k/16 ..."
            if line.startswith("[om] 5/16") or time.monotonic() > deadline:
                break
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    partial = _samples(killed / "bench.duckdb")
    assert 5 <= len(partial) < 16  # really killed halfway, and what finished survived

    subprocess.run(_cmd(killed), cwd=ROOT, env=_env(), check=True, capture_output=True, timeout=600)
    assert _samples(killed / "bench.duckdb") == expected
