"""The results contract end to end, on the synthetic sample with the offline engine: every run records its
provenance, the summary and the report tell runs over different datasets apart, `checkpoint_restored` reaches
the store, checkpoints of another format are recomputed, and a sweep re-run computes exactly the question that
errored and nothing else."""

from __future__ import annotations

import json

import pytest

import bench.evaluate.answer as answer_mod
import bench.runner.app as app_mod
import bench.runner.experiment as experiment_mod
from bench.gateway import GatewayError
from bench.report.tables import headline
from bench.report.data import load as load_report_data
from bench.runner.app import run_job
from bench.runner.checkpoint import CHECKPOINT_FORMAT, CheckpointStore
from bench.runner.summary import format_summary, summary_rows
from bench.store import Results, merge_shards
from tests.helpers.runner import compose_cfg


def test_runs_record_provenance_and_summary_tells_datasets_apart(tmp_path) -> None:
    run_job(compose_cfg(tmp_path, "experiment=quick", "dataset.limit=2", "run_strategies=[om]"))
    run_job(compose_cfg(tmp_path, "experiment=quick", "dataset.name='synthetic:1'", "dataset.limit=2", "run_strategies=[om]"))
    db = tmp_path / "bench.duckdb"
    with Results(db) as res:
        runs = [res.run(k) for k in res.run_keys()]
    assert len(runs) == 2
    for run in runs:
        assert run is not None and run.git_commit and len(run.git_commit) == 40 and run.git_dirty is not None
        assert run.package_versions["duckdb"] and run.package_versions["litellm"]
        assert run.dataset_name and run.dataset_name.startswith("synthetic:") and len(run.dataset_sha256 or "") == 64
        assert run.dataset_split == "synthetic" and run.n_questions_planned == 2 and run.tokenizer == "o200k_base"
        assert run.price_map_version and run.price_map_version.startswith("litellm-")
        assert run.actor_model == "offline/reader" and run.judge_model == "offline/judge"
        assert run.status == "finished" and run.started_at and run.finished_at
        assert run.extra["spec"]["actor"]["model"] == "offline/reader"  # the rest of the manifest, kept
    assert len({r.dataset_name for r in runs if r}) == 2 and len({r.name for r in runs if r}) == 1

    rows, profile = summary_rows(db)
    labels = [r["label"] for r in rows]
    assert len(set(labels)) == 2 and all(label.startswith("quick.om@synthetic") for label in labels)  # told apart
    text = format_summary(rows, profile)
    assert all(len(line) <= 100 for line in text.splitlines())
    assert {r["dataset"] for r in rows} == {f"synthetic:{r.dataset_sha256[:8]}" for r in runs if r and r.dataset_sha256}

    data = load_report_data(db)  # the report's tables and figure legends use the same labels
    assert sorted(r.label for r in data.runs) == sorted(labels)
    _, header, table = next(b for b in headline(data) if b[0] == "table")
    assert header[0] == "run" and len({row[0] for row in table}) == 2


def test_checkpoint_restored_reaches_the_store(tmp_path) -> None:
    run_job(compose_cfg(tmp_path, "dataset.limit=2", "run_strategies=[om]"))
    # another actor: new run key, same ingestion key, so the memory state comes from the checkpoints
    run_job(compose_cfg(tmp_path, "dataset.limit=2", "run_strategies=[om]", "+model.actor.params.seed=7"))
    with Results(tmp_path / "bench.duckdb") as res:
        got = {(r.run_key, s.checkpoint_restored) for r in res.runs().itertuples() for s in res.sample_rows(r.run_key)}
    assert sorted(flag for _, flag in got) == [False, True]  # one run replayed, the other restored


def test_checkpoint_of_another_format_is_recomputed(tmp_path, capsys) -> None:
    cp = CheckpointStore(tmp_path, "om-abc")
    cp.save("q1", {"question_id": "q1", "turns": []})
    cp.save("q2", {"question_id": "q2", "turns": []})
    assert cp.load("q1") == {"question_id": "q1", "turns": [], "format_version": CHECKPOINT_FORMAT}
    for q in ("q1", "q2"):
        p = cp.dir / f"{q}.json"
        p.write_text(json.dumps({k: v for k, v in json.loads(p.read_text()).items() if k != "format_version"}))
    assert cp.load("q1") is None and cp.load("q2") is None
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "format 0" in err[0] and f"format {CHECKPOINT_FORMAT}" in err[0] and "recomputing" in err[0]


