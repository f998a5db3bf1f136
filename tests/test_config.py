"""The Hydra tree composes, every experiment validates, and bad values fail with a one-line message."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir

from bench.cli.run import config_dir
from bench.config import validate
from bench.errors import ConfigError
from bench.runner.keys import ingest_key, run_key
from tests.helpers.official import make_checkout

EXPERIMENTS = ["quick", "mastra_gpt4o", "mastra_gpt5mini", "baselines_gpt4o", "om_threshold_sweep"]


def _compose(overrides: list[str]):
    with initialize_config_dir(config_dir=config_dir(), version_base="1.3"):
        return compose(config_name="config", overrides=overrides)


@pytest.mark.parametrize("exp", EXPERIMENTS)
def test_every_experiment_composes_and_validates(exp: str) -> None:
    root = validate(_compose([f"experiment={exp}"]))
    assert root.experiment_name == exp
    assert set(root.run_strategies) <= set(root.strategies)


def test_mastra_presets_are_faithful(tmp_path) -> None:
    repo = make_checkout(tmp_path / "LongMemEval")
    r5 = validate(_compose(["experiment=mastra_gpt5mini", f"judge.official_repo={repo}"]))
    r4 = validate(_compose(["experiment=mastra_gpt4o", f"judge.official_repo={repo}"]))
    for r in (r4, r5):
        # the official judge text and parse rule; Mastra's two judge differences stay explicit options
        assert (r.judge.source, r.judge.parse, r.judge.ask_reason) == ("official", "official", False)
        assert r.dataset.name == "longmemeval_s"
        om = r.strategies["om"].params
        # the runner's ingestion thresholds: prepare.ts passes observationTokens 80000 (not the library default 40000)
        assert (om["profile"], om["scope"], om["message_tokens"], om["observation_tokens"]) == ("m11", "resource", 30000, 80000)
        assert "gemini-2.5-flash" in r.model.observer.model and "gemini-2.5-flash" in r.model.reflector.model
        assert r.model.observer.params["temperature"] == 0.3 and r.model.reflector.params["temperature"] == 0.0
        assert r.model.judge.model.endswith("gpt-4o-2024-08-06")
        # the runner's actor: no answer cap (run.ts sets no max tokens), temperature 0
        assert (r.answer.max_tokens, r.answer.temperature) == (None, 0.0)
    assert r5.model.actor.model.endswith("gpt-5-mini") and "gpt-4o" in r4.model.actor.model
    # ingest once, answer many: the two presets share the ingestion key but not the run key
    assert ingest_key(r4, "om", "sha") == ingest_key(r5, "om", "sha")
    assert run_key(r4, "om", "sha", None) != run_key(r5, "om", "sha", None)


def test_threshold_changes_ingestion_key() -> None:
    a = validate(_compose(["strategies.om.params.message_tokens=20000"]))
    b = validate(_compose([]))
    assert ingest_key(a, "om", "x") != ingest_key(b, "om", "x")
    assert run_key(b, "om", "x", None) == run_key(validate(_compose([])), "om", "x", None)


@pytest.mark.parametrize(
    "override, needle",
    [
        ("run.concurrency=0", "run.concurrency"),
        ("answer.method=guess", "answer.method"),
        ("run_strategies=[om,magic]", "magic"),
        ("judge.parse=lenient", "judge.parse"),
        ("dataset.stratified=0", "dataset.stratified"),
        ("run.concurrency=lots", "run.concurrency"),
        ("answer.retries=2", "e.g. answer.retries.max=2"),  # was OmegaConf's "int is not a subclass of RetriesCfg"
    ],
)
def test_bad_values_fail_with_one_line(override: str, needle: str) -> None:
    with pytest.raises(ConfigError) as err:
        validate(_compose([override]))
    msg = str(err.value)
    assert needle in msg and "\n" not in msg


def test_every_model_role_is_in_the_schema_and_in_every_model_file() -> None:
    # a role missing from a model file silently falls back to the schema's offline default: a real-model
    # experiment would call the offline engine for it
    from pathlib import Path

    import yaml

    from bench.config import ModelCfg
    from bench.roles import Role

    fields = set(ModelCfg.__dataclass_fields__)
    assert {r.value for r in Role} <= fields, f"add model.<role> to ModelCfg: {sorted({r.value for r in Role} - fields)}"
    for path in sorted((Path(config_dir()) / "model").glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        if path.read_text().startswith("# @package _global_"):  # a preset that sizes strategies too (model=local)
            data = data["model"]
        missing = {r.value for r in Role} - set(data)
        assert not missing, f"{path.name} names no model for {sorted(missing)}"


@pytest.mark.parametrize("content", [b'{"results": []}\n', b"not a database at all, just text\n"])
def test_output_db_of_another_kind_is_refused_before_anything_runs(tmp_path, content: bytes) -> None:
    existing = tmp_path / "results.json"
    existing.write_bytes(content)
    with pytest.raises(ConfigError) as err:
        validate(_compose([f"output.db={existing}"]))
    msg = str(err.value)
    assert str(existing) in msg and "not a DuckDB" in msg and "output.db=" in msg and "\n" not in msg
    assert existing.read_bytes() == content


def test_output_db_folder_is_refused(tmp_path) -> None:
    with pytest.raises(ConfigError, match="is a folder"):
        validate(_compose([f"output.db={tmp_path}"]))


def test_output_db_existing_duckdb_or_absent_is_accepted(tmp_path) -> None:
    import duckdb

    good = tmp_path / "ok.duckdb"
    duckdb.connect(str(good)).close()
    validate(_compose([f"output.db={good}"]))
    validate(_compose([f"output.db={tmp_path / 'new.duckdb'}"]))


@pytest.mark.parametrize("arg, ids", [
    ("dataset.ids=[1e043500,726462e0]", ["1e043500", "726462e0"]),
    ("dataset.ids=1e043500", ["1e043500"]),
    ("dataset.ids=['1e043500', abc_1]", ["1e043500", "abc_1"]),
    ("+dataset.ids=[00123]", ["00123"]),
])
def test_question_ids_are_read_as_typed_whatever_they_look_like(arg: str, ids: list[str]) -> None:
    from bench.cli.run import quote_string_overrides

    [quoted] = quote_string_overrides([arg])
    name, value = quoted.split("=", 1)
    root = validate(_compose([f"{name.lstrip('+')}={value}"]))
    assert root.dataset.ids == ids


def test_unknown_question_id_error_says_to_quote_it(tmp_path) -> None:
    from bench.assemble import assemble, load_data
    from bench.errors import DataError
    from tests.helpers.runner import compose_cfg

    with pytest.raises(DataError) as err:
        load_data(assemble(compose_cfg(tmp_path, "dataset.ids=[inf]")))
    assert "question inf" in str(err.value) and "quote ids" in str(err.value) and "\n" not in str(err.value)


def test_uncapped_answer_validates_and_keeps_a_reserve() -> None:
    from bench.config import UNCAPPED_RESERVE, answer_reserve

    r = validate(_compose(["answer.max_tokens=null"]))
    assert r.answer.max_tokens is None and answer_reserve(r.answer) == UNCAPPED_RESERVE
    capped = validate(_compose(["answer.max_tokens=123"]))
    assert answer_reserve(capped.answer) == 123
    # the cap is part of what decides an answer: capped and uncapped runs never share a run key
    assert run_key(r, "om", "x", None) != run_key(validate(_compose([])), "om", "x", None)
    with pytest.raises(ConfigError, match=r"answer.max_tokens=0"):
        validate(_compose(["answer.max_tokens=0"]))
