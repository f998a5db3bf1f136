"""The sentinel sweep: unique keys planted through every path a secret can take into `ombench run` (an environment
variable named by gateway.api_key_env, a provider's own variable, a command-line override, a password inside a
base URL, a literal in a user's config file), a real run and a multirun (joblib workers) against the local fake
OpenAI server, then every file under the run folder (raw bytes; DuckDB, Parquet and SQLite cells; zlib blobs
such as call_texts) and the captured stdout/stderr: 0 occurrences. The fake server proves each key was sent."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import duckdb
import pytest

from tests.helpers.fakeserver import FakeOpenAIServer, last_user_text
from tests.helpers.runner import ombench
from tests.helpers.secret_sweep import sweep

SENTINELS = {
    "cli": "sk-SENTINEL-cli-7f3a9c1e5b2d4f60",  # +model.actor.params.api_key=...
    "url": "SENTINEL-url-2d8e4f6a1c3b5d79",  # gateway.api_base.openai=http://user:...@host/v1 (the summarizer's key)
    "env": "sk-SENTINEL-env-9b7c5d3e1f0a2c48",  # gateway.api_key_env.judge=OMBENCH_TEST_JUDGE_KEY
    "provider": "sk-SENTINEL-openai-5e1d3c7b9a8f6e42",  # OPENAI_API_KEY (never needed here: every role has a key)
    "file": "sk-SENTINEL-file-4a6c8e0b2d1f3a57",  # a literal api_key in the user's config file
}

LEAKY_MODEL = f"""\
name: leaky
actor: {{model: openai/fake-actor, params: {{temperature: 0.0}}}}
observer: {{model: offline/observer, params: {{temperature: 0.3}}}}
reflector: {{model: offline/reflector, params: {{temperature: 0.0}}}}
judge: {{model: openai/fake-judge, params: {{temperature: 0.0, max_tokens: 10}}}}
summarizer: {{model: openai/fake-summarizer, params: {{}}}}
embedder: {{model: offline/embedder, params: {{}}}}
evaluator: {{model: offline/evaluator, params: {{api_key: {SENTINELS['file']}}}}}
actor_max_input_tokens: 128000
"""


def _responder(body: dict) -> str:
    text = last_user_text(body)
    if "Model Response:" in text:  # the judge
        return "yes"
    return "A short answer."


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(_responder) as s:
        yield s


def _run(tmp: Path, server: FakeOpenAIServer, *extra: str, multirun: bool = False) -> tuple[Path, list[Path]]:
    conf, work = tmp / "conf", tmp / "work"
    (conf / "model").mkdir(parents=True)
    (conf / "model" / "leaky.yaml").write_text(LEAKY_MODEL)
    work.mkdir()
    env = {"OMBENCH_TEST_JUDGE_KEY": SENTINELS["env"], "OPENAI_API_KEY": SENTINELS["provider"]}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        proc = ombench(
            "run", *(["-m"] if multirun else []), "--config-dir", str(conf), f"output.dir={work / 'out'}", "model=leaky", "dataset.limit=2",
            "run_strategies=[full_context,compaction]", f"+model.actor.params.api_key={SENTINELS['cli']}",
            f"gateway.api_base.openai=http://user:{SENTINELS['url']}@127.0.0.1:{server.port}/v1",
            "gateway.api_key_env.judge=OMBENCH_TEST_JUDGE_KEY",
            *extra, cwd=work)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    assert proc.returncode == 0, proc.stderr[-3000:]
    (tmp / "stdout.txt").write_text(proc.stdout)
    (tmp / "stderr.txt").write_text(proc.stderr)
    assert proc.stderr.count("ombench: note: ") == 2  # the command-line key and the URL, one line each
    return work, [tmp / "stdout.txt", tmp / "stderr.txt"]


def _assert_answered(db: Path, n: int) -> None:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT count(*), count(error) FROM samples").fetchone()
        names = [r[0] for r in con.execute("SELECT name FROM runs").fetchall()]
    finally:
        con.close()
    assert rows == (n, 0), rows  # every question answered through the fake server: the keys worked
    assert all("SENTINEL" not in name for name in names)


def _assert_keys_were_sent(server: FakeOpenAIServer) -> None:
    sent = {h for h in server.stats.auth if h}
    assert f"Bearer {SENTINELS['cli']}" in sent  # the actor's command-line key
    assert f"Bearer {SENTINELS['env']}" in sent  # the judge's key from the variable gateway.api_key_env names
    assert f"Bearer {SENTINELS['url']}" in sent  # the summarizer's key: the password of the base URL


def _assert_clean(roots: list[Path]) -> Counter[str]:
    kinds: Counter[str] = Counter()
    hits = sweep(roots, SENTINELS.values(), kinds)
    assert hits == [], "\n".join(f"{h.needle} in {h.path} ({h.where})" for h in hits)
    assert sum(kinds.values()) > 0
    return kinds


@pytest.mark.slow  # two subprocess runs (one a joblib multirun) through litellm's HTTP path
def test_no_planted_secret_is_written_anywhere(tmp_path: Path, server: FakeOpenAIServer) -> None:
    server.reset_stats()
    work, streams = _run(tmp_path / "single", server)
    _assert_answered(work / "out" / "bench.duckdb", 4)
    _assert_keys_were_sent(server)
    kinds = _assert_clean([work, *streams])
    assert {".duckdb", ".yaml", ".log", ".json", ".sqlite", ".html"} <= set(kinds), kinds

    server.reset_stats()
    work, streams = _run(tmp_path / "multi", server, "run.epoch=0,1", "hydra/launcher=joblib",
                         "hydra.launcher.n_jobs=2", multirun=True)
    _assert_answered(work / "out" / "bench.duckdb", 8)
    _assert_keys_were_sent(server)
    kinds = _assert_clean([work, *streams])
    assert {".parquet", ".duckdb", ".yaml"} <= set(kinds), kinds
    assert (work / "out" / "sweeps").is_dir() and any((work / "out" / "sweeps").rglob("multirun.yaml"))


def test_the_sweep_finds_what_compression_hides(tmp_path: Path) -> None:
    """The sweep itself can fail: a needle inside a compressed DuckDB column, a zlib blob, a Parquet page, a
    SQLite row and a file name is found."""
    import sqlite3
    import zlib

    needle = "NEEDLE-0123456789abcdef"
    con = duckdb.connect(str(tmp_path / "x.duckdb"))
    con.execute("CREATE TABLE t (a VARCHAR, b BLOB)")
    con.execute("INSERT INTO t SELECT 'row' || i::VARCHAR, NULL FROM range(5000) r(i)")
    con.execute("INSERT INTO t VALUES (?, ?)", [f"x{needle}", zlib.compress(f"blob {needle}".encode())])
    con.execute(f"COPY (SELECT * FROM t) TO '{tmp_path / 'x.parquet'}' (FORMAT parquet, COMPRESSION zstd)")
    con.close()
    lite = sqlite3.connect(tmp_path / "x.sqlite")
    lite.execute("CREATE TABLE r (v BLOB)")
    lite.execute("INSERT INTO r VALUES (?)", [zlib.compress(needle.encode())])
    lite.commit()
    lite.close()
    (tmp_path / f"dir-{needle}").mkdir()
    hits = sweep([tmp_path], [needle])
    found = {(Path(h.path).name, h.where) for h in hits}
    assert ("x.duckdb", "main.t.a") in found and ("x.duckdb", "main.t.b+zlib") in found
    assert ("x.parquet", "parquet.a") in found and ("x.parquet", "parquet.b+zlib") in found
    assert ("x.sqlite", "r.v+zlib") in found and (f"dir-{needle}", "name") in found