@pytest.mark.slow  # two sweep jobs, then the same sweep again
def test_sweep_rerun_computes_exactly_the_question_that_errored(tmp_path, monkeypatch) -> None:
    """Two jobs of a sweep write shards (as under Hydra's multirun); in job 1 the Actor call of one question fails
    (an injected outage, after the gateway's retries). The merged file records the error; re-running the sweep
    computes that question in that job and nothing else, and the merge replaces the errored row."""
    sweep = tmp_path / "sweeps" / "quick"
    jobs = {"a": "strategies.om.params.message_tokens=1500", "b": "strategies.om.params.message_tokens=3000"}
    computed: list[tuple[str, str]] = []
    state = {"job": "", "fail": ""}

    real_process, real_answer = experiment_mod.answer_question, answer_mod.answer

    async def counting(inst, *args, **kwargs):
        computed.append((state["job"], inst.question_id))
        return await real_process(inst, *args, **kwargs)

    async def faulty(model, prompt, **kw):
        if state["fail"] and state["fail"] in prompt.text:
            raise GatewayError("503", "injected outage")
        return await real_answer(model, prompt, **kw)

    monkeypatch.setattr(experiment_mod, "answer_question", counting)
    monkeypatch.setattr(answer_mod, "answer", faulty)

    def sweep_once(fail_in: str, question: str) -> None:
        for name, override in jobs.items():
            monkeypatch.setattr(app_mod, "_is_multirun", lambda o=override, n=name: (True, sweep / n, o))
            state.update(job=name, fail=question if name == fail_in else "")
            out = run_job(compose_cfg(tmp_path, "dataset.limit=3", "run_strategies=[om]", override))
            assert out[0].failed == 0
        merge_shards(sweep, tmp_path / "bench.duckdb")  # what the MergeShards callback does at the end

    from bench.benchmarks.longmemeval.loader import load_dataset

    target = load_dataset("synthetic").instances[1]
    sweep_once("a", target.question)
    assert len(computed) == 6
    db = tmp_path / "bench.duckdb"
    with Results(db) as res:
        keys = {name: res.headline()[lambda h, n=name: h.name.str.contains(jobs[n])].run_key.iloc[0] for name in jobs}
        errored = {n: res.errored_ids(k) for n, k in keys.items()}
        before = {n: {s.question_id: s.answered_at for s in res.sample_rows(k)} for n, k in keys.items()}
    assert errored == {"a": {target.question_id}, "b": set()}

    computed.clear()
    sweep_once("", "")
    assert computed == [("a", target.question_id)]  # exactly the errored question, in its job
    with Results(db) as res:
        after = {n: {s.question_id: s for s in res.sample_rows(k)} for n, k in keys.items()}
        assert res.errored_ids(keys["a"]) == set()
    retried = after["a"][target.question_id]
    assert retried.error is None and retried.label is not None and retried.checkpoint_restored is True
    for n in jobs:  # every other question kept its first answer
        assert {q: s.answered_at for q, s in after[n].items() if (n, q) != ("a", target.question_id)} == \
            {q: t for q, t in before[n].items() if (n, q) != ("a", target.question_id)}


@pytest.mark.parametrize("newer", [False, True])
def test_run_into_a_results_file_of_another_format_is_a_one_line_error(tmp_path, newer) -> None:
    import duckdb

    from bench.errors import UserError

    db = tmp_path / "bench.duckdb"
    con = duckdb.connect(str(db))
    if newer:
        con.execute("CREATE TABLE runs (run_key VARCHAR, format_version BIGINT)")
        con.execute("INSERT INTO runs VALUES ('x', 99)")
    else:
        con.execute("CREATE TABLE runs (run_key VARCHAR, name VARCHAR)")
    con.close()
    with pytest.raises(UserError) as err:
        run_job(compose_cfg(tmp_path, "dataset.limit=1", "run_strategies=[oracle]"))
    msg = str(err.value)
    assert "\n" not in msg and str(db) in msg and ("format 99" if newer else "format 0") in msg
