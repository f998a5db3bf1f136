"""Self-hosted servers through the real litellm HTTP path, against the fake OpenAI-compatible server playing
llama.cpp or vLLM: finish reasons reach the caller; swapping the model behind a name never replays old answers;
the context window is read from the server and enforced; the server's tokenizer is used; one request at a
time and no retry of a timed-out request; a truncated Observer output is retried once with a larger cap, then
refused."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import pytest

from bench.gateway import Gateway, GatewayConfig, GatewayError, RoleModel
from bench.gateway.local import TOKEN_SAFETY_MARGIN, is_local, probe_server, scrub_url
from om_core import InMemoryStorage, Message, ObservationalMemory, OMConfig
from om_core.errors import RejectedOutputError
from om_core.guards import TRUNCATED
from om_core.observer import observe
from om_core.testing import ScriptedReflector, synthetic_turns
from om_core.tokens import default_counter
from tests.helpers.fakeserver import FakeOpenAIServer

QWEN = {"id": "qwen2.5-0.5b-instruct", "object": "model", "owned_by": "llamacpp",
        "meta": {"n_params": 494032768, "size": 491400064, "n_ctx_train": 32768}}
LLAMA_PROPS = {"default_generation_settings": {"n_ctx": 2048}, "total_slots": 1}


def word_ids(text: str) -> list[int]:
    """The fake server's own tokenizer: two tokens per word (a small vocabulary, unlike o200k)."""
    return list(range(2 * len(text.split())))


def config(server: FakeOpenAIServer, tmp_path: Path | None, **kw: Any) -> GatewayConfig:
    roles = {r: RoleModel("openai/qwen2.5-0.5b-instruct", {"api_key": "sk-local"})
             for r in ("actor", "observer", "reflector")}
    base: dict[str, Any] = dict(roles=roles, api_base={"openai": server.base_url}, backoff_base_s=0.01,
                                backoff_max_s=0.02, cache_policy="off", cache_path=None)
    if tmp_path is not None:
        base.update(cache_policy="rw", cache_path=str(tmp_path / "cache.sqlite"))
    base.update(kw)
    return GatewayConfig(**base)


def ask(n: int = 0, words: int = 5) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"question {n}: " + " ".join(["word"] * words)}]


def test_local_addresses_and_scrubbed_urls():
    assert is_local("http://127.0.0.1:8080/v1") and is_local("http://localhost:8000/v1")
    assert is_local("http://192.168.1.20:8000/v1") and not is_local("https://api.openai.com/v1")
    assert scrub_url("http://user:secret@127.0.0.1:8080/v1/?x=1") == "http://127.0.0.1:8080/v1"


async def test_the_finish_reason_reaches_the_completion_the_call_record_and_the_cache(tmp_path, calls):
    with FakeOpenAIServer(models=[QWEN], finish_reason="length") as srv:
        gw = Gateway(config(srv, tmp_path))
        first = await gw.complete("actor", ask(), max_tokens=50)
        again = await gw.complete("actor", ask(), max_tokens=50)
        await gw.aclose()
    assert first.finish_reason == "length" and calls[0].finish_reason == "length"
    assert again.meta["response_cache_hit"] and again.finish_reason == "length"


async def test_swapping_the_model_behind_a_name_never_replays_old_answers(tmp_path):
    with FakeOpenAIServer(models=[QWEN]) as srv:
        gw = Gateway(config(srv, tmp_path))
        await gw.complete("actor", ask())
        await gw.aclose()
        gw = Gateway(config(srv, tmp_path))  # the same model: answered from the cache
        hit = await gw.complete("actor", ask())
        await gw.aclose()
        assert hit.meta["response_cache_hit"] and srv.stats.chat_requests == 1
        srv.models = [{**QWEN, "meta": {**QWEN["meta"], "size": 986000000}}]  # another GGUF, the same name
        gw = Gateway(config(srv, tmp_path))
        miss = await gw.complete("actor", ask())
        await gw.aclose()
    assert not miss.meta["response_cache_hit"] and srv.stats.chat_requests == 2
    with FakeOpenAIServer(models=[QWEN]) as other:  # the same model on another server (port)
        gw = Gateway(config(other, tmp_path))
        elsewhere = await gw.complete("actor", ask())
        await gw.aclose()
    assert not elsewhere.meta["response_cache_hit"] and other.stats.chat_requests == 1


