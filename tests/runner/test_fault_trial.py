"""The fault trial, the parts that fit a few minutes (the longer one is `make soak`, scripts/soak.py): `ombench`
killed with SIGKILL at named moments (tests/helpers/killpoints.py) and re-run with the same command ends with
exactly the figures of a clean run; a sweep killed inside its merge or a shard write is finished by `ombench
merge` or by re-running it; a second writer on a results file in use is refused with one line and loses
nothing; 20% injected HTTP faults change no figure and every request the server saw is a recorded call or
retry; killing a joblib sweep's parent leaves no worker running. Offline engine (rule-based, not an LLM)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import psutil
import pytest

from tests.helpers.figures import differences, figures
from tests.helpers.runner import OMBENCH, ROOT

pytestmark = pytest.mark.slow  # ombench subprocesses, killed and re-run

KILLABLE = [sys.executable, "-m", "tests.helpers.killpoints", "run"]
COMMON = ["run.progress=log", "output.report=false"]


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1", "CI": "1", **extra}


def _single(out: Path) -> list[str]:
    # OM's storage in a file shared by the questions: the storage a killed replay leaves behind
    return [f"output.dir={out}", "run_strategies=[om]", "dataset.limit=3", "run.concurrency=2",
            f"+strategies.om.params.storage_path={out}/om.sqlite", *COMMON]


def _sweep(out: Path) -> list[str]:
    return ["-m", f"output.dir={out}", "run_strategies=[om]", "dataset.limit=2",
            "strategies.om.params.observation_tokens=800,1000", *COMMON]


def _run(args: list[str], kill_at: str = "", timeout: int = 300) -> subprocess.CompletedProcess:
    env = _env(KILL_AT=kill_at) if kill_at else _env()
    return subprocess.run([*KILLABLE, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("clean")
    single, sweep = out / "single", out / "sweep"
    for args in (_single(single), _sweep(sweep)):
        got = _run(args)
        assert got.returncode == 0, got.stderr
    return {"single": figures(single / "bench.duckdb"), "sweep": figures(sweep / "bench.duckdb")}


@pytest.mark.parametrize("moment", ["om_sqlite_write:300", "model_call:12", "checkpoint_write:2",
                                    "duckdb_write:2", "question:1"])
def test_killed_at_a_named_moment_then_rerun_matches_a_clean_run(clean, tmp_path: Path, moment: str) -> None:
    """Compared: every question table (samples, calls, call_cache, turns, turn_cache, judgments, call_texts,
    memory, retrieval, memory_outputs), all columns but timestamps, latencies, retries, cache hits and
    checkpoint_restored (tests/helpers/figures.py)."""
    args = _single(tmp_path)
    killed = _run(args, kill_at=moment)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    again = _run(args)
    assert again.returncode == 0, again.stderr
    assert "Traceback" not in again.stderr
    assert differences(clean["single"], figures(tmp_path / "bench.duckdb")) == []
    assert not list((tmp_path / "checkpoints").rglob(".tmp-*"))  # a killed writer's temporary is cleaned


def test_a_sweep_killed_inside_its_merge_is_finished_by_ombench_merge(clean, tmp_path: Path) -> None:
    killed = _run(_sweep(tmp_path), kill_at="merge:3")  # rows of some tables inserted, not committed
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    db = tmp_path / "bench.duckdb"
    if db.exists():  # the merge is one transaction: nothing of it survived
        con = duckdb.connect(str(db), read_only=True)
        try:
            tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
            assert "samples" not in tables or con.execute("SELECT count(*) FROM samples").fetchone() == (0,)
        finally:
            con.close()
    (sweep_dir,) = (tmp_path / "sweeps").iterdir()
    merged = subprocess.run([*OMBENCH, "merge", str(sweep_dir), "--db", str(db)], cwd=ROOT, env=_env(),
                            capture_output=True, text=True, timeout=300)
    assert merged.returncode == 0, merged.stderr
    assert differences(clean["sweep"], figures(db)) == []


def test_a_sweep_killed_inside_a_shard_write_is_finished_by_running_it_again(clean, tmp_path: Path) -> None:
    killed = _run(_sweep(tmp_path), kill_at="shard_write:12")  # the second question of the first job
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert list((tmp_path / "sweeps").rglob(".tmp-*"))  # the half-written temporary is there...
    again = _run(_sweep(tmp_path))
    assert again.returncode == 0, again.stderr
    assert not list((tmp_path / "sweeps").rglob(".tmp-*"))  # ...and cleaned by the next writer
    assert differences(clean["sweep"], figures(tmp_path / "bench.duckdb")) == []


def test_a_second_writer_is_refused_with_one_line_and_nothing_is_lost(tmp_path: Path) -> None:
    """Two runs on one results file: the second finds it in use and says so in one line (exit 1); run again
    after the first has finished, it completes. Every question of both runs is stored exactly once."""
    db = tmp_path / "bench.duckdb"
    gate = tmp_path / "go"
    # the first run pauses after its first question (results file open, mid-run) until the second has tried:
    # on a busy machine it could otherwise finish before the second even starts
    first_args = [*KILLABLE, f"output.dir={tmp_path}", "run_strategies=[om]", "dataset.limit=4",
                  "run.concurrency=1", *COMMON]
    second_args = [*OMBENCH, "run", f"output.dir={tmp_path}", "run_strategies=[full_context]", "dataset.limit=4",
                   *COMMON]
    first = subprocess.Popen(first_args, cwd=ROOT, env=_env(PAUSE_AT="question:1", PAUSE_FILE=str(gate)),
                             stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 300
    while not Path(f"{gate}.paused").exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert Path(f"{gate}.paused").exists(), first.stderr.read() if first.poll() is not None else "no pause in 300 s"
    second = subprocess.run(second_args, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300)
    gate.touch()
    _, rest = first.communicate(timeout=300)
    assert first.returncode == 0, rest
    errors = [ln for ln in second.stderr.splitlines() if ln.startswith("ombench: error")]
    assert second.returncode == 1 and len(errors) == 1 and "Traceback" not in second.stderr, second.stderr
    assert f"{db}" in errors[0] and f"another process holds it (PID {first.pid})" in errors[0]
    again = subprocess.run(second_args, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    con = duckdb.connect(str(db), read_only=True)
    try:
        got = con.execute("SELECT r.strategy, count(*), count(DISTINCT s.question_id) FROM samples s "
                          "JOIN runs r USING (run_key) GROUP BY 1 ORDER BY 1").fetchall()
    finally:
        con.close()
    assert got == [("full_context", 4, 4), ("om", 4, 4)]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_killing_a_joblib_sweep_parent_leaves_no_worker_running(tmp_path: Path, sig: signal.Signals) -> None:
    args = [*OMBENCH, "run", "-m", f"output.dir={tmp_path}", "run_strategies=[om]", "dataset.limit=6",
            "strategies.om.params.observation_tokens=800,1000", "hydra/launcher=joblib",
            "hydra.launcher.n_jobs=2", *COMMON]
    parent = subprocess.Popen(args, cwd=ROOT, env=_env(), stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    proc = psutil.Process(parent.pid)
    deadline = time.monotonic() + 120
    workers: list[psutil.Process] = []
    while time.monotonic() < deadline and len(workers) < 2:  # both jobs running in loky workers
        time.sleep(0.5)
        workers = [c for c in proc.children(recursive=True) if "loky" in " ".join(c.cmdline())]
    assert len(workers) >= 2, "the sweep never started its workers"
    everyone = proc.children(recursive=True)
    time.sleep(2)  # the workers are replaying
    parent.send_signal(sig)
    out, err = parent.communicate(timeout=60)
    gone, alive = psutil.wait_procs(everyone, timeout=5)
    for p in alive:  # do not leave them behind even when the test fails
        p.kill()
    assert not alive, [p.pid for p in alive]
    assert parent.returncode == 128 + sig, err
    assert "Traceback" not in err
    assert "interrupted" in err.strip().splitlines()[-1]


def test_twenty_percent_http_faults_change_no_figure_and_every_request_is_counted(tmp_path: Path, monkeypatch,
                                                                                  capfd) -> None:
    """Actor, judge and embedder (rag with dense retrieval, and full_context) on the fake server: a clean run and
    one with 20% faults (429, 500, malformed, timeouts) store the same figures; the server's request count
    equals the recorded calls plus their retries (no hidden SDK retry); nothing but the summary reaches the
    console (no 'Retrying request', no litellm lines)."""
    from bench.runner.app import run_job
    from tests.helpers.fakeserver import FakeOpenAIServer, last_user_text
    from tests.helpers.runner import compose_cfg

    def responder(body: dict) -> str:
        text = last_user_text(body)
        if "Model Response:" in text:
            return "yes" if "blue" in text.split("Model Response:", 1)[1].lower() else "no"
        return "I believe the answer is blue."

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000000")
    results = {}
    for name, rate in (("clean", 0.0), ("faulty", 0.2)):
        with FakeOpenAIServer(responder, fault_rate=rate, fault_kinds=("429", "500", "malformed", "timeout"),
                              seed=7, retry_after_s=0.01, hang_s=1.5) as server:
            out = tmp_path / name
            run_job(compose_cfg(
                out, "dataset.limit=3", "run_strategies=[rag,full_context]", "strategies.rag.params.retriever=dense",
                "model.actor.model=openai/gpt-4o-2024-08-06", "model.judge.model=openai/gpt-4o-2024-08-06",
                "model.embedder.model=openai/text-embedding-3-small", f"+gateway.api_base.openai={server.base_url}",
                "gateway.max_attempts=10", "gateway.timeout_s=1.0", "gateway.local_defaults=false",
            ))
            requests, faults = server.stats.requests, sum(server.stats.faults.values())
        con = duckdb.connect(str(out / "bench.duckdb"), read_only=True)
        try:
            sent = con.execute("SELECT sum(1 + retries) FROM calls WHERE NOT coalesce(simulated, false) "
                               "AND NOT response_cache_hit AND model NOT LIKE 'offline/%'").fetchone()[0]
            embeds = con.execute("SELECT count(*) FROM calls WHERE role = 'embedder'").fetchone()[0]
        finally:
            con.close()
        assert embeds > 0 and requests == sent, (name, requests, sent, faults)
        results[name] = (figures(out / "bench.duckdb"), faults)
    assert results["faulty"][1] > 0 and results["clean"][1] == 0
    assert differences(results["clean"][0], results["faulty"][0]) == []
    captured = capfd.readouterr()
    for text in (captured.out, captured.err):
        assert "Retrying" not in text and "LiteLLM" not in text and "litellm" not in text.lower().replace(
            "litellm-", ""), text[-2000:]
