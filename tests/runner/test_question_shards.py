"""One run split into question shards (`dataset.shard=i/n`): the parts are disjoint and cover the run, every part
keeps the run key and writes Parquet shards, and `merge_shards` makes them one run whose accuracy, prefill, cache
hit rate and cost equal the unsplit run's (offline engine, not an LLM)."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from bench.benchmarks.longmemeval.loader import load_dataset
from bench.config import parse_shard
from bench.errors import ConfigError
from bench.runner.app import run_job
from bench.runner.summary import summary_rows
from bench.store import Results, merge_shards
from tests.helpers.runner import compose_cfg

# what must be equal between the unsplit run and its merged shards: per run, and per question
RUN_FIGURES = ("run_key", "strategy", "planned", "n", "micro", "macro", "abstention", "errors", "status", "per_type",
               "mean_prompt_tokens", "hit_rate", "prefill_per_q", "usd_per_q", "name")
SAMPLE_FIGURES = ("question_id", "label", "hypothesis", "prompt_tokens", "completion_tokens", "cost_usd", "error")


def test_parts_are_disjoint_cover_the_run_and_keep_its_key() -> None:
    ds = load_dataset("synthetic:n_per_type=3,haystack_tokens=200,abstention_per_type=1")
    chosen = ds.subset(stratified=13, seed=4)
    parts = [chosen.part(i, 4) for i in range(1, 5)]
    ids = [p.question_ids() for p in parts]
    assert sorted(sum(ids, [])) == sorted(chosen.question_ids())  # every question once
    assert max(map(len, ids)) - min(map(len, ids)) <= 1
    for p in parts:
        assert p.subset_ids == chosen.subset_ids and p.sha256 == chosen.sha256  # the run key's inputs
        assert p.planned == 13 and [q.question_id for q in p] == p.question_ids()
    assert [chosen.part(i, 4).question_ids() for i in range(1, 5)] == ids  # deterministic
    whole = ds.part(1, 1)
    assert whole.question_ids() == ds.question_ids() and whole.subset_ids is None


def test_parts_keep_a_shared_conversation_together() -> None:
    ds = load_dataset("synthetic:n_per_type=2,haystack_tokens=200,abstention_per_type=0")
    unit = {q.question_id: f"conv{k // 3}" for k, q in enumerate(ds)}  # three questions per conversation
    parts = [ds.part(i, 3, unit_of=lambda q: unit[q.question_id]) for i in (1, 2, 3)]
    for p in parts:
        convs = {unit[q] for q in p.question_ids()}
        assert all(sum(1 for v in unit.values() if v == c) == sum(1 for q in p.question_ids() if unit[q] == c)
                   for c in convs)  # a conversation's questions all in one part


@pytest.mark.parametrize("text", ["0/4", "5/4", "1/0", "a/4", "3", "1/4/2"])
def test_bad_shard_is_one_line(text: str) -> None:
    with pytest.raises(ConfigError, match="dataset.shard") as err:
        parse_shard(text)
    assert "\n" not in str(err.value)
    assert parse_shard("2/4") == (2, 4)


def _figures(db: Path) -> tuple[list[dict], dict[str, list[tuple]]]:
    rows, _ = summary_rows(db)
    with Results(db) as res:
        samples = {k: [tuple(getattr(s, f) for f in SAMPLE_FIGURES) for s in res.sample_rows(k)] for k in res.run_keys()}
    return [{f: r[f] for f in RUN_FIGURES} for r in rows], samples


@pytest.mark.realdata
@pytest.mark.slow  # 20 real questions, two strategies, computed twice
def test_four_shards_merged_equal_the_unsplit_run(tmp_path: Path) -> None:
    if not os.environ.get("LONGMEMEVAL_DATA_DIR"):
        pytest.skip("real data: set LONGMEMEVAL_DATA_DIR to the folder with longmemeval_oracle.json.xz")
    common = ("dataset=longmemeval_oracle", "dataset.stratified=20", "run_strategies=[full_context,om]")
    whole = tmp_path / "whole"
    run_job(compose_cfg(whole, *common))
    split = tmp_path / "split"
    written = 0
    for i in range(1, 5):
        outcomes = run_job(compose_cfg(split, *common, f"dataset.shard={i}/4"))
        assert {o.planned for o in outcomes} == {5}  # 20 questions dealt over 4 parts
        written += sum(o.computed for o in outcomes)
    assert written == 40 and not (split / "bench.duckdb").exists()  # shards only, until the merge
    assert sorted(p.name for p in (split / "shards").iterdir()) == [f"part-{i}-of-4" for i in range(1, 5)]
    assert merge_shards(split / "shards", split / "bench.duckdb") == 40
    want, got = _figures(whole / "bench.duckdb"), _figures(split / "bench.duckdb")
    assert len(want[0]) == 2 and {r["planned"] for r in want[0]} == {20} and {r["n"] for r in want[0]} == {20}
    # accuracy, prefill, hit rate, cost per strategy: the same run (floats to the last bits: DuckDB's parallel
    # aggregation sums in any order, so two unsplit runs differ there too, e.g. macro 0.45 vs 0.44999999999999996)
    diffs = [(w["strategy"], f, w[f], g[f]) for w, g in zip(want[0], got[0]) for f in RUN_FIGURES
             if w[f] != (pytest.approx(g[f], rel=1e-12) if isinstance(g[f], float) else g[f])]
    assert not diffs
    assert got[1] == want[1] and all(len(v) == 20 for v in want[1].values())
    assert merge_shards(split / "shards", split / "bench.duckdb") == 0  # merging again adds nothing


def test_shards_of_a_sweep_are_one_run_with_one_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`ombench run -m 'dataset.shard=1/2,2/2'` (any Hydra launcher, submitit included): each job writes shards in
    its job folder; the merge makes one run, named without the shard."""
    import bench.runner.app as app_mod

    sweep = tmp_path / "sweep"
    for i in (1, 2):
        override = f"dataset.shard={i}/2"
        monkeypatch.setattr(app_mod, "_is_multirun", lambda o=override, n=i: (True, sweep / f"job{n}", o))
        run_job(compose_cfg(tmp_path, "experiment=quick", "dataset.limit=4", "run_strategies=[full_context]", override))
    assert merge_shards(sweep, tmp_path / "bench.duckdb") == 4
    with Results(tmp_path / "bench.duckdb") as res:
        runs = res.runs()
    assert len(runs) == 1 and runs.name.iloc[0] == "quick" and runs.n_questions_planned.iloc[0] == 4


