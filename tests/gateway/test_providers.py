"""The gateway's registry of in-process custom providers: installed into litellm, validated, priced, cached."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.errors import ConfigError
from bench.gateway import CustomProvider, Gateway, GatewayConfig, RoleModel, register_provider
from bench.gateway.setup import ensure_litellm


def echo_provider(calls: list[str], **kw: Any) -> CustomProvider:
    def handler() -> Any:
        litellm = ensure_litellm()

        class Echo(litellm.CustomLLM):  # type: ignore[misc, name-defined]
            async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
                calls.append(model)
                text = f"{model}: {messages[-1]['content']}"
                return litellm.ModelResponse(
                    model=f"echo/{model}", choices=[{"index": 0, "message": {"role": "assistant", "content": text}}],
                    usage=litellm.Usage(prompt_tokens=1000, completion_tokens=10, total_tokens=1010))

        return Echo()

    return CustomProvider("echo", handler, **kw)


async def test_a_provider_registered_after_litellm_is_set_up_serves_and_is_cached(tmp_path: Path) -> None:
    ensure_litellm()  # registration must also work once litellm is installed
    calls: list[str] = []
    price = {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6, "mode": "chat"}
    register_provider(echo_provider(calls, models=("a", "b"), prices={"a": price}))
    gw = Gateway(GatewayConfig(roles={"actor": RoleModel("echo/a"), "judge": RoleModel("echo/b")},
                               cache_path=str(tmp_path / "c.sqlite")))
    msgs = [{"role": "user", "content": "hello"}]
    first = await gw.model("actor").complete(msgs)
    again = await gw.model("actor").complete(msgs)
    assert first.text == again.text == "a: hello" and first.meta["provider"] == "echo"
    assert calls == ["a"] and again.meta["response_cache_hit"]  # response_cache=True (the default): cached
    assert first.meta["cost_known"] and first.meta["cost_usd"] == pytest.approx(1000 * 1e-6 + 10 * 2e-6)
    unpriced = await gw.model("judge").complete(msgs)
    assert unpriced.text == "b: hello" and unpriced.meta["cost_known"] is False
    await gw.aclose()


async def test_an_uncached_provider_is_called_every_time(tmp_path: Path) -> None:
    calls: list[str] = []
    register_provider(echo_provider(calls, response_cache=False))
    gw = Gateway(GatewayConfig(roles={"actor": RoleModel("echo/anything")}, cache_path=str(tmp_path / "c.sqlite")))
    for _ in range(2):
        await gw.model("actor").complete([{"role": "user", "content": "hi"}])
    assert calls == ["anything", "anything"] and gw.cache is not None and gw.cache.count() == 0
    await gw.aclose()


def test_unknown_model_names_and_bad_provider_names_are_config_errors() -> None:
    register_provider(echo_provider([], models=("a",)))
    with pytest.raises(ConfigError, match=r"model.actor.model='echo/z': the echo provider has no model 'z'"):
        Gateway(GatewayConfig(roles={"actor": RoleModel("echo/z")}, cache_policy="off", cache_path=None))
    with pytest.raises(ConfigError, match="free of '/'"):
        CustomProvider("a/b", lambda: None)
