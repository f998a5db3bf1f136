"""The fake OpenAI-compatible server, spoken to with a plain HTTP client."""

from __future__ import annotations

import json

import aiohttp
import pytest

from tests.helpers.fakeserver import FakeOpenAIServer, body_key


def chat_body(text: str, model: str = "m") -> dict:
    return {"model": model, "messages": [{"role": "user", "content": text}]}


async def post(srv: FakeOpenAIServer, path: str, body: dict, timeout: float = 5.0) -> tuple[int, dict, str]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as s:
        async with s.post(srv.base_url + path, json=body) as r:
            return r.status, dict(r.headers), await r.text()


async def test_starts_on_a_free_loopback_port_and_stops() -> None:
    srv = FakeOpenAIServer().start()
    try:
        assert srv.port > 0 and srv.base_url.startswith("http://127.0.0.1:")
        status, _, text = await post(srv, "/chat/completions", chat_body("hi"))
        assert status == 200
    finally:
        srv.stop()
    with pytest.raises(aiohttp.ClientError):
        await post(srv, "/chat/completions", chat_body("hi"), timeout=2)


async def test_echo_is_deterministic_and_usage_is_scripted() -> None:
    with FakeOpenAIServer(cached_tokens=lambda body: 5) as srv:
        _, _, a = await post(srv, "/chat/completions", chat_body("hello there"))
        _, _, b = await post(srv, "/chat/completions", chat_body("hello there"))
        ja, jb = json.loads(a), json.loads(b)
        assert ja["choices"][0]["message"]["content"] == jb["choices"][0]["message"]["content"]
        assert "hello there" in ja["choices"][0]["message"]["content"]
        usage = ja["usage"]
        assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
        assert usage["prompt_tokens_details"]["cached_tokens"] == 5
        assert srv.stats.requests == 2 and srv.stats.chat_requests == 2


async def test_dict_and_callable_responders() -> None:
    with FakeOpenAIServer({"ping": "pong"}) as srv:
        _, _, t = await post(srv, "/chat/completions", chat_body("ping"))
        assert json.loads(t)["choices"][0]["message"]["content"] == "pong"
    with FakeOpenAIServer(lambda body: body["model"].upper()) as srv:
        _, _, t = await post(srv, "/chat/completions", chat_body("x", model="abc"))
        assert json.loads(t)["choices"][0]["message"]["content"] == "ABC"


async def test_embeddings_endpoint() -> None:
    with FakeOpenAIServer(embed_dim=8) as srv:
        status, _, t = await post(srv, "/embeddings", {"model": "e", "input": ["a b", "c d"]})
        data = json.loads(t)
        assert status == 200 and [d["index"] for d in data["data"]] == [0, 1]
        assert all(len(d["embedding"]) == 8 for d in data["data"])
        assert srv.stats.embedding_requests == 1


async def test_scheduled_faults() -> None:
    schedule = {0: "429", 1: "500", 2: "malformed", 3: "401", 4: "context"}
    with FakeOpenAIServer(schedule=schedule, retry_after_s=0.25) as srv:
        status, headers, _ = await post(srv, "/chat/completions", chat_body("a"))
        assert status == 429 and float(headers["Retry-After"]) == 0.25
        assert (await post(srv, "/chat/completions", chat_body("a")))[0] == 500
        status, _, text = await post(srv, "/chat/completions", chat_body("a"))
        assert status == 200
        with pytest.raises(json.JSONDecodeError):
            json.loads(text)
        assert (await post(srv, "/chat/completions", chat_body("a")))[0] == 401
        status, _, text = await post(srv, "/chat/completions", chat_body("a"))
        assert status == 400 and json.loads(text)["error"]["code"] == "context_length_exceeded"
        assert (await post(srv, "/chat/completions", chat_body("a")))[0] == 200  # schedule exhausted
        assert sum(srv.stats.faults.values()) == 5


async def test_timeout_fault_hangs_past_the_client_timeout() -> None:
    with FakeOpenAIServer(schedule=["timeout"], hang_s=5.0) as srv:
        with pytest.raises(TimeoutError):
            await post(srv, "/chat/completions", chat_body("slow"), timeout=0.2)
        assert (await post(srv, "/chat/completions", chat_body("fast")))[0] == 200


async def test_rate_faults_depend_on_content_not_arrival_order() -> None:
    bodies = [chat_body(f"q{i}") for i in range(40)]

    async def faults_by_body(order: list[int]) -> dict[str, list[int]]:
        with FakeOpenAIServer(fault_rate=0.5, fault_kinds=("500", "429"), seed=3, retry_after_s=0) as srv:
            out: dict[str, list[int]] = {}
            for i in order:
                for _ in range(2):  # a first attempt and a retry of the same body
                    status, _, _ = await post(srv, "/chat/completions", bodies[i])
                    out.setdefault(body_key(bodies[i]), []).append(status)
            return out

    forward = await faults_by_body(list(range(40)))
    backward = await faults_by_body(list(reversed(range(40))))
    assert forward == backward
    statuses = [s for v in forward.values() for s in v]
    assert 0 < statuses.count(200) < len(statuses)  # some faults, some successes


def test_rejects_unknown_fault_kinds() -> None:
    with pytest.raises(ValueError, match="unknown fault kinds"):
        FakeOpenAIServer(fault_kinds=("418",))