async def test_the_context_window_is_read_from_llama_cpp_props_and_from_vllm_models():
    with FakeOpenAIServer(models=[QWEN], props=LLAMA_PROPS) as srv:
        info = await probe_server(srv.base_url)
        assert (info.context_window, info.slots, info.tokenize_path) == (2048, 1, None)
    vllm = {"id": "Qwen/Qwen2.5-7B-Instruct", "object": "model", "max_model_len": 32768}
    with FakeOpenAIServer(models=[vllm], tokenizer=word_ids) as srv:
        info = await probe_server(srv.base_url)
        assert (info.context_window, info.slots, info.tokenize_body) == (32768, None, "vllm")
        assert info.served_name("openai/Qwen/Qwen2.5-7B-Instruct") == "Qwen/Qwen2.5-7B-Instruct"


async def test_the_context_window_is_enforced_with_the_servers_own_token_counts():
    with FakeOpenAIServer(models=[QWEN], props=LLAMA_PROPS, tokenizer=word_ids) as srv:
        gw = Gateway(config(srv, None))
        await gw.complete("actor", ask(words=100), max_tokens=5000)
        sent = srv.stats.chat_bodies[-1]["max_tokens"]
        prompt = len(word_ids(ask(words=100)[0]["content"])) + 8  # the server's count + template allowance
        assert sent == 2048 - prompt and srv.stats.info_requests["tokenize"] >= 1
        assert gw.context_window("actor") == 2048
        with pytest.raises(GatewayError) as err:  # 2 tokens per word: 1,100 words need 2,200 > 2,048
            await gw.complete("actor", ask(1, words=1100), max_tokens=100)
        assert err.value.kind == "context" and len(srv.stats.chat_bodies) == 1  # refused without a call
        await gw.aclose()


async def test_without_a_tokenizer_the_safety_margin_counts_and_config_gives_the_window():
    with FakeOpenAIServer(models=[QWEN]) as srv:  # llama-cpp-python: no /props, no /tokenize
        gw = Gateway(config(srv, None, context_window={"openai": 1000}))
        msgs = ask(words=100)
        await gw.complete("actor", msgs, max_tokens=5000)
        expected = 1000 - math.ceil(default_counter().count_string(msgs[0]["content"]) * TOKEN_SAFETY_MARGIN) - 8
        assert srv.stats.chat_bodies[-1]["max_tokens"] == expected
        await gw.aclose()


async def test_a_local_server_gets_one_request_at_a_time_or_its_slots():
    with FakeOpenAIServer(models=[QWEN], latency_s=0.05) as srv:
        gw = Gateway(config(srv, None))
        await asyncio.gather(*(gw.complete("actor", ask(k)) for k in range(6)))
        assert srv.stats.max_in_flight == 1
        await gw.aclose()
    with FakeOpenAIServer(models=[QWEN], props={**LLAMA_PROPS, "total_slots": 3}, latency_s=0.05) as srv:
        gw = Gateway(config(srv, None))
        await asyncio.gather(*(gw.complete("actor", ask(k)) for k in range(9)))
        assert 1 < srv.stats.max_in_flight <= 3
        await gw.aclose()


