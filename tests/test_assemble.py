"""The job is assembled once: one validated config becomes the benchmark, the replay settings, the strategies
resolved from their declarations (OM's engine config built once), the judge templates (resolved once), the
cache simulators and the gateway config, and every reader of the job uses those objects."""

from __future__ import annotations

import pytest

from bench.assemble import assemble
from bench.errors import ConfigError
from bench.roles import Role
from tests.helpers.runner import compose_cfg


def test_a_job_holds_every_resolved_object(tmp_path) -> None:
    job = assemble(compose_cfg(tmp_path, "experiment=quick", "run_strategies=[om,full_context]"))
    assert list(job.strategies) == ["om", "full_context"]
    om = job.spec("om")
    assert om.resolved.observation.message_tokens == 2000  # the synthetic dataset's scaled threshold
    assert om.resolved.observation.model == job.role_model(Role.OBSERVER) == "offline/observer"
    assert job.benchmark.name == "longmemeval" and job.settings.benchmark == "longmemeval"
    assert job.judge.templates is job.judge.templates  # resolved once
    assert set(job.cache.make_sims()) == set(job.cfg.cachesim.profiles)
    assert job.gateway_config.role_model("judge").model == "offline/judge"
    with pytest.raises(ConfigError, match="not one this job runs"):
        job.spec("rag")


def test_the_offline_job_resolves_for_the_models_it_calls(tmp_path) -> None:
    job = assemble(compose_cfg(tmp_path, "experiment=mastra_gpt4o", "judge.source=builtin", "run_strategies=[om]"))
    assert "gemini" in job.spec("om").resolved.observation.model
    off = job.offline()
    assert off.role_model(Role.OBSERVER) == "offline/observer" == off.spec("om").resolved.observation.model
    # the checkpoint key reads the params as spelled, not the models the engine was resolved for
    assert off.spec("om").key_params() == job.spec("om").key_params()


@pytest.mark.slow  # a run through run_job (DuckDB, the offline engine)
def test_a_run_builds_the_engine_config_and_the_judge_templates_once(tmp_path, monkeypatch) -> None:
    from bench.benchmarks.longmemeval import judge_templates
    from bench.runner.app import run_job
    from om_core.config import OMConfig

    built = {"om": 0, "templates": 0}
    real_from_dict, real_resolve = OMConfig.from_dict.__func__, judge_templates.resolve_templates  # type: ignore[attr-defined]

    def from_dict(cls, data):  # type: ignore[no-untyped-def]
        built["om"] += 1
        return real_from_dict(cls, data)

    def resolve(*args, **kwargs):  # type: ignore[no-untyped-def]
        built["templates"] += 1
        return real_resolve(*args, **kwargs)

    monkeypatch.setattr(OMConfig, "from_dict", classmethod(from_dict))
    monkeypatch.setattr(judge_templates, "resolve_templates", resolve)
    run_job(compose_cfg(tmp_path, "experiment=quick", "run_strategies=[om]", "dataset.limit=3", "output.report=false",
                        "run.progress=off"))
    assert built == {"om": 1, "templates": 1}


def test_loading_shows_a_spinner_naming_the_data_on_a_terminal_only(tmp_path, monkeypatch, capfd) -> None:
    """Reading M takes minutes: on a terminal stderr says what is loading (rich's status, cleared after);
    piped, nothing is added to stderr."""
    from rich.console import Console

    from bench.assemble import load_data
    from bench.config import validate

    cfg = validate(compose_cfg(tmp_path, "dataset.limit=2"))
    load_data(cfg)
    assert "loading" not in capfd.readouterr().err
    monkeypatch.setattr(Console, "is_terminal", property(lambda self: True))
    ds = load_data(cfg)
    assert len(ds) == 2
    assert "loading and validating " in capfd.readouterr().err
