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
    # 8 synthetic questions per type (48): the replay is fast, so a run of 16 could finish between the line read
    # below and the signal's delivery on a loaded machine
    return [sys.executable, "-m", "bench.cli", "run", f"output.dir={out}", "run_strategies=[om]",
            "dataset.split=synthetic:8", "run.concurrency=1", "run.progress=log", "output.report=false"]


def _env() -> dict[str, str]:
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1", "CI": "1"}


@pytest.mark.slow
def test_ctrl_c_prints_one_line_and_the_same_command_resumes(tmp_path) -> None:
    # SIGINT at its default in the child: a suite started in the background (nohup, `&` in a script) passes
    # SIGINT ignored to its children, and Python then never raises KeyboardInterrupt
    proc = subprocess.Popen(_cmd(tmp_path), cwd=ROOT, env=_env(), stderr=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen: list[str] = []
    deadline = time.monotonic() + 300
    assert proc.stderr is not None and proc.stdout is not None
    total = 0
    for line in proc.stderr:  # progress lines: "[om] 0/N already done ...", then "[om] k/N ..."
        seen.append(line)
        if line.startswith("[om] 0/") and not total:
            total = int(line.split("/", 1)[1].split()[0].rstrip(","))
        k = line[5:].split("/", 1)[0] if line.startswith("[om] ") else ""
        if (total and k.isdigit() and int(k) >= 3) or time.monotonic() > deadline:  # the log prints every few
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
    assert total >= 40 and 3 <= done < total

    again = subprocess.run(_cmd(tmp_path), cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert f"[om] {done}/{total} already done" in again.stderr
    con = duckdb.connect(str(tmp_path / "bench.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT count(*), count(DISTINCT question_id) FROM samples").fetchone() == (total, total)
    finally:
        con.close()
