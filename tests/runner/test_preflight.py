"""The preflight: missing keys, context windows past the models', unknown prices, the official judge file;
one line per problem, before any data is loaded or any result written."""

from __future__ import annotations

import pytest

from bench.assemble import assemble
from bench.errors import ConfigError
from bench.roles import Role
from bench.runner.app import run_job
from bench.runner.preflight import (CHECKS, Finding, PreflightError, build_context, preflight, register_check,
                                    run_checks)
from tests.helpers.runner import compose_cfg

KEYS = ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "ANTHROPIC_API_KEY")


@pytest.fixture
def no_keys(monkeypatch):
    for k in KEYS:
        monkeypatch.delenv(k, raising=False)


def _root(tmp_path, *overrides):
    return assemble(compose_cfg(tmp_path, *overrides))  # validated, every strategy resolved once


def test_offline_models_need_nothing(tmp_path, no_keys) -> None:
    assert [f for f in run_checks(build_context(_root(tmp_path))) if f.level == "error"] == []


def test_missing_keys_one_line_per_variable_naming_role_model_and_variable(tmp_path, no_keys) -> None:
    root = _root(tmp_path, "experiment=mastra_gpt4o", "judge.source=builtin")
    with pytest.raises(PreflightError) as err:
        preflight(root)
    lines = str(err.value).splitlines()
    assert len(lines) == 2
    openai = next(ln for ln in lines if "OPENAI_API_KEY" in ln)
    assert openai.startswith("actor model openai/gpt-4o-2024-08-06 needs an API key: set OPENAI_API_KEY")
    assert "judge (openai/gpt-4o-2024-08-06)" in openai
    gemini = next(ln for ln in lines if "GEMINI_API_KEY" in ln)
    assert gemini.startswith("observer model gemini/gemini-2.5-flash needs an API key: set GEMINI_API_KEY or GOOGLE_API_KEY")


