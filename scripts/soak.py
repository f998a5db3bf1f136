"""The long fault trial (`make soak`): the checks of tests/runner/test_fault_trial.py at more moments, on a larger
sample, with more faults. Every check compares a run that was killed, faulted or fed bad state with a clean run
of the same command, over every question table (tests/helpers/figures.py: all columns but timestamps,
latencies, retries, cache hits and checkpoint_restored), and prints one line; the script exits 1 if any failed.

1. kill -9 at named moments (tests/helpers/killpoints.py), several occurrences each, then the same command again:
   during a question (model_call), between questions (question), inside a checkpoint write, a DuckDB transaction
   and an OM SQLite transaction (om, full_context and rag over a shared OM storage file);
2. a sweep killed inside a shard write (finished by running it again) and inside its merge (by `ombench merge`);
3. Actor, judge and embedder on the local fake OpenAI-compatible server: killed inside a response-cache write,
   then 20% and 40% injected HTTP faults (429, 500, malformed, timeout): same figures, and the server's request
   count equals the recorded calls plus their retries;
4. a joblib sweep whose parent gets SIGTERM: no worker left running.

Offline engine and fake server: rule-based stand-ins, not an LLM; timings are not measured.

    LONGMEMEVAL_DATA_DIR=/work/shared/data .venv/bin/python scripts/soak.py [--out DIR] [--limit N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.fakeserver import FakeOpenAIServer, last_user_text  # noqa: E402
from tests.helpers.figures import differences, figures  # noqa: E402

KILLABLE = [sys.executable, "-m", "tests.helpers.killpoints", "run"]
OMBENCH = [sys.executable, "-m", "bench.cli"]
MOMENTS = {  # moment -> the occurrences to kill at (each a separate killed run)
    "model_call": [5, 30, 80],
    "question": [1, 4],
    "checkpoint_write": [1, 3, 7],
    "duckdb_write": [1, 5],
    "om_sqlite_write": [50, 400, 1500],
}


class Trial:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.results: list[tuple[str, bool, str]] = []

    def env(self, **extra: str) -> dict[str, str]:
        return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1", "CI": "1", **extra}

    def run(self, args: list[str], kill_at: str = "", env: dict[str, str] | None = None,
            cmd: list[str] | None = None) -> subprocess.CompletedProcess:
        e = {**(env or self.env()), **({"KILL_AT": kill_at} if kill_at else {})}
        return subprocess.run([*(cmd or KILLABLE), *args], cwd=ROOT, env=e, capture_output=True, text=True,
                              timeout=1800)

    def check(self, name: str, fn: Callable[[], str]) -> None:
        """Run one check; `fn` returns "" when it held, else what went wrong."""
        t0 = time.monotonic()
        try:
            problem = fn()
        except Exception as exc:  # a check that crashes is a failed check, and the trial goes on
            problem = f"{type(exc).__name__}: {exc}"
        ok = not problem
        self.results.append((name, ok, problem))
        print(f"{'PASS' if ok else 'FAIL'}  {name}  ({time.monotonic() - t0:.0f}s){'' if ok else ': ' + problem}",
              flush=True)

    def same(self, clean: Path, got: Path) -> str:
        return "; ".join(differences(figures(clean), figures(got)))


def single_args(out: Path, limit: int) -> list[str]:
    return [f"output.dir={out}", "run_strategies=[om,full_context,rag]", f"dataset.limit={limit}",
            "run.concurrency=3", f"+strategies.om.params.storage_path={out}/om.sqlite", "run.progress=log",
            "output.report=false"]


def sweep_args(out: Path, limit: int) -> list[str]:
    return ["-m", f"output.dir={out}", "run_strategies=[om]", f"dataset.limit={limit}",
            "strategies.om.params.observation_tokens=800,1000,1500", "run.progress=log", "output.report=false"]


def kill_checks(t: Trial, limit: int) -> None:
    clean = t.out / "clean"
    got = t.run(single_args(clean, limit))
    if got.returncode != 0:
        raise SystemExit(f"the clean run failed:\n{got.stderr[-3000:]}")
    for moment, counts in MOMENTS.items():
        for n in counts:
            def one(moment: str = moment, n: int = n) -> str:
                out = t.out / f"kill-{moment}-{n}"
                killed = t.run(single_args(out, limit), kill_at=f"{moment}:{n}")
                if killed.returncode != -signal.SIGKILL:
                    return f"not killed (exit {killed.returncode}): the moment never came"
                again = t.run(single_args(out, limit))
                if again.returncode != 0:
                    return f"re-run exit {again.returncode}: {again.stderr[-500:]}"
                leftovers = list((out / "checkpoints").rglob(".tmp-*"))
                return t.same(clean / "bench.duckdb", out / "bench.duckdb") or (
                    f"temporaries left: {leftovers}" if leftovers else "")
            t.check(f"kill -9 at {moment}:{n}, re-run = clean run", one)


def sweep_checks(t: Trial, limit: int) -> None:
    clean = t.out / "sweep-clean"
    got = t.run(sweep_args(clean, limit))
    if got.returncode != 0:
        raise SystemExit(f"the clean sweep failed:\n{got.stderr[-3000:]}")
    for n in (3, 25):
        def shard(n: int = n) -> str:
            out = t.out / f"sweep-shard-{n}"
            if t.run(sweep_args(out, limit), kill_at=f"shard_write:{n}").returncode != -signal.SIGKILL:
                return "not killed"
            again = t.run(sweep_args(out, limit))
            return (f"re-run exit {again.returncode}" if again.returncode else "") or \
                t.same(clean / "bench.duckdb", out / "bench.duckdb")
        t.check(f"sweep killed in shard_write:{n}, run again = clean sweep", shard)
    for n in (1, 4):
        def merge(n: int = n) -> str:
            out = t.out / f"sweep-merge-{n}"
            if t.run(sweep_args(out, limit), kill_at=f"merge:{n}").returncode != -signal.SIGKILL:
                return "not killed"
            (sweep_dir,) = (out / "sweeps").iterdir()
            done = t.run(["merge", str(sweep_dir), "--db", str(out / "bench.duckdb")], cmd=OMBENCH)
            return (f"merge exit {done.returncode}: {done.stderr[-300:]}" if done.returncode else "") or \
                t.same(clean / "bench.duckdb", out / "bench.duckdb")
        t.check(f"sweep killed in merge:{n}, ombench merge = clean sweep", merge)


def _responder(body: dict) -> str:
    text = last_user_text(body)
    if "Model Response:" in text:
        return "yes" if "blue" in text.split("Model Response:", 1)[1].lower() else "no"
    return "I believe the answer is blue."


def http_args(out: Path, url: str, limit: int) -> list[str]:
    return [f"output.dir={out}", "run_strategies=[rag,full_context]", "strategies.rag.params.retriever=dense",
            f"dataset.limit={limit}", "model.actor.model=openai/gpt-4o-2024-08-06",
            "model.judge.model=openai/gpt-4o-2024-08-06", "model.embedder.model=openai/text-embedding-3-small",
            f"+gateway.api_base.openai={url}", "gateway.max_attempts=12", "gateway.timeout_s=1.0",
            "gateway.local_defaults=false", "run.progress=log", "output.report=false"]


def _sent(db: Path) -> int:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return int(con.execute("SELECT sum(1 + retries) FROM calls WHERE NOT coalesce(simulated, false) AND NOT "
                               "response_cache_hit AND model NOT LIKE 'offline/%'").fetchone()[0])
    finally:
        con.close()


def http_checks(t: Trial, limit: int) -> None:
    env = t.env(OPENAI_API_KEY="sk-soak-not-a-real-key-0000")
    clean = t.out / "http-clean"
    with FakeOpenAIServer(_responder) as srv:
        got = t.run(http_args(clean, srv.base_url, limit), env=env)
        if got.returncode != 0:
            raise SystemExit(f"the clean HTTP run failed:\n{got.stderr[-3000:]}")
    for n in (2, 20):
        def cache(n: int = n) -> str:
            out = t.out / f"http-cache-kill-{n}"
            with FakeOpenAIServer(_responder) as srv:
                killed = t.run(http_args(out, srv.base_url, limit), env=env, kill_at=f"response_cache_write:{n}")
                if killed.returncode != -signal.SIGKILL:
                    return "not killed"
                again = t.run(http_args(out, srv.base_url, limit), env=env)
            return (f"re-run exit {again.returncode}" if again.returncode else "") or \
                t.same(clean / "bench.duckdb", out / "bench.duckdb")
        t.check(f"kill -9 at response_cache_write:{n}, re-run = clean run", cache)
    for rate in (0.2, 0.4):
        def faults(rate: float = rate) -> str:
            out = t.out / f"http-faults-{int(rate * 100)}"
            with FakeOpenAIServer(_responder, fault_rate=rate, fault_kinds=("429", "500", "malformed", "timeout"),
                                  seed=11, retry_after_s=0.01, hang_s=1.5) as srv:
                got = t.run(http_args(out, srv.base_url, limit), env=env)
                requests, injected = srv.stats.requests, sum(srv.stats.faults.values())
            if got.returncode != 0:
                return f"exit {got.returncode}: {got.stderr[-500:]}"
            stray = [ln for ln in got.stdout.splitlines() + got.stderr.splitlines()
                     if "Retrying" in ln or "LiteLLM" in ln]
            sent = _sent(out / "bench.duckdb")
            return "; ".join(p for p in (
                t.same(clean / "bench.duckdb", out / "bench.duckdb"),
                "" if requests == sent else f"server saw {requests} requests, calls + retries = {sent}",
                "" if injected else "no fault was injected",
                f"stray lines: {stray[:3]}" if stray else "") if p)
        t.check(f"{int(rate * 100)}% HTTP faults = clean run, requests = calls + retries", faults)


def joblib_check(t: Trial) -> None:
    def one() -> str:
        import psutil

        out = t.out / "joblib"
        args = [*OMBENCH, "run", *sweep_args(out, 8), "hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]
        parent = subprocess.Popen(args, cwd=ROOT, env=t.env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True)
        proc = psutil.Process(parent.pid)
        deadline = time.monotonic() + 120
        kids: list = []
        while time.monotonic() < deadline and len([k for k in kids if "loky" in " ".join(k.cmdline())]) < 2:
            time.sleep(0.5)
            kids = proc.children(recursive=True)
        time.sleep(3)
        kids = proc.children(recursive=True)
        parent.send_signal(signal.SIGTERM)
        parent.communicate(timeout=120)
        _, alive = psutil.wait_procs(kids, timeout=5)
        for p in alive:
            p.kill()
        return f"{len(alive)} of {len(kids)} children still running" if alive else ""
    t.check("SIGTERM to a joblib sweep's parent leaves no worker", one)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("results/soak"))
    ap.add_argument("--limit", type=int, default=8, help="questions per run (synthetic sample)")
    args = ap.parse_args()
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    t = Trial(args.out.resolve())
    started = time.monotonic()
    kill_checks(t, args.limit)
    sweep_checks(t, max(2, args.limit // 2))
    http_checks(t, max(2, args.limit // 2))
    joblib_check(t)
    failed = [r for r in t.results if not r[1]]
    print(f"soak: {len(t.results) - len(failed)}/{len(t.results)} checks passed in "
          f"{(time.monotonic() - started) / 60:.1f} min (offline engine and fake server: not an LLM)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
