"""The offline engine as a litellm custom provider: registered like any other, called through the gateway."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from bench import offline
from bench.errors import ConfigError
from bench.gateway import Gateway, GatewayConfig, RoleModel, provider_of
from bench.offline.embedder import embed_text
from bench.offline.engine import chat_prompt_tokens
from bench.offline.reader import NOT_FOUND
from bench.records import CallRecord, collect_calls
from om_core.tokens import default_counter

JUDGE = "Question: Dog?\n\nCorrect Answer: Pixel\n\nModel Response: Pixel!\n\nIs the model response correct? yes or no"


@pytest.fixture
def calls() -> Iterator[list[CallRecord]]:
    with collect_calls() as collected:
        yield collected


def gateway(tmp_path: Path, **embed_params: object) -> Gateway:
    offline.register()
    return Gateway(GatewayConfig(roles={"judge": RoleModel("offline/judge"), "actor": RoleModel("offline/reader"),
                                        "embedder": RoleModel("offline/embedder", dict(embed_params))},
                                 cache_path=str(tmp_path / "c.sqlite")))


async def test_chat_and_embeddings_go_through_litellm_and_are_never_cached(tmp_path: Path, calls) -> None:
    gw = gateway(tmp_path)
    msgs = [{"role": "user", "content": JUDGE}]
    out = await gw.model("judge").complete(msgs)
    assert out.text == "yes" and out.meta["response_model"] == "offline/judge" and out.meta["provider"] == "offline"
    assert out.usage.prompt_tokens == chat_prompt_tokens(msgs) and out.usage.completion_tokens == 1
    assert out.meta["cost_known"] and calls[-1].cost_usd == 0.0  # priced (at zero) in litellm's price map
    assert calls[-1].role == "judge" and calls[-1].messages == msgs
    ans = await gw.model("reader").complete([{"role": "user", "content": "Question: anything?"}])
    assert ans.text == NOT_FOUND
    vecs = await gw.embed(["a b c", "d e f"])
    assert len(vecs) == 2 and vecs[0] == embed_text("a b c")
    count = default_counter().count_string
    assert calls[-1].role == "embedder" and calls[-1].prompt_tokens == count("a b c") + count("d e f") == 6
    assert gw.cache is not None and gw.cache.count() == 0  # recomputed on every call, never cached
    await gw.aclose()


async def test_embedding_width_is_a_provider_param(tmp_path: Path) -> None:
    gw = gateway(tmp_path, dim=8)
    (vec,) = await gw.embed(["my beagle Pixel"])
    assert vec == embed_text("my beagle Pixel", 8)
    await gw.aclose()


async def test_chat_with_the_embedder_is_a_bad_request(tmp_path: Path) -> None:
    offline.register()
    gw = Gateway(GatewayConfig(roles={"actor": RoleModel("offline/embedder")}, cache_policy="off", cache_path=None,
                               max_attempts=1))
    with pytest.raises(Exception, match="unknown offline role 'embedder'"):
        await gw.model("actor").complete([{"role": "user", "content": "hi"}])


def test_registration_validates_model_names_and_routes_by_prefix() -> None:
    offline.register()
    assert provider_of("offline/observer") == "offline"
    with pytest.raises(ConfigError, match="the offline provider has no model 'oracle'"):
        Gateway(GatewayConfig(roles={"actor": RoleModel("offline/oracle")}, cache_policy="off", cache_path=None))


def test_a_model_no_provider_serves_is_a_one_line_config_error() -> None:
    with pytest.raises(ConfigError, match=r"no provider for model 'nosuch/model'.*bench\.offline\.register\(\)"):
        provider_of("nosuch/model")


async def test_the_offline_engine_reports_its_finish_reason_and_cuts_at_max_tokens():
    from bench.perf import offline_gateway

    gw = offline_gateway()
    msgs = [{"role": "user", "content": "## New Message History to Observe\n\nMar 3 2026:\nUser (9:12 AM): I adopted "
                                        "a beagle named Pixel and I walk him every morning by the river."}]
    whole = await gw.model("observer").complete(msgs)
    cut = await gw.model("observer").complete(msgs, max_tokens=5)
    assert whole.finish_reason == "stop" and cut.finish_reason == "length"
    assert len(cut.text) < len(whole.text) and whole.text.startswith(cut.text)
