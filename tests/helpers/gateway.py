"""Gateways pointed at the fake OpenAI server: a config builder with a test key (the fixtures are in
tests.helpers.fixtures)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench import offline
from bench.gateway import GatewayConfig, RoleModel
from tests.helpers.fakeserver import FakeOpenAIServer

API_KEY = "sk-test-secret-0123456789"


def gateway_config(server: FakeOpenAIServer, tmp_path: Path | None, *, model: str = "openai/fake-model",
                   policy: str = "rw", **overrides: Any) -> GatewayConfig:
    """Actor and embedder on the fake server (with API_KEY), judge on the offline engine; the response cache in
    `tmp_path` (off without one); short backoffs and timeout; the server treated like a provider, not as a
    self-hosted one (`local_defaults=False`)."""
    offline.register()  # the judge role is the offline engine's
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
        local_defaults=False,  # the fake server stands in for a provider (tests/gateway/test_local_server.py: a local one)
    )
    kw.update(overrides)
    return GatewayConfig(**kw)
