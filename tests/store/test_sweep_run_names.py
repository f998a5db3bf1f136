"""A sweep job's new run gets a short readable name (only what the rest of the name does not say), and a run
stored under another name (the long form, or none before names existed) keeps it when written again (issue 26)."""

from __future__ import annotations

import json

import duckdb

from bench.store.run_names import name_of, new_run_name, run_name, short_experiment

LONG = ("om_threshold_sweep[dataset.stratified=60,dataset=longmemeval_s,strategies.om.params.message_tokens=10000,"
        "strategies.om.params.observation_tokens=20000]")


def test_short_experiment_keeps_what_the_name_does_not_say() -> None:
    assert short_experiment(LONG, 60) == "om_threshold_sweep[message_tokens=10000,observation_tokens=20000]"
    # a size that is not the subset's, keys sharing a last segment: kept, whole where needed
    assert short_experiment("e[dataset.limit=5,run_strategies=[om,rag],a.x=1,b.x=2,+c.y=3]", 60) == \
        "e[limit=5,a.x=1,b.x=2,y=3]"
    # which strategies a job runs is not part of any one run (its strategy is `.om`): `run_strategies=_om_` is gone
    assert short_experiment("e[run_strategies=[om],m.message_tokens=1]") == "e[message_tokens=1]"
    assert short_experiment("e[dataset=longmemeval_s]") == "e"
    assert short_experiment("quick") == "quick"
    new = new_run_name("om-abc", LONG, "om", "longmemeval_s", 60)
    old = run_name("om-abc", LONG, "om", "longmemeval_s", 60)
    assert new == "om_threshold_sweep_message_tokens=10000,observation_tokens=20000.om@longmemeval_s.n60-" + new[-6:]
    assert len(new) < 100 < 170 < len(old) and new[-6:] == old[-6:]  # same run key: same hash


def test_new_runs_get_the_short_name_and_stored_runs_keep_theirs(tmp_path) -> None:
    from bench.runner.app import run_job
    from tests.helpers.runner import compose_cfg

    # as app.run_job names a sweep job (`<experiment>[<its overrides>]`)
    sweep = "experiment_name='quick[dataset=synthetic,dataset.limit=2,strategies.oracle.params.x.top=1]'"
    args = ("dataset=synthetic", "dataset.limit=2", "run_strategies=[oracle,full_context]", sweep)
    keys = [o.run_key for o in run_job(compose_cfg(tmp_path, *args))]
    db = tmp_path / "bench.duckdb"

    def names() -> dict[str, str]:
        con = duckdb.connect(str(db), read_only=True)
        try:
            rows = con.execute("SELECT run_key, name, strategy, dataset_split, dataset_name, extra FROM runs").fetchall()
        finally:
            con.close()
        cols = ["run_key", "name", "strategy", "dataset_split", "dataset_name", "extra"]
        return {r[0]: name_of(dict(zip(cols, r))) for r in rows}

    first = names()
    assert first[keys[0]].startswith("quick_top=1.oracle@synthetic.n2-")  # dataset and limit said by @ and .n2
    # stored by older code: the long form in one run, no name at all (derived) in the other
    con = duckdb.connect(str(db))
    long_name = run_name(keys[0], "quick[dataset=synthetic,dataset.limit=2,x=1]", "oracle", "synthetic", 2)
    for key, change in ((keys[0], {"run_name": long_name}), (keys[1], None)):
        extra = json.loads(con.execute("SELECT extra FROM runs WHERE run_key = ?", [key]).fetchone()[0])
        extra.pop("run_name")
        if change:
            extra.update(change)
        con.execute("UPDATE runs SET extra = ?, name = 'older-experiment-name' WHERE run_key = ?",
                    [json.dumps(extra), key])
    con.close()
    before = names()
    assert before[keys[0]] == long_name and before[keys[1]].startswith("older-experiment-name.full_context@")
    run_job(compose_cfg(tmp_path, *args))  # written again (nothing to compute): the manifest is upserted
    assert names() == before


def test_a_subset_of_a_dataset_label_ending_in_punctuation_has_no_stray_underscore() -> None:
    """`S (cleaned)` with a 30-question subset: `@S_cleaned.n30-...` (was `@S_cleaned_.n30-...`)."""
    from bench.store.run_names import run_name

    name = run_name("k" * 16, "longmemeval_s-offline", "om", "S (cleaned)", 30)
    assert "@S_cleaned.n30-" in name and "_." not in name
