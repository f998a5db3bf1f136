"""Non-retryable causes fail at once, whatever class litellm raises them under: a missing key reported as a
500 or a connection error, an exhausted quota reported as a 429, a model that does not exist."""

from __future__ import annotations

import pytest

from bench.gateway import Gateway, GatewayConfig, GatewayError, RoleModel
from bench.gateway.errors import RUN_FATAL_KINDS, classify, parse_error_text
from tests.helpers.fakeserver import FakeOpenAIServer
from bench.records import collect_calls


def _exc(cls_name: str, message: str, status: int | None = None) -> Exception:
    cls = type(cls_name, (Exception,), {})
    exc = cls(message)
    exc.status_code = status  # type: ignore[attr-defined]
    return exc


@pytest.mark.parametrize(
    ("cls", "status", "message", "kind"),
    [
        ("InternalServerError", 500, "OpenAIException - Missing credentials. Please pass an `api_key`", "auth"),
        ("APIConnectionError", 500, "Missing Gemini API key. Set the GEMINI_API_KEY", "auth"),
        ("RateLimitError", 429, "You exceeded your current quota, please check your plan and billing details", "quota"),
        ("BadRequestError", 400, "This model's maximum context length is 128000 tokens", "context_window"),
        ("NotFoundError", 404, "The model `gpt-9` does not exist or you do not have access to it.", "not_found"),
        ("APIError", 500, "error code: model_not_found", "not_found"),
        ("RateLimitError", 429, "Rate limit reached for requests per min", "rate_limit"),
        ("InternalServerError", 500, "The server had an error while processing your request", "server"),
    ],
)
def test_kinds(cls: str, status: int, message: str, kind: str) -> None:
    info = classify(_exc(cls, message, status))
    assert info.kind == kind
    assert info.retryable == (kind in {"rate_limit", "server"})


async def test_missing_key_is_not_retried_and_reaches_no_server(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeOpenAIServer() as server:  # a remote-looking base URL (a proxy): the provider's key is required
        remote = server.base_url.replace("127.0.0.1", "localtest.invalid")
        gw = Gateway(GatewayConfig(roles={"actor": RoleModel("openai/gpt-4o-2024-08-06")}, cache_policy="off",
                                   cache_path=None, api_base={"openai": remote}, max_attempts=6,
                                   backoff_base_s=5.0))
        with collect_calls() as calls, pytest.raises(GatewayError) as err:
            await gw.model("actor").complete([{"role": "user", "content": "hi"}])
        await gw.aclose()
        assert server.stats.requests == 0
    assert err.value.kind == "auth" and err.value.attempts == 1
    assert len(calls) == 1 and calls[0].retries == 0 and calls[0].error.startswith("auth: ")


def test_stored_error_text_parses_back() -> None:
    assert parse_error_text("answer: auth: litellm.AuthenticationError: bad key") == \
        ("answer", "auth", "litellm.AuthenticationError: bad key")
    assert parse_error_text("judge: server: gave up after 6 attempts: boom")[:2] == ("judge", "server")
    assert parse_error_text("answer: something odd")[1] == "unknown"
    assert {"auth", "quota", "not_found"} == RUN_FATAL_KINDS


async def test_a_self_hosted_server_needs_no_key(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeOpenAIServer(lambda body: "fine") as server:  # on 127.0.0.1: a self-hosted server
        gw = Gateway(GatewayConfig(roles={"actor": RoleModel("openai/my-local-llm")}, cache_policy="off",
                                   cache_path=None, api_base={"openai": server.base_url}))
        got = await gw.model("actor").complete([{"role": "user", "content": "hi"}])
        await gw.aclose()
    assert got.text == "fine"
