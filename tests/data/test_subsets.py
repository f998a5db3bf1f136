"""Small subsets that represent the dataset: `dataset.stratified=N` keeps the type proportions (seeded), and
`dataset.limit` says in one line when its first N questions miss question types (on the real files the first
40 are all temporal-reasoning)."""

from __future__ import annotations

from collections import Counter

import pytest

from bench.config import validate
from bench.data.dataset import stratified_quotas
from bench.benchmarks.longmemeval.loader import load_dataset
from bench.runner.experiment import load_data
from tests.helpers.runner import compose_cfg

ORACLE_COUNTS = {"multi-session": 133, "temporal-reasoning": 133, "knowledge-update": 78, "single-session-user": 70,
                 "single-session-assistant": 56, "single-session-preference": 30}


@pytest.mark.parametrize("n", [1, 5, 6, 7, 40, 100, 499, 500, 900])
def test_quotas_are_proportional_and_cover_every_type_when_they_can(n: int) -> None:
    q = stratified_quotas(ORACLE_COUNTS, n)
    assert sum(q.values()) == min(n, 500) and all(0 < q[t] <= ORACLE_COUNTS[t] for t in q)
    if n >= 6:
        assert set(q) == set(ORACLE_COUNTS)
    for t, k in q.items():  # within one question of the exact share (two when a type was lifted to one)
        assert abs(k - min(n, 500) * ORACLE_COUNTS[t] / 500) <= 2


def test_quotas_for_forty() -> None:
    # exact shares 10.64, 10.64, 6.24, 5.6, 4.48, 2.4: floors take 37, the three largest remainders one more each
    assert stratified_quotas(ORACLE_COUNTS, 40) == {"multi-session": 11, "temporal-reasoning": 11, "knowledge-update": 6,
                                                    "single-session-user": 6, "single-session-assistant": 4,
                                                    "single-session-preference": 2}


def test_stratified_subset_of_the_synthetic_sample_is_seeded() -> None:
    ds = load_dataset("synthetic")
    a, b = ds.subset(stratified=8, seed=3), ds.subset(stratified=8, seed=3)
    assert a.subset_ids == b.subset_ids and len(a) == 8 and len(a.type_counts()) == 6
    assert ds.subset(stratified=8, seed=4).subset_ids != a.subset_ids
    assert "stratified=8" in a.note and "seed=3" in a.note


def test_limit_warns_when_types_are_missing(tmp_path, capsys) -> None:
    load_data(validate(compose_cfg(tmp_path, "dataset.limit=2")))
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("ombench: warning: dataset.limit=2 keeps ")
    assert "dataset.stratified=N" in err and "official task average is nan" in err
    load_data(validate(compose_cfg(tmp_path, "dataset.stratified=6")))
    assert capsys.readouterr().err == ""  # all six types: nothing to say


def test_real_oracle_limit_and_stratified(tmp_path, capsys, real_data_dir) -> None:
    if not (real_data_dir / "longmemeval_oracle.json.xz").exists():
        pytest.skip("longmemeval_oracle.json.xz missing")
    ds = load_data(validate(compose_cfg(tmp_path, "dataset=longmemeval_oracle", "dataset.limit=40")))
    assert set(ds.type_counts()) == {"temporal-reasoning"}
    assert "keeps 1 of the 6 question types of longmemeval_oracle (temporal-reasoning)" in capsys.readouterr().err
    strat = load_data(validate(compose_cfg(tmp_path, "dataset=longmemeval_oracle", "dataset.stratified=40")))
    assert Counter(i.question_type for i in strat.instances) == Counter(stratified_quotas(ORACLE_COUNTS, 40))
    assert capsys.readouterr().err == ""
