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
4. a joblib sweep whose parent gets SIGTERM: no worker left running;
5. (issue 27, 29) a run split into question shards (`dataset.shard=i/2`) with one shard killed inside a shard write,
   re-run, merged: equal to the unsplit run, with one finished `runs` row; a secret sentinel given in `extra_body`,
   `extra_headers` and as the `?api_key=` of the embedder's base URL (fake server) found in no file and no output;
   the cassette replay of a real 0.5B model (scripts/cassette_run.py, when the cassette and the data are here)
   making at most OBSERVER_CALLS_PER_QUESTION Observer calls per question, and the summary saying how many
   retries of a refused input were skipped.

Offline engine and fake server: rule-based stand-ins, not an LLM; timings are not measured.

    LONGMEMEVAL_DATA_DIR=/work/shared/data .venv/bin/python scripts/soak.py [--out DIR] [--limit N] [--only GROUP ...]
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


SENTINEL = "soak-sentinel-5f3a9c-never-written"
OBSERVER_CALLS_PER_QUESTION = 10  # the cassette replay made 106 Observer calls for 3 questions before issue 27


def shard_checks(t: Trial, limit: int) -> None:
    def one() -> str:
        import duckdb

        base = [f"dataset.limit={limit}", "run_strategies=[om,full_context]", "run.progress=log",
                "output.report=false"]
        whole, split = t.out / "shards-whole", t.out / "shards-split"
        if (got := t.run([f"output.dir={whole}", *base])).returncode:
            return f"unsplit run exit {got.returncode}: {got.stderr[-300:]}"
        if t.run([f"output.dir={split}", *base, "dataset.shard=1/2"], kill_at="shard_write:5").returncode != \
                -signal.SIGKILL:
            return "shard 1/2 not killed"
        for i in (1, 2):
            if (got := t.run([f"output.dir={split}", *base, f"dataset.shard={i}/2"])).returncode:
                return f"shard {i}/2 exit {got.returncode}: {got.stderr[-300:]}"
        done = t.run(["merge", str(split / "shards"), "--db", str(split / "bench.duckdb")], cmd=OMBENCH)
        if done.returncode:
            return f"merge exit {done.returncode}: {done.stderr[-300:]}"
        con = duckdb.connect(str(split / "bench.duckdb"), read_only=True)
        try:
            status = sorted(r[0] for r in con.execute("SELECT status FROM runs").fetchall())
        finally:
            con.close()
        return t.same(whole / "bench.duckdb", split / "bench.duckdb") or (
            "" if status == ["finished", "finished"] else f"runs rows {status}, want two finished")
    t.check("question shards, one killed in shard_write:5, re-run and merged = unsplit run", one)


def secret_checks(t: Trial, limit: int) -> None:
    def one() -> str:
        out = t.out / "secrets"
        with FakeOpenAIServer(_responder) as srv:
            got = t.run([f"output.dir={out}", "run_strategies=[rag,om]", "strategies.rag.params.retriever=dense",
                         f"dataset.limit={limit}", "model.embedder.model=openai/text-embedding-3-small",
                         f"+gateway.api_base.embedder={srv.base_url}?api_key={SENTINEL}-url",
                         f"+model.judge.params.extra_body={{token: {SENTINEL}-body}}",
                         f"+model.actor.params.extra_headers={{Authorization: 'Bearer {SENTINEL}-header'}}",
                         "run.progress=log"], env=t.env(OPENAI_API_KEY=f"{SENTINEL}-env"))
            seen_key = any(f"{SENTINEL}-url" in h for h in srv.stats.auth)  # the URL's key, sent as the key
        if got.returncode:
            return f"exit {got.returncode}: {got.stderr[-300:]}"
        hits = [str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and SENTINEL.encode() in p.read_bytes()]
        hits += [n for n, text in (("stdout", got.stdout), ("stderr", got.stderr)) if SENTINEL in text]
        return (f"sentinel written in {hits[:5]}" if hits else "") or (
            "" if seen_key else "the ?api_key= of the URL never reached the server as the key")
    t.check("a secret in extra_body, extra_headers, an ?api_key= URL and the env: in no file, no output", one)


def cassette_check(t: Trial) -> None:
    cassette = Path("/work/shared/cassettes/qwen05b-oracle3.jsonl")
    if not cassette.is_file() or not os.environ.get("LONGMEMEVAL_DATA_DIR"):
        print(f"SKIP  cassette replay: needs {cassette} and LONGMEMEVAL_DATA_DIR", flush=True)
        return

    def one() -> str:
        import duckdb

        out = t.out / "cassette"
        got = subprocess.run([sys.executable, "scripts/cassette_run.py", "--out", str(out)], cwd=ROOT, env=t.env(),
                             capture_output=True, text=True, timeout=1800)
        if got.returncode:
            return f"exit {got.returncode}: {got.stderr[-300:]}"
        con = duckdb.connect(str(out / "bench.duckdb"), read_only=True)
        try:
            per_q = dict(con.execute("SELECT question_id, count(*) FROM calls WHERE role = 'observer' "
                                     "GROUP BY question_id ORDER BY question_id").fetchall())
        finally:
            con.close()
        said = [ln.strip() for ln in got.stdout.splitlines() if "retries of a refused input skipped" in ln]
        print(f"      cassette: Observer calls per question {per_q}; {said[0] if said else 'no refused line'}",
              flush=True)
        if not per_q or max(per_q.values()) > OBSERVER_CALLS_PER_QUESTION:
            return f"Observer calls per question {per_q}, bound {OBSERVER_CALLS_PER_QUESTION}"
        return "" if said else "the summary does not say how many retries of a refused input were skipped"
    t.check(f"cassette replay: at most {OBSERVER_CALLS_PER_QUESTION} Observer calls per question, stated", one)


GROUPS = ("kill", "sweep", "http", "joblib", "shards", "secrets", "cassette")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("results/soak"))
    ap.add_argument("--limit", type=int, default=8, help="questions per run (synthetic sample)")
    ap.add_argument("--only", nargs="+", choices=GROUPS, default=list(GROUPS), help="run these groups of checks")
    args = ap.parse_args()
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    t = Trial(args.out.resolve())
    started = time.monotonic()
    small = max(2, args.limit // 2)
    for group, check in (("kill", lambda: kill_checks(t, args.limit)), ("sweep", lambda: sweep_checks(t, small)),
                         ("http", lambda: http_checks(t, small)), ("joblib", lambda: joblib_check(t)),
                         ("shards", lambda: shard_checks(t, small)), ("secrets", lambda: secret_checks(t, small)),
                         ("cassette", lambda: cassette_check(t))):
        if group in args.only:
            check()
    failed = [r for r in t.results if not r[1]]
    print(f"soak: {len(t.results) - len(failed)}/{len(t.results)} checks passed in "
          f"{(time.monotonic() - started) / 60:.1f} min (offline engine and fake server: not an LLM)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
