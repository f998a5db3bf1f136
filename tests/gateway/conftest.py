"""Fixtures: a fake OpenAI server on a free loopback port, and gateways pointed at it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from bench import offline
from bench.gateway import Gateway, GatewayConfig, RoleModel
from bench.gateway.fakeserver import FakeOpenAIServer
from bench.records import CallRecord, collect_calls

API_KEY = "sk-test-secret-0123456789"
offline.register()  # the judge role below is the offline engine's


@pytest.fixture
def fake_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


@pytest.fixture
def calls() -> Iterator[list[CallRecord]]:
    with collect_calls() as collected:
        yield collected


def gateway_config(server: FakeOpenAIServer, tmp_path: Path | None, *, model: str = "openai/fake-model",
                   policy: str = "rw", **overrides: Any) -> GatewayConfig:
    roles = {
        "actor": RoleModel(model, {"api_key": API_KEY, "temperature": 0.0}),
        "judge": RoleModel("offline/judge"),
        "embedder": RoleModel("openai/fake-embed", {"api_key": API_KEY}),
    }
    kw: dict[str, Any] = dict(
        roles=roles,
        cache_path=str(tmp_path / "cache.sqlite") if tmp_path is not None else None,
        cache_policy=policy if tmp_path is not None else "off",
        api_base={"openai": server.base_url},
        backoff_base_s=0.01,
        backoff_max_s=0.05,
        timeout_s=5.0,
    )
    kw.update(overrides)
    return GatewayConfig(**kw)


@pytest.fixture
def make_gateway(fake_server: FakeOpenAIServer, tmp_path: Path) -> Iterator[Callable[..., Gateway]]:
    made: list[Gateway] = []

    def make(**kw: Any) -> Gateway:
        server = kw.pop("server", fake_server)
        path = kw.pop("tmp", tmp_path)
        gw = Gateway(gateway_config(server, path, **kw))
        made.append(gw)
        return gw

    yield make
    for gw in made:
        if gw.cache is not None:
            gw.cache.close()
