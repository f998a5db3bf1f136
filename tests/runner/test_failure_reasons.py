"""Questions that fail before anything of theirs is stored (an ingest failure: the embedder's server refuses the key)
are not results, so the same command retries them; their reason still reaches the console, the run log and the
results file (runs.extra), secrets redacted, and the summary says the run stopped on an error, not the budget."""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import pytest

from bench.runner.summary import failure_notes, summary_rows
from tests.helpers.fakeserver import FakeOpenAIServer
from tests.helpers.runner import ombench

SENTINEL = "sk-SENTINEL-f41lure-000000"


def _run(tmp_path: Path, base: str) -> tuple[object, str]:
    os.environ.setdefault("OPENAI_API_KEY", "sk-test-not-a-real-key-000000")
    p = ombench("run", f"output.dir={tmp_path}", "output.report=false", "run.progress=off", "dataset.limit=2",
                "run_strategies=[rag]", "strategies.rag.params.retriever=dense",
                "model.embedder.model=openai/text-embedding-3-small", f"gateway.api_base.embedder={base}")
    logs = sorted((tmp_path / "hydra").rglob("run.log"))
    return p, logs[-1].read_text() if logs else ""


def _query(out: Path, query: str) -> list[tuple]:
    con = duckdb.connect(str(out / "bench.duckdb"), read_only=True)
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


@pytest.mark.slow  # two `ombench run` subprocesses
def test_an_ingest_failure_has_its_reason_in_console_run_log_and_results_file(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000000")
    failing = [True]  # the embedder's server refuses the key (401: run-fatal), then accepts it
    with FakeOpenAIServer(schedule=lambda i, body: "401" if failing[0] and "input" in body else None) as srv:
        p, log = _run(tmp_path, f"{srv.base_url}?api_key={SENTINEL}")
        # every question failed: exit 1 with one line (a partial failure exits 0; docs/reliability.md)
        assert p.returncode == 1, p.stderr[-2000:]
        assert "ombench: error: every question of this run failed (2 failed, none answered)" in p.stderr
        flat = " ".join(p.stdout.split())  # the summary's notes column may wrap
        assert "2 failed, stopped (error)" in flat and "stopped (budget)" not in p.stdout
        assert "auth (ingest) x2: litellm.AuthenticationError" in p.stdout and "[rag] stopped early: ingest" in p.stdout
        assert "auth (ingest) x2" in log and "2 failed, stopped (error)" in " ".join(log.split())
        (extra, status), = _query(tmp_path, "SELECT extra, status FROM runs")
        [(n_samples,)] = _query(tmp_path, "SELECT count(*) FROM samples")
        extra = json.loads(extra)
        assert status == "stopped" and n_samples == 0  # not results: the same command computes them again
        assert extra["n_failures"] == 2 and {f["kind"] for f in extra["failures"]} == {"auth"}
        assert all(f["phase"] == "ingest" and f["message"] for f in extra["failures"])
        assert extra["stopped"].startswith("error: ingest: auth")
        # read back from the file (a sweep's merge, `ombench report`): the summary names them too
        rows, _ = summary_rows(tmp_path / "bench.duckdb")
        notes = "\n".join(failure_notes(rows))
        name = rows[0]["label"]  # the run's stable name (bench.store.run_names)
        assert ".rag@" in name and f"failed: {name}: 2 questions not stored (the same command retries them):" in notes
        assert "auth (ingest) x2: litellm.AuthenticationError" in notes and f"stopped: {name}: error: ingest: auth" in notes
        for path in tmp_path.rglob("*"):
            if path.is_file():
                assert SENTINEL.encode() not in path.read_bytes(), path
        assert SENTINEL not in p.stdout + p.stderr
        # the server fixed: the same command computes both, and the run's failures are cleared
        failing[0] = False
        p, _ = _run(tmp_path, f"{srv.base_url}?api_key={SENTINEL}")
    assert p.returncode == 0 and "stopped" not in p.stdout, p.stdout[-2000:]
    extras = [json.loads(e) for (e,) in _query(tmp_path, "SELECT extra FROM runs")]
    [(n_samples,)] = _query(tmp_path, "SELECT count(*) FROM samples WHERE error IS NULL")
    assert n_samples == 2 and all(e["n_failures"] == 0 and e["stopped"] is None for e in extras)
