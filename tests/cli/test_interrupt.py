"""Ctrl-C (SIGINT) during a run: one line saying what finished and how to resume, exit 130, no traceback; the
same command then resumes where the run stopped."""

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


def _env() -> dict[str, str]:
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1", "CI": "1"}


@pytest.mark.slow
def test_ctrl_c_prints_one_line_and_the_same_command_resumes(tmp_path) -> None:
    proc = subprocess.Popen(_cmd(tmp_path), cwd=ROOT, env=_env(), stderr=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    seen: list[str] = []
    deadline = time.monotonic() + 300
    assert proc.stderr is not None and proc.stdout is not None
    for line in proc.stderr:  # progress lines: "[om] k/16 ..."
        seen.append(line)
        if line.startswith("[om] 3/16") or time.monotonic() > deadline:
            break
    proc.send_signal(signal.SIGINT)
    rest_err = proc.stderr.read()
    out = proc.stdout.read()
    assert proc.wait(timeout=120) == 130
    assert "Traceback" not in rest_err and "Traceback" not in out
    tail = [ln for ln in rest_err.splitlines() if not ln.startswith("[om] ")]
    assert len(tail) == 1, rest_err
    assert tail[0].startswith("ombench: interrupted: questions done per strategy: om ")
    assert "re-run the same command to resume" in tail[0]
    done = int(tail[0].split("om ", 1)[1].split("/", 1)[0])
    assert 3 <= done < 16

    again = subprocess.run(_cmd(tmp_path), cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert f"[om] {done}/16 already done" in again.stderr
    con = duckdb.connect(str(tmp_path / "bench.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT count(*), count(DISTINCT question_id) FROM samples").fetchone() == (16, 16)
    finally:
        con.close()
