"""Retries, fault tolerance and errors through litellm's real HTTP path to the fake server."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from bench.errors import ConfigError
from bench.gateway import Gateway, GatewayError
from bench.records import CallRecord, collect_calls
from tests.helpers.fakeserver import FakeOpenAIServer
from tests.helpers.gateway import API_KEY, gateway_config

N_CALLS = 200
WORKERS = 16


def msgs(i: int) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You are terse."}, {"role": "user", "content": f"question number {i}"}]


async def run_batch(gw: Gateway, n: int = N_CALLS) -> tuple[list[str], list[CallRecord]]:
    """n calls through a bounded pool of workers (never an unbounded gather)."""
    out: list[str] = [""] * n
    model = gw.model("actor")
    queue = list(range(n))

    async def worker() -> None:
        while queue:
            i = queue.pop()
            out[i] = (await model.complete(msgs(i))).text

    with collect_calls() as records:
        await asyncio.gather(*(worker() for _ in range(WORKERS)))
    return out, records


@pytest.mark.slow  # hundreds of calls over HTTP with injected faults and backoffs
async def test_faulty_run_equals_clean_run_then_second_run_is_all_cache(tmp_path: Path) -> None:
    with FakeOpenAIServer() as clean_srv:
        clean = Gateway(gateway_config(clean_srv, None))
        expected, _ = await run_batch(clean)
        await clean.aclose()
        assert clean_srv.stats.requests == N_CALLS

    with FakeOpenAIServer(fault_rate=0.2, seed=11, retry_after_s=0.01, hang_s=5.0) as srv:
        gw = Gateway(gateway_config(srv, tmp_path, max_attempts=10, timeout_s=0.3, aimd_grow_after=5))
        got, records = await run_batch(gw)
        assert got == expected
        assert len(records) == N_CALLS and all(r.error is None for r in records)
        faults = sum(srv.stats.faults.values())
        assert faults > 0 and set(srv.stats.faults) >= {"429", "500", "malformed", "timeout"}
        assert sum(r.retries for r in records) == faults  # every fault cost exactly one retry
        assert srv.stats.requests == N_CALLS + faults
        assert srv.stats.max_in_flight <= 16

        # second identical run: entirely from the response cache, nothing reaches the server
        before = srv.stats.requests
        again, records2 = await run_batch(gw)
        assert again == expected
        assert srv.stats.requests == before
        assert all(r.response_cache_hit and r.retries == 0 for r in records2)
        await gw.aclose()


async def test_unauthorised_call_fails_alone_with_its_error_recorded(make_gateway, fake_server, calls) -> None:
    victim = msgs(3)

    def schedule(index: int, body: dict[str, Any]) -> str | None:
        return "401" if body["messages"] == victim else None

    fake_server.schedule = schedule
    gw = make_gateway()
    model = gw.model("actor")
    results = await asyncio.gather(*(model.complete(msgs(i)) for i in range(6)), return_exceptions=True)
    errors = [r for r in results if isinstance(r, BaseException)]
    assert len(errors) == 1 and isinstance(errors[0], GatewayError)
    assert errors[0].kind == "auth" and not errors[0].retryable
    assert results[3] is errors[0]
    assert fake_server.stats.requests == 6  # no retry of the 401
    failed = [c for c in calls if c.error]
    assert len(failed) == 1 and "Incorrect API key provided" in (failed[0].error or "")
    assert failed[0].messages == victim and failed[0].retries == 0
    assert all(API_KEY not in (c.error or "") for c in calls)
    assert gw.cache is not None and gw.cache.count() == 5  # the error was not cached


@pytest.mark.parametrize(("fault", "kind"), [("400", "bad_request"), ("context", "context_window")])
async def test_non_retryable_errors_raise_at_once(make_gateway, fake_server, calls, fault: str, kind: str) -> None:
    fake_server.schedule = [fault]
    gw = make_gateway()
    with pytest.raises(GatewayError) as ei:
        await gw.model("actor").complete(msgs(0))
    assert ei.value.kind == kind and ei.value.attempts == 1
    assert fake_server.stats.requests == 1
    assert calls[0].error and kind in calls[0].error


async def test_attempts_are_bounded(make_gateway, fake_server, calls) -> None:
    fake_server.schedule = lambda i, body: "500"
    gw = make_gateway(max_attempts=3)
    with pytest.raises(GatewayError) as ei:
        await gw.model("actor").complete(msgs(0))
    assert ei.value.kind == "server" and ei.value.attempts == 3 and "gave up after 3 attempts" in str(ei.value)
    assert fake_server.stats.requests == 3
    assert calls[0].retries == 2 and calls[0].error


@pytest.mark.parametrize("fault", ["500", "429", "timeout"])
@pytest.mark.parametrize("kind", ["chat", "embed"])
async def test_every_http_attempt_is_the_gateways_own(make_gateway, fake_server, calls, fault: str,
                                                      kind: str) -> None:
    """No SDK retries behind the gateway's back, for chat and embeddings alike (litellm's OpenAI embedding path
    once turned max_retries=0 into its default of 2): one attempt allowed, one request made; three allowed, the
    server sees exactly the attempts the call records."""
    call = (lambda gw: gw.embed(["a text"])) if kind == "embed" else (lambda gw: gw.model("actor").complete(msgs(0)))
    await call(make_gateway(tmp=None))  # warm: the server's first answer loads its tokenizer
    fake_server.reset_stats()
    fake_server.schedule = lambda i, body: fault
    fake_server.retry_after_s = 0.01
    fake_server.hang_s = 1.0
    with pytest.raises(GatewayError):
        await call(make_gateway(max_attempts=1, timeout_s=0.3, tmp=None))
    assert fake_server.stats.requests == 1 and calls[-1].retries == 0

    fake_server.reset_stats()
    fake_server.schedule = {0: fault, 1: fault}  # two faults, then an answer
    await call(make_gateway(max_attempts=3, timeout_s=0.3, tmp=None))
    assert fake_server.stats.requests == 3 and calls[-1].retries == 2 and calls[-1].error is None


async def test_retry_after_pauses_the_provider_and_the_call_succeeds(make_gateway, fake_server, calls) -> None:
    fake_server.schedule = ["429", "429"]
    fake_server.retry_after_s = 0.05
    gw = make_gateway()
    out = await gw.model("actor").complete(msgs(1))
    assert out.meta["retries"] == 2 and out.text.startswith("echo")
    stats = gw.provider_stats()["openai"]
    assert stats["rate_limited"] == 2 and stats["pauses"] >= 1
    assert stats["cuts"] >= 1 and stats["concurrency_limit"] < 16  # AIMD cut on 429


async def test_params_merge_and_gateway_params_never_reach_the_provider(fake_server, tmp_path: Path,
                                                                       calls: list[CallRecord]) -> None:
    seen: list[dict[str, Any]] = []

    def responder(body: dict[str, Any]) -> str:
        seen.append(body)
        return "ok"

    fake_server.responder = responder
    cfg = gateway_config(fake_server, tmp_path)
    cfg.roles["actor"] = type(cfg.roles["actor"])("openai/fake-model", {"api_key": API_KEY, "temperature": 0.1,
                                                                         "max_tokens": 50})
    gw = Gateway(cfg)
    records = calls
    out = await gw.model("actor").complete(msgs(0), temperature=0.7, role="reader", epoch=2)
    body = seen[-1]
    assert body["temperature"] == 0.7 and body["max_tokens"] == 50
    assert "role" not in body and "epoch" not in body
    assert records[0].role == "reader" and out.meta["provider"] == "openai"
    # a different epoch is a different request: it re-samples instead of hitting the cache
    await gw.model("actor").complete(msgs(0), temperature=0.7, epoch=3)
    await gw.model("actor").complete(msgs(0), temperature=0.7, epoch=2)
    assert len(seen) == 2 and records[-1].response_cache_hit
    await gw.aclose()
    assert API_KEY.encode() not in (tmp_path / "cache.sqlite").read_bytes()


def test_unknown_role_is_a_config_error(make_gateway) -> None:
    gw = make_gateway()
    with pytest.raises(ConfigError, match="no model configured for role 'observer'"):
        gw.model("observer")
