"""`ombench run` end to end on the synthetic sample: rows land in DuckDB, a re-run adds none and recomputes
nothing, and a new actor reuses the ingestion checkpoint instead of replaying the haystack."""

from __future__ import annotations

import duckdb
import pytest

import bench.runner.question as question_mod
from bench.runner.app import run_job
from tests.helpers.runner import compose_cfg

TABLES = ("runs", "samples", "calls", "call_cache", "turns", "turn_cache", "judgments")


def _counts(db) -> dict[str, int]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
    finally:
        con.close()


@pytest.fixture()
def count_ingests(monkeypatch):
    calls = {"n": 0}
    real = question_mod.ingest

    async def counting(inst, env):
        calls["n"] += 1
        return await real(inst, env)

    monkeypatch.setattr(question_mod, "ingest", counting)
    return calls


def test_run_writes_rows_and_rerun_adds_nothing(tmp_path, count_ingests) -> None:
    cfg = compose_cfg(tmp_path, "dataset.limit=3", "run_strategies=[full_context,om,oracle]")
    first = run_job(cfg)
    assert [o.computed for o in first] == [3, 3, 3] and all(o.failed == 0 for o in first)
    n1 = _counts(tmp_path / "bench.duckdb")
    assert n1["samples"] == 9 and n1["runs"] == 3 and n1["judgments"] == 9
    assert n1["turns"] > 0 and n1["turn_cache"] > 0 and n1["call_cache"] > 0
    assert count_ingests["n"] == 9

    second = run_job(cfg)
    assert [o.computed for o in second] == [0, 0, 0] and [o.skipped for o in second] == [3, 3, 3]
    assert _counts(tmp_path / "bench.duckdb") == n1
    assert count_ingests["n"] == 9  # nothing replayed again


def test_new_actor_reuses_ingestion_checkpoint(tmp_path, count_ingests) -> None:
    run_job(compose_cfg(tmp_path, "dataset.limit=2", "run_strategies=[om]"))
    assert count_ingests["n"] == 2
    # another actor: a new run key (new rows) but the same ingestion key (no replay)
    out = run_job(compose_cfg(tmp_path, "dataset.limit=2", "run_strategies=[om]", "+model.actor.params.seed=7"))
    assert out[0].computed == 2
    assert count_ingests["n"] == 2
    con = duckdb.connect(str(tmp_path / "bench.duckdb"), read_only=True)
    try:
        runs = con.execute("SELECT count(*) FROM runs").fetchone()[0]
        # both runs carry the same turn series: the checkpoint kept what the replay measured
        per_run = con.execute("SELECT run_key, count(*), sum(prompt_tokens) FROM turns GROUP BY run_key").fetchall()
    finally:
        con.close()
    assert runs == 2 and len(per_run) == 2 and per_run[0][1:] == per_run[1][1:]


def test_threshold_change_replays(tmp_path, count_ingests) -> None:
    run_job(compose_cfg(tmp_path, "dataset.limit=1", "run_strategies=[om]"))
    run_job(compose_cfg(tmp_path, "dataset.limit=1", "run_strategies=[om]", "strategies.om.params.message_tokens=1500"))
    assert count_ingests["n"] == 2


def test_bad_config_is_one_line_error(tmp_path) -> None:
    from bench.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        run_job(compose_cfg(tmp_path, "cachesim.profiles=[openai,nosuch]"))
    assert "nosuch" in str(err.value) and "\n" not in str(err.value)


def test_quick_run_writes_report_with_valid_figures(tmp_path) -> None:
    cfg = compose_cfg(tmp_path, "dataset.limit=3", "output.report=true")
    run_job(cfg)
    out = tmp_path / "report"
    md = (out / "report.md").read_text()
    pngs = sorted(out.glob("*.png"))
    assert len(pngs) >= 5
    for p in pngs:
        data = p.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000, p.name
        assert f"({p.name})" in md, f"report does not reference {p.name}"
    for strategy in ("full_context", "rag", "compaction", "om", "oracle"):
        assert strategy in md
    assert "offline engine" in md