def _run_row(db: Path) -> dict:
    import json

    with Results(db) as res:
        runs = res.runs()
    assert len(runs) == 1
    row = runs.iloc[0].to_dict()
    return {**row, "extra": json.loads(row["extra"])}


def test_merged_shards_make_one_coherent_runs_row(tmp_path: Path) -> None:
    """The runs row of a merged split run is every shard's, not the last-merged shard's: the earliest start, the
    latest finish, finished only when every shard is merged and finished, failures summed; merging in two goes
    gives the same row as one merge."""
    common = ("experiment=quick", "dataset.limit=6", "run_strategies=[full_context]")
    for i in (1, 2, 3):
        run_job(compose_cfg(tmp_path, *common, f"dataset.shard={i}/3"))
    parts = tmp_path / "shards"
    import pyarrow.parquet as pq

    shard_rows = {p.parent.parent.name: pq.read_table(p).to_pylist()[0] for p in parts.glob("*/runs/*.parquet")}
    assert len(shard_rows) == 3
    db = tmp_path / "bench.duckdb"
    assert merge_shards(parts / "part-2-of-3", db) == 2  # one shard first: the run is not finished
    row = _run_row(db)
    assert row["status"] == "stopped" and pd.isna(row["finished_at"])
    assert row["extra"]["stopped"] == "shards not merged yet: 1/3, 3/3" and list(row["extra"]["shards"]) == ["2/3"]
    assert merge_shards(parts, db) == 4  # then all of them
    row = _run_row(db)
    assert row["status"] == "finished" and row["extra"]["stopped"] is None and row["n_questions_planned"] == 6
    assert list(row["extra"]["shards"]) == ["1/3", "2/3", "3/3"] and "shard" not in row["extra"]
    assert row["started_at"] == min(r["started_at"] for r in shard_rows.values())
    assert row["finished_at"] == max(r["finished_at"] for r in shard_rows.values())
    assert row["extra"]["n_failures"] == 0 and row["extra"]["failures"] == []
    assert merge_shards(parts, db) == 0 and _run_row(db) == row  # merging again changes nothing


def test_combined_row_keeps_every_shards_stop_and_failures() -> None:
    import json
    from datetime import datetime

    from bench.store.shard_runs import combine

    def shard(i: int, status: str, failures: int, stopped: str | None) -> dict:
        fails = [{"question_id": f"q{i}{k}", "phase": "ingest", "kind": "auth", "message": "no"} for k in range(failures)]
        return {"run_key": "om-1", "status": status, "started_at": datetime(2026, 1, 1, i),
                "finished_at": datetime(2026, 1, 1, i, 30), "n_questions_planned": 9,
                "extra": json.dumps({"shard": f"{i}/3", "stopped": stopped, "n_failures": failures,
                                     "failures": fails, "run_name": "om"})}

    row = combine([shard(3, "finished", 0, None), shard(1, "stopped", 2, "error: auth: bad key"),
                   shard(2, "finished", 1, None)])
    extra = json.loads(row["extra"])
    assert row["status"] == "stopped" and row["started_at"] == datetime(2026, 1, 1, 1)
    assert row["finished_at"] == datetime(2026, 1, 1, 3, 30)
    assert extra["stopped"] == "shard 1/3: error: auth: bad key" and extra["n_failures"] == 3
    assert [f["question_id"] for f in extra["failures"]] == ["q10", "q11", "q20"] and extra["run_name"] == "om"
    running = combine([shard(1, "finished", 0, None), {**shard(2, "running", 0, None), "finished_at": None},
                       shard(3, "finished", 0, None)])
    assert running["status"] == "running" and running["finished_at"] is None