async def test_a_timed_out_request_is_not_retried_on_a_local_server():
    with FakeOpenAIServer(models=[QWEN], schedule=["timeout"], hang_s=3.0) as srv:
        gw = Gateway(config(srv, None, local_timeout_s=0.5))
        with pytest.raises(GatewayError) as err:
            await gw.complete("actor", ask())
        assert err.value.kind == "timeout" and srv.stats.chat_requests == 1
        await gw.aclose()
    with FakeOpenAIServer(models=[QWEN], schedule=["timeout"], hang_s=3.0) as srv:  # a provider: retried
        gw = Gateway(config(srv, None, local_defaults=False, timeout_s=0.5))
        out = await gw.complete("actor", ask())
        assert out.meta["retries"] == 1 and srv.stats.chat_requests == 2
        await gw.aclose()


async def test_local_timeout_settings_say_which_timeout_wins_and_whether_a_timeout_is_retried():
    """gateway.local_timeout_s wins over timeout_s for a local server; null hands it to timeout_s; with
    local_retry_timeouts a timed-out request is retried as max_attempts says."""
    with FakeOpenAIServer(models=[QWEN], schedule=["timeout"], hang_s=3.0) as srv:  # retried once, then answered
        gw = Gateway(config(srv, None, local_timeout_s=0.5, local_retry_timeouts=True))
        out = await gw.complete("actor", ask())
        assert out.meta["retries"] == 1 and srv.stats.chat_requests == 2
        await gw.aclose()
    with FakeOpenAIServer(models=[QWEN], schedule=["timeout", "timeout"], hang_s=3.0) as srv:
        gw = Gateway(config(srv, None, local_timeout_s=0.5, local_retry_timeouts=True, max_attempts=2))
        with pytest.raises(GatewayError) as err:  # max_attempts bounds the retries
            await gw.complete("actor", ask())
        assert err.value.kind == "timeout" and srv.stats.chat_requests == 2
        await gw.aclose()
    with FakeOpenAIServer(models=[QWEN], schedule=["timeout"], hang_s=3.0) as srv:
        gw = Gateway(config(srv, None, local_timeout_s=None, timeout_s=0.5))  # timeout_s applies, not 600 s
        assert gw.timeout_for(local=True) == 0.5
        with pytest.raises(GatewayError) as err:
            await gw.complete("actor", ask())
        assert err.value.kind == "timeout" and srv.stats.chat_requests == 1  # still final: no retry asked for
        await gw.aclose()
    assert Gateway(config(srv, None, timeout_s=7)).timeout_for(local=True) == 600.0  # the default: local wins


async def test_a_key_given_as_api_key_query_of_the_base_url_is_sent_as_the_key_not_in_the_url():
    """`gateway.api_base.embedder=http://.../v1?api_key=K` (issue 27: every RAG question failed with a 404, the
    client appending /embeddings after the query): the key goes as a bearer token, the URL without it."""
    with FakeOpenAIServer(models=[QWEN]) as srv:
        roles = {"embedder": RoleModel("openai/text-embedding-3-small", {})}
        gw = Gateway(GatewayConfig(roles=roles, api_base={"embedder": f"{srv.base_url}?api_key=sk-query-123456"},
                                   cache_policy="off", cache_path=None))
        vecs = await gw.embed(["one", "two"])
        assert len(vecs) == 2 and srv.stats.embedding_requests == 1
        assert srv.stats.auth["Bearer sk-query-123456"] >= 1
        await gw.aclose()


LONG_LOG = "<observations>\nDate: Mar 3, 2026\n" + "\n".join(
    f"* 🔴 (09:{k % 60:02d}) User stated fact number {k} about their garden and the orchard" for k in range(400)
) + "\n</observations>"


