"""Failures of the machine around a run are one true line and a non-zero exit (1) that says what is stored and
what to do: a full disk under the results file or the checkpoints, a read-only output folder or results file,
a results file another process holds (a single run, and a sweep's merge, which names the command that finishes
it). Nothing is lost: after the cause is gone, the same command completes the run. Real file systems: a tiny or
read-only tmpfs in a private mount namespace (tests/helpers/fsfaults.py)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from tests.helpers.fsfaults import in_namespace, read_only_file, requires_unshare, tmpfs
from tests.helpers.runner import OMBENCH, ROOT

pytestmark = pytest.mark.slow  # every test runs ombench in subprocesses

BASE = ["run_strategies=[om]", "run.progress=off", "output.report=false"]


def _env() -> dict[str, str]:
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1", "CI": "1"}


def _run(cmd: list[str], timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout)


def _errors(err: str) -> list[str]:
    """The error lines (warnings about the subset are not errors); a traceback fails the test."""
    assert "Traceback" not in err, err
    return [ln for ln in err.splitlines() if "error" in ln.lower() and "dataset.limit" not in ln]


def _samples(db: Path) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT r.n_questions_planned, s.question_id, count(*) FROM samples s JOIN runs r "
                           "USING (run_key) GROUP BY r.n_questions_planned, s.run_key, s.question_id ORDER BY 1, 2").fetchall()
    finally:
        con.close()


def _script(tmp_path: Path, lines: list[str]) -> subprocess.CompletedProcess:
    """Run shell lines in a private mount namespace; each ombench step writes its output to tmp_path."""
    return subprocess.run(["unshare", "-rm", "sh", "-c", "\n".join(lines)], cwd=ROOT, env=_env(),
                          capture_output=True, text=True, timeout=600)


def _ombench_line(args: list[str], name: str, tmp_path: Path) -> str:
    cmd = " ".join(shlex.quote(a) for a in [*OMBENCH, "run", *args])
    return f"{cmd} > {tmp_path / name}.out 2> {tmp_path / name}.err; echo $? > {tmp_path / name}.rc"


def _step(tmp_path: Path, name: str) -> tuple[int, str]:
    return int((tmp_path / f"{name}.rc").read_text()), (tmp_path / f"{name}.err").read_text()


@requires_unshare
@pytest.mark.parametrize("where", ["results", "checkpoints"])
def test_a_full_disk_is_one_line_and_the_same_command_finishes_once_space_is_back(tmp_path: Path,
                                                                                  where: str) -> None:
    """Two questions are stored; the disk fills; the next run stops at its first write with one line (exit 1)
    saying what is stored; with space again the same command completes, each question stored once."""
    disk = tmp_path / "disk"
    disk.mkdir()
    out = tmp_path / "out"
    on_disk = [f"output.db={disk}/bench.duckdb", f"output.checkpoint_dir={out}/checkpoints"] if where == "results" \
        else [f"output.db={out}/bench.duckdb", f"output.checkpoint_dir={disk}/checkpoints"]
    args = [*BASE, f"output.dir={out}", *on_disk, "run.concurrency=1"]
    fill = tmpfs(disk, "32m", fill_to_kb=64)[1]
    got = _script(tmp_path, [
        tmpfs(disk, "32m")[0],
        _ombench_line([*args, "dataset.limit=2"], "first", tmp_path),
        fill,
        _ombench_line([*args, "dataset.limit=4"], "full", tmp_path),
        f"rm {disk}/.filler",
        _ombench_line([*args, "dataset.limit=4"], "again", tmp_path),
        f"cp {disk}/bench.duckdb {tmp_path}/after.duckdb 2>/dev/null || true",
    ])
    assert got.returncode == 0, got.stderr
    assert _step(tmp_path, "first")[0] == 0
    rc, err = _step(tmp_path, "full")
    lines = _errors(err)
    assert rc == 1 and len(lines) == 1, err
    assert "no space left on the device" in lines[0] and "free disk space, then re-run the same command" in lines[0]
    assert "questions stored per strategy: om " in lines[0] and "cannot rollback" not in err
    assert _step(tmp_path, "again")[0] == 0
    db = tmp_path / "after.duckdb" if where == "results" else out / "bench.duckdb"
    rows = _samples(db)
    assert [r for r in rows if r[0] == 4] and all(r[2] == 1 for r in rows)  # every question once
    assert len([r for r in rows if r[0] == 4]) == 4 and len([r for r in rows if r[0] == 2]) == 2
    if where == "checkpoints":
        assert not list((out / "checkpoints").rglob(".tmp-*")) if (out / "checkpoints").exists() else True


@requires_unshare
def test_a_read_only_output_folder_is_one_line(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    got = _run(in_namespace(tmpfs(ro, "1m", read_only=True), [*OMBENCH, "run", *BASE, f"output.dir={ro}/out",
                                                               "dataset.limit=1"]))
    lines = _errors(got.stderr)
    assert got.returncode == 1 and len(lines) == 1, got.stderr
    assert "read-only" in lines[0] and "nothing was written" in lines[0] and "output.dir" in lines[0]


@requires_unshare
def test_a_read_only_results_file_is_one_line_that_never_blames_another_process(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = _run([*OMBENCH, "run", *BASE, f"output.dir={out}", "dataset.limit=1"])
    assert first.returncode == 0, first.stderr
    db = out / "bench.duckdb"
    got = _run(in_namespace(read_only_file(db), [*OMBENCH, "run", *BASE, f"output.dir={out}", "dataset.limit=2"]))
    lines = _errors(got.stderr)
    assert got.returncode == 1 and len(lines) == 1, got.stderr
    assert f"results file {db}" in lines[0] and "read-only" in lines[0]
    assert "another process" not in lines[0] and "close the other" not in lines[0]


def _hold(db: Path) -> subprocess.Popen:
    """Another process holding the DuckDB file open for writing until it is killed."""
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
                               "print('held', flush=True); time.sleep(600)", str(db)], stdout=subprocess.PIPE,
                              text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_a_results_file_held_by_another_process_is_one_line_naming_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    holder = _hold(out / "bench.duckdb")
    try:
        got = _run([*OMBENCH, "run", *BASE, f"output.dir={out}", "dataset.limit=1"])
    finally:
        holder.kill()
        holder.wait()
    lines = _errors(got.stderr)
    assert got.returncode == 1 and len(lines) == 1, got.stderr
    assert f"another process holds it (PID {holder.pid})" in lines[0]
    assert "no question of this job was stored" in lines[0] and "re-run" in lines[0]


def test_a_sweep_whose_merge_finds_the_file_held_says_how_to_finish_and_that_command_works(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    db = out / "bench.duckdb"
    holder = _hold(db)
    try:
        got = _run([*OMBENCH, "run", "-m", *BASE, f"output.dir={out}", "dataset.limit=2",
                    "strategies.om.params.observation_tokens=800,1000"])
    finally:
        holder.kill()
        holder.wait()
    lines = _errors(got.stderr)
    assert got.returncode == 1 and len(lines) == 1, got.stderr
    line = lines[0]
    assert "another process holds it" in line and "nothing was merged" in line and "shards under" in line
    command = line.split("finish with: ", 1)[1].strip()
    assert command.startswith("ombench merge ") and f"--db {db}" in command
    args = shlex.split(command)[1:]
    time.sleep(0.2)
    merged = _run([*OMBENCH, *args])
    assert merged.returncode == 0, merged.stderr
    rows = _samples(db)
    assert len(rows) == 4 and all(r[2] == 1 for r in rows)  # two jobs x two questions, once each


def _limited_run(out: Path, limit: int | None) -> subprocess.CompletedProcess:
    import resource

    def pre() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([*OMBENCH, "run", f"output.dir={out}", "output.report=false", "run.progress=off",
                           "dataset.limit=2", "run_strategies=[full_context]", "run.checkpoints=false",
                           "output.response_cache_policy=off"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600, preexec_fn=pre)


@pytest.mark.slow  # two `ombench run` subprocesses
def test_a_file_size_limit_reached_while_closing_the_results_file_is_an_error_and_loses_nothing(tmp_path):
    """DuckDB checkpoints its log into the file at close and swallowed a failure there: the command exited 0,
    saying nothing, with the results only in the .wal. Now: one line naming the file, the limit and the fix, exit
    1, in the run log too; the same command without the limit recovers every question without computing any."""
    # the file holds its schema (~1.6 MB in blocks) but not the questions' data: the checkpoint at close fails
    first = _limited_run(tmp_path, 2_000_000)
    assert first.returncode == 1, first.stdout[-1500:] + first.stderr[-1500:]
    [line] = [ln for ln in first.stderr.splitlines() if ln.startswith("ombench: error:")]
    assert f"closing {tmp_path / 'bench.duckdb'} failed: the file reached the file-size limit" in line
    assert "ulimit -f" in line and "full_context 2/2" in line
    logs = sorted((tmp_path / "hydra").rglob("run.log"))
    assert line in logs[-1].read_text()
    second = _limited_run(tmp_path, None)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "finished: 0 written" in sorted((tmp_path / "hydra").rglob("run.log"))[-1].read_text()
    con = duckdb.connect(str(tmp_path / "bench.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM samples WHERE error IS NULL").fetchone()[0] == 2
    finally:
        con.close()
