"""Before a run, self-hosted servers are asked what they serve and how large their context window is: a job whose
calls cannot fit fails at once with one line naming the setting; the served model joins the run key, so swapping
the model behind a name starts a new run instead of reusing the old results. Against the fake server playing
llama.cpp or vLLM; `ombench run` accepts `gateway.api_base.openai=URL` as typed."""

from __future__ import annotations

import pytest

from bench.cli.run import open_mapping_overrides
from bench.config import validate
from bench.errors import UserError
from bench.roles import Role
from bench.runner.keys import run_key
from bench.runner.local_servers import call_sizes, check_endpoints, check_local_servers, probe_endpoints
from tests.helpers.fakeserver import FakeOpenAIServer
from tests.helpers.runner import compose_cfg

MODEL = {"id": "qwen2.5-0.5b-instruct", "object": "model"}
PROPS = {"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1}


def local_cfg(tmp_path, server: FakeOpenAIServer, *extra: str):
    model = "openai/qwen2.5-0.5b-instruct"
    cfg = compose_cfg(tmp_path, "run_strategies=[om,full_context]", "strategies.om.params.message_tokens=1500",
                      "strategies.om.params.observation_tokens=2000",
                      *(f"model.{r}.model={model}" for r in ("actor", "observer", "reflector", "judge")),
                      f"+gateway.api_base.openai={server.base_url}", *extra)
    from omegaconf import OmegaConf

    return validate(OmegaConf.to_container(cfg, resolve=True))


def test_the_context_window_is_read_and_a_run_that_cannot_fit_is_refused(tmp_path):
    with FakeOpenAIServer(models=[MODEL], props=PROPS) as srv:
        cfg = local_cfg(tmp_path, srv)
        with pytest.raises(UserError) as err:  # the Actor's default window is 128,000 tokens
            check_local_servers(cfg)
        assert "model.actor_max_input_tokens" in str(err.value) and "8192-token window" in str(err.value)
        ok = local_cfg(tmp_path, srv, "model.actor_max_input_tokens=6000")
        warnings = check_local_servers(ok)
        eps = probe_endpoints(ok, [Role.ACTOR, Role.OBSERVER])
    assert eps[Role.OBSERVER].context_window == 8192 and eps[Role.OBSERVER].window_source == "server"
    assert eps[Role.OBSERVER].ratio_source == "margin"  # no /tokenize here
    assert all("actor" not in w.split(":")[0] for w in warnings)


def test_lowering_the_thresholds_is_what_the_error_asks_for(tmp_path):
    with FakeOpenAIServer(models=[MODEL], props={"default_generation_settings": {"n_ctx": 4096}}) as srv:
        cfg = local_cfg(tmp_path, srv, "model.actor_max_input_tokens=3600")
        eps = probe_endpoints(cfg, [Role.OBSERVER, Role.REFLECTOR])
        findings = check_endpoints(eps, call_sizes(cfg, ["om"]))
    errors = [m for level, m in findings if level == "error"]
    assert any(m.startswith("observer:") and "strategies.om.params.message_tokens" in m for m in errors)
    assert any(m.startswith("reflector:") and "strategies.om.params.observation_tokens" in m for m in errors)


def test_the_servers_tokenizer_and_a_configured_window(tmp_path):
    def two_per_word(text: str) -> list[int]:
        return list(range(2 * len(text.split())))

    with FakeOpenAIServer(models=[MODEL], tokenizer=two_per_word) as srv:  # no /props: the window is configured
        cfg = local_cfg(tmp_path, srv, "model.actor_max_input_tokens=3600", "+gateway.context_window.openai=32768")
        ep = probe_endpoints(cfg, [Role.OBSERVER])[Role.OBSERVER]
    assert ep.window_source == "config" and ep.context_window == 32768 and ep.ratio_source == "tokenize"
    assert ep.ratio > 1.0  # two tokens per word: more than o200k needs
    with FakeOpenAIServer(models=[MODEL]) as srv:  # a window nobody states: a warning that says what to set
        cfg = local_cfg(tmp_path, srv, "model.actor_max_input_tokens=3600")
        warnings = check_local_servers(cfg)
    assert any("gateway.context_window" in w for w in warnings)


def test_the_served_model_and_the_server_join_the_run_key(tmp_path):
    import asyncio

    from bench.runner.experiment import make_gateway, served_endpoints

    def key_of(srv: FakeOpenAIServer) -> str:
        cfg = local_cfg(tmp_path, srv, "model.actor_max_input_tokens=6000")
        gw = make_gateway(cfg)
        eps = asyncio.run(served_endpoints(gw, {Role.ACTOR, Role.JUDGE}))
        return run_key(cfg, "full_context", "sha", None, eps)

    with FakeOpenAIServer(models=[MODEL], props=PROPS) as srv:
        first, again = key_of(srv), key_of(srv)
        srv.models = [{**MODEL, "meta": {"size": 986000000}}]  # another model file behind the same name
        swapped = key_of(srv)
    assert first == again and swapped != first


def test_api_base_overrides_work_as_typed():
    args = ["gateway.api_base.openai=http://127.0.0.1:8080/v1", "gateway.api_base={actor: http://h/v1}",
            "+gateway.rpm.openai=5", "gateway.timeout_s=5", "model.actor.model=openai/x"]
    assert open_mapping_overrides(args) == [
        "++gateway.api_base.openai=http://127.0.0.1:8080/v1", "++gateway.api_base={actor: http://h/v1}",
        "+gateway.rpm.openai=5", "gateway.timeout_s=5", "model.actor.model=openai/x"]


@pytest.mark.slow  # three whole runs through litellm HTTP
def test_swapping_the_model_behind_a_name_computes_a_new_run(tmp_path, monkeypatch):
    from bench.runner.app import run_job

    monkeypatch.setenv("OPENAI_API_KEY", "local")
    with FakeOpenAIServer(lambda body: "yes", models=[MODEL], props=PROPS) as srv:
        args = ("dataset.limit=2", "run_strategies=[full_context]", "model.actor_max_input_tokens=6000",
                "model.actor.model=openai/qwen2.5-0.5b-instruct", "model.judge.model=openai/qwen2.5-0.5b-instruct",
                f"+gateway.api_base.openai={srv.base_url}")
        first = run_job(compose_cfg(tmp_path, *args))
        again = run_job(compose_cfg(tmp_path, *args))
        srv.models = [{**MODEL, "meta": {"size": 986000000}}]
        swapped = run_job(compose_cfg(tmp_path, *args))
    assert first[0].computed == 2 and again[0].computed == 0 and again[0].run_key == first[0].run_key
    assert swapped[0].run_key != first[0].run_key and swapped[0].computed == 2
    assert srv.stats.chat_requests == 8  # two questions x (answer + judge), twice: nothing replayed from the cache


def test_a_server_that_does_not_answer_is_a_preflight_error(tmp_path):
    """A local api_base where nothing listens (the server not started, a wrong port) is one line before any question,
    not a run whose every question fails after its retries."""
    with FakeOpenAIServer(models=[MODEL], props=PROPS) as srv:
        url = srv.base_url
    cfg = local_cfg(tmp_path, type("Gone", (), {"base_url": url})(), "model.actor_max_input_tokens=6000")
    with pytest.raises(UserError) as err:
        check_local_servers(cfg)
    [line] = str(err.value).splitlines()  # one line for the server, naming every role it serves
    assert f"nothing answers at {url}" in line and "gateway.api_base" in line and "actor" in line.split(":")[0]


@pytest.mark.parametrize("extra", ["judge.panel=[openai/panel-judge,offline/evaluator]",
                                   "judge.second_model=openai/second-judge"])
def test_a_panel_or_second_judges_server_that_does_not_answer_is_a_preflight_error(tmp_path, extra):
    """judge.panel's members and judge.second_model on a local server are probed like the main judge (was: not
    probed; every panel call failed after its retries)."""
    with FakeOpenAIServer(models=[MODEL], props=PROPS) as srv:
        url = srv.base_url
    cfg = validate_plain(compose_cfg(tmp_path, "run_strategies=[oracle]", "model.judge.model=offline/judge", extra,
                                     f"+gateway.api_base.openai={url}"))
    with pytest.raises(UserError) as err:
        check_local_servers(cfg)
    [line] = str(err.value).splitlines()
    assert f"nothing answers at {url}" in line and line.split(":")[0] in ("panel_judge_1", "second_judge"), line


def validate_plain(cfg):
    from omegaconf import OmegaConf

    return validate(OmegaConf.to_container(cfg, resolve=True))