async def test_a_truncated_observer_output_is_retried_with_a_larger_cap_then_refused():
    """The server cuts every reply at max_tokens (finish_reason "length"): om_core asks once more with twice the
    cap, which is cut too, and refuses the output; nothing becomes memory."""
    with FakeOpenAIServer(models=[QWEN], responder=lambda body: LONG_LOG, enforce_max_tokens=True) as srv:
        gw = Gateway(config(srv, None))
        msgs = [Message("1", "user", "I planted tomatoes in the garden", synthetic_turns(1)[0][0])]
        with pytest.raises(RejectedOutputError) as err:
            await observe(gw.model("observer"), "m31", existing_observations="", messages=msgs,
                          model_params={"max_tokens": 200})
        assert err.value.reason == TRUNCATED
        assert [b["max_tokens"] for b in srv.stats.chat_bodies] == [200, 400]
        # through the engine: the messages stay unobserved, the rejection says why
        om = ObservationalMemory(OMConfig.from_dict({"observation": {"message_tokens": 1500, "buffer_tokens": False,
                                                                     "max_output_tokens": 300}}),
                                 InMemoryStorage(), gw.model("observer"), ScriptedReflector())
        for i, (at, user, assistant) in enumerate(synthetic_turns(8, words=120)):
            await om.prepare_turn("r", "t", [Message(f"u{i}", "user", user, at)], at)
            await om.finish_turn("r", "t", [Message(f"a{i}", "assistant", assistant, at)], at)
        assert om.rejections and {r.reason for r in om.rejections} == {TRUNCATED}
        assert om.record("r", "t").active_observations == ""
        await gw.aclose()
    # replies that fit their cap: memory is written
    short = "<observations>\nDate: Mar 1, 2026\n* 🔴 (08:00) User stated facts about their garden\n</observations>"
    with FakeOpenAIServer(models=[QWEN], responder=lambda body: short, enforce_max_tokens=True) as srv:
        gw = Gateway(config(srv, None))
        om = ObservationalMemory(OMConfig.from_dict({"observation": {"message_tokens": 1500, "buffer_tokens": False}}),
                                 InMemoryStorage(), gw.model("observer"), ScriptedReflector())
        for i, (at, user, assistant) in enumerate(synthetic_turns(8, words=120)):
            await om.prepare_turn("r", "t", [Message(f"u{i}", "user", user, at)], at)
            await om.finish_turn("r", "t", [Message(f"a{i}", "assistant", assistant, at)], at)
        assert "garden" in om.record("r", "t").active_observations and not om.rejections
        assert srv.stats.chat_bodies[0]["max_tokens"] == 100_000  # Mastra's default cap (no model named)
        await gw.aclose()


async def test_a_regenerated_request_is_sent_again_not_answered_from_the_cache(tmp_path):
    with FakeOpenAIServer(models=[QWEN]) as srv:
        gw = Gateway(config(srv, tmp_path))
        first = await gw.complete("observer", ask())
        again = await gw.complete("observer", ask())
        regen = await gw.complete("observer", ask(), attempt=1)
        await gw.aclose()
    assert again.meta["response_cache_hit"] and not regen.meta["response_cache_hit"]
    assert srv.stats.chat_requests == 2 and "attempt" not in srv.stats.chat_bodies[-1]
    assert first.text == regen.text  # the fake server answers alike; a sampling model would not


@pytest.mark.parametrize("value", ["", "  "])
async def test_an_empty_key_in_the_environment_counts_as_absent_for_a_local_server(monkeypatch, value):
    """`OPENAI_API_KEY=` (set, empty or blank; issue 27): litellm takes the variable as present and sends the empty
    key, which its client refuses ("Missing credentials") on every call; a local server gets the placeholder key
    as when the variable is unset."""
    monkeypatch.setenv("OPENAI_API_KEY", value)
    with FakeOpenAIServer(models=[QWEN]) as srv:
        roles = {"actor": RoleModel("openai/qwen2.5-0.5b-instruct", {})}
        gw = Gateway(GatewayConfig(roles=roles, api_base={"actor": srv.base_url}, cache_policy="off",
                                   cache_path=None, max_attempts=1))
        out = await gw.complete("actor", ask(), max_tokens=20)
        await gw.aclose()
    assert out.text and srv.stats.auth["Bearer no-key-local-server"] >= 1