def test_keys_present_pass_and_only_called_roles_are_checked(tmp_path, no_keys, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-x")
    # full_context calls no memory model: the gemini observer/reflector of model=gpt-4o are not needed
    root = _root(tmp_path, "model=gpt-4o", "run_strategies=[full_context]", "dataset=longmemeval_s")
    ctx = build_context(root)
    assert set(ctx.roles) == {Role.ACTOR, Role.JUDGE}
    assert [f for f in run_checks(ctx) if f.level == "error"] == []
    om = build_context(_root(tmp_path, "model=gpt-4o", "run_strategies=[om]", "dataset=longmemeval_s"))
    assert {Role.OBSERVER, Role.REFLECTOR} <= set(om.roles)
    assert any("GEMINI_API_KEY" in f.message for f in run_checks(om, ["credentials"]))


def test_api_key_env_and_local_base_url(tmp_path, no_keys, monkeypatch) -> None:
    base = ("model.actor.model=openai/my-local-llm", "model.judge.model=offline/judge", "run_strategies=[oracle]")
    # a local server behind gateway.api_base needs no key; a remote proxy needs its provider's
    ctx = build_context(_root(tmp_path, *base, "+gateway.api_base.actor=http://127.0.0.1:8000/v1"))
    assert list(run_checks(ctx, ["credentials"])) == []
    remote = build_context(_root(tmp_path, *base, "+gateway.api_base.actor=https://llm-proxy.example.com/v1"))
    (f,) = run_checks(remote, ["credentials"])
    assert "set OPENAI_API_KEY" in f.message
    # ... unless gateway.api_key_env names the variable holding one
    ctx = build_context(_root(tmp_path, *base, "+gateway.api_base.actor=http://127.0.0.1:8000/v1",
                              "+gateway.api_key_env.actor=MY_LLM_KEY"))
    (f,) = run_checks(ctx, ["credentials"])
    assert f.message.startswith("gateway.api_key_env.actor=MY_LLM_KEY names an unset environment variable (actor): "
                                "export MY_LLM_KEY=<key>")
    monkeypatch.setenv("MY_LLM_KEY", "k")
    assert list(run_checks(ctx, ["credentials"])) == []
    # a password in a remote base URL is the key: nothing else is needed
    creds = build_context(_root(tmp_path, *base, "+gateway.api_base.actor=https://u:pw-123456@llm-proxy.example.com/v1"))
    assert list(run_checks(creds, ["credentials"])) == []


def test_api_key_env_is_checked_for_in_process_roles_too(tmp_path, no_keys) -> None:
    # the gateway reads the named variable for every call of the role, the offline engine's included
    ctx = build_context(_root(tmp_path, "run_strategies=[oracle]", "+gateway.api_key_env.judge=OMBENCH_TEST_NO_SUCH_VAR"))
    (f,) = run_checks(ctx, ["credentials"])
    assert f.message.startswith("gateway.api_key_env.judge=OMBENCH_TEST_NO_SUCH_VAR names an unset environment variable")


def test_dry_run_needs_no_keys(tmp_path, no_keys) -> None:
    root = _root(tmp_path, "experiment=mastra_gpt4o", "judge.source=builtin")
    assert [f for f in preflight(root, dry_run=True) if f.level == "error"] == []


def test_context_windows(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-x")
    monkeypatch.setenv("GEMINI_API_KEY", "g-test-x")
    ok = _root(tmp_path, "experiment=mastra_gpt4o", "judge.source=builtin")
    assert run_checks(build_context(ok), ["context_windows"]) == []
    big = _root(tmp_path, "experiment=mastra_gpt4o", "judge.source=builtin", "model.actor_max_input_tokens=200000")
    (f,) = run_checks(build_context(big), ["context_windows"])
    assert f.level == "error" and "model.actor_max_input_tokens=200,000 exceeds" in f.message and "128,000" in f.message
    # OM's Actor holds observations and the unobserved tail: 100k + 80k (Mastra's preset) does not fit the configured 128k window
    # (refused with the config) nor gpt-4o's 128k (refused by the preflight, when the configured window is larger)
    with pytest.raises(ConfigError, match=r"model.actor_max_input_tokens=128,000\); lower them"):
        _root(tmp_path, "experiment=mastra_gpt4o", "judge.source=builtin", "strategies.om.params.message_tokens=100000")
    om = _root(tmp_path, "experiment=mastra_gpt4o", "judge.source=builtin", "strategies.om.params.message_tokens=100000",
               "model.actor_max_input_tokens=200000")
    found = [f.message for f in run_checks(build_context(om), ["context_windows"])]
    assert "strategies.om: each actor call carries at least 180,000 tokens, more than the context window of " \
           "openai/gpt-4o-2024-08-06 (128,000); lower the strategy's thresholds or pick a larger model" in found


def test_unknown_models_warn_on_window_and_price(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-x")
    root = _root(tmp_path, "model.actor.model=openai/no-such-model-x", "run_strategies=[full_context]")
    found = run_checks(build_context(root), ["context_windows", "prices"])
    assert [f.level for f in found] == ["warning", "warning"]
    assert "context window of actor openai/no-such-model-x" in found[0].message
    assert "no price" in found[1].message and "openai/no-such-model-x" in found[1].message


def test_official_judge_file_is_checked_and_network_checks_wait_for_the_others(tmp_path, no_keys) -> None:
    root = _root(tmp_path, "judge.source=official")  # offline models; no checkout, no cache, no network
    (f,) = run_checks(build_context(root))
    assert f.check == "judge_templates" and "judge.official_repo=PATH" in f.message
    failing = _root(tmp_path, "judge.source=official", "model.actor.model=openai/gpt-4o-2024-08-06",
                    "run_strategies=[oracle]")
    assert [f.check for f in run_checks(build_context(failing)) if f.level == "error"] == ["credentials"]


def test_a_registered_check_runs(tmp_path) -> None:
    def count_roles(ctx):
        yield Finding("custom", "warning", f"{len(ctx.roles)} roles checked")

    register_check("custom", count_roles)
    try:
        found = run_checks(build_context(_root(tmp_path, "run_strategies=[oracle]")))
        assert Finding("custom", "warning", "2 roles checked") in found
    finally:
        CHECKS.unregister("custom")


def test_a_failed_preflight_writes_nothing(tmp_path, no_keys) -> None:
    cfg = compose_cfg(tmp_path, "model.actor.model=openai/gpt-4o-2024-08-06", "run_strategies=[oracle]",
                      "dataset=longmemeval_oracle", "dataset.data_dir=/nonexistent/folder")
    with pytest.raises(PreflightError, match="set OPENAI_API_KEY"):  # not the missing data folder: it comes first
        run_job(cfg)
    assert list(tmp_path.iterdir()) == []  # no results file, no response cache, no checkpoints
    # skipping it reaches the next problem
    with pytest.raises(Exception, match="longmemeval_oracle"):
        run_job(compose_cfg(tmp_path, "model.actor.model=openai/gpt-4o-2024-08-06", "run_strategies=[oracle]",
                            "dataset=longmemeval_oracle", "dataset.data_dir=/nonexistent/folder",
                            "run.preflight=false"))


def test_an_unprefixed_model_is_looked_up_under_the_provider_the_gateway_routes_it_to(tmp_path, no_keys,
                                                                                      monkeypatch) -> None:
    # litellm routes a bare claude name to anthropic; so do the gateway's api_key_env / api_base look-ups, and
    # the preflight must read the same entry (it once guessed "openai" for every name without a prefix)
    monkeypatch.delenv("MY_ANTHROPIC", raising=False)
    root = _root(tmp_path, "model.actor.model=claude-sonnet-4-5", "+gateway.api_key_env.anthropic=MY_ANTHROPIC")
    from bench.gateway import provider_of

    ctx = build_context(root)
    assert ctx.provider("claude-sonnet-4-5") == provider_of("claude-sonnet-4-5") == "anthropic"
    errors = [f.message for f in run_checks(ctx, ["credentials"]) if f.level == "error"]
    assert any("gateway.api_key_env.anthropic=MY_ANTHROPIC" in m for m in errors), errors


def test_a_threshold_set_under_the_engines_spelling_is_checked_as_the_engine_resolves_it(tmp_path,
                                                                                         monkeypatch) -> None:
    # strategies.om.params.observation.message_tokens (past the Observer gemini-2.5-flash window) is what OMConfig reads (it wins over the flat
    # message_tokens): the strategy's own check and the preflight's window check read the resolved engine config,
    # not the flat default of 30000 (they once did, and let this run)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-x")
    monkeypatch.setenv("GEMINI_API_KEY", "g-test-x")
    base = ("experiment=mastra_gpt4o", "judge.source=builtin", "+strategies.om.params.observation.message_tokens=2000000")
    with pytest.raises(ConfigError, match=r"message_tokens \+ observation_tokens = 2,080,000 tokens"):
        _root(tmp_path, *base)
    job = _root(tmp_path, *base, "model.actor_max_input_tokens=3000000")
    assert job.spec("om").resolved.observation.message_tokens == 2_000_000
    found = [f.message for f in run_checks(build_context(job), ["context_windows"])]
    assert any("strategies.om: each observer call carries at least 2,000,000 tokens" in m for m in found), found


@pytest.mark.parametrize("value", ["", "   "])
def test_a_set_but_empty_key_counts_as_missing(tmp_path, no_keys, monkeypatch, value: str) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", value)
    root = _root(tmp_path, "model=gpt-4o", "run_strategies=[full_context]", "dataset=longmemeval_s")
    errors = [f.message for f in run_checks(build_context(root), ["credentials"]) if f.level == "error"]
    assert len(errors) == 1 and "set OPENAI_API_KEY" in errors[0]


def test_a_gateway_setting_that_applies_to_no_called_role_is_warned(tmp_path, no_keys) -> None:
    root = _root(tmp_path, "++gateway.api_key_env.openai=MY_OPENAI_KEY")  # offline models: nothing reads it
    findings = list(run_checks(build_context(root), ["credentials"]))
    assert [f.level for f in findings] == ["warning"]
    assert "gateway.api_key_env.openai applies to no role" in findings[0].message


def test_a_timeout_that_applies_to_no_role_because_every_role_is_local_is_warned(tmp_path, no_keys) -> None:
    base = ("model.actor.model=openai/my-local-llm", "model.judge.model=offline/judge", "run_strategies=[oracle]",
            "+gateway.api_base.actor=http://127.0.0.1:8000/v1")
    ctx = build_context(_root(tmp_path, *base, "gateway.timeout_s=30"))
    (f,) = run_checks(ctx, ["credentials"])
    assert f.level == "warning" and "gateway.timeout_s=30 applies to no role" in f.message
    assert "gateway.local_timeout_s=600 wins" in f.message and "local_timeout_s=null" in f.message
    # null: timeout_s applies to the local server as well, nothing to warn about
    ctx = build_context(_root(tmp_path, *base, "gateway.timeout_s=30", "gateway.local_timeout_s=null"))
    assert list(run_checks(ctx, ["credentials"])) == []
    # a remote role reads timeout_s
    remote = build_context(_root(tmp_path, *base[:3], "+gateway.api_base.actor=https://u:pw-1234@llm.example.com/v1",
                                 "gateway.timeout_s=30"))
    assert list(run_checks(remote, ["credentials"])) == []


@pytest.mark.parametrize("extra", [["judge.panel=[openai/gpt-4o-2024-08-06,anthropic/claude-sonnet-4-5]"],
                                   ["judge.second_model=anthropic/claude-sonnet-4-5"]])
def test_panel_judges_and_the_second_judge_have_their_keys_checked(tmp_path, no_keys, monkeypatch, extra) -> None:
    """judge.panel's members and judge.second_model are called like the main judge: a missing key is a preflight
    error naming the judge's role and model (was: every panel call failed after the run started)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-x")
    root = _root(tmp_path, "model.judge.model=offline/judge", "run_strategies=[oracle]", *extra)
    with pytest.raises(PreflightError) as err:
        preflight(root)
    lines = str(err.value).splitlines()
    assert len(lines) == 1 and "anthropic/claude-sonnet-4-5 needs an API key: set ANTHROPIC_API_KEY" in lines[0]
    assert lines[0].startswith(("panel_judge_2 model", "second_judge model")), lines
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-x")
    assert [f for f in run_checks(build_context(root)) if f.level == "error"] == []


def test_an_unset_api_key_env_of_a_panel_judge_is_an_error(tmp_path, no_keys) -> None:
    root = _root(tmp_path, "model.judge.model=offline/judge", "run_strategies=[oracle]",
                 "judge.panel=[offline/judge,offline/evaluator]", "+gateway.api_key_env.panel_judge_1=OMBENCH_TEST_NO_VAR")
    errors = [f for f in run_checks(build_context(root), ["credentials"]) if f.level == "error"]
    assert len(errors) == 1 and errors[0].message.startswith(
        "gateway.api_key_env.panel_judge_1=OMBENCH_TEST_NO_VAR names an unset environment variable (panel_judge_1)")
