"""A stand-in for a self-hosted model server: the fake OpenAI-compatible server (tests.helpers.fakeserver) with a
llama.cpp-like window (`/props`), every request answered by the offline engine in the role the request is for
(told from the prompt: the judge asks for 10 tokens, the Observer and Reflector by their instructions' opening)."""

from __future__ import annotations

from typing import Any

from bench.offline.engine import run_role
from tests.helpers.fakeserver import FakeOpenAIServer

OBSERVER_MARK = "write down observations"  # om_core's Observer instructions (both profiles)
REFLECTOR_MARK = "Another part of you, the observer"  # om_core's Reflector instructions


def role_of(body: dict[str, Any]) -> str:
    system = " ".join(str(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "system")
    if body.get("max_tokens") == 10:
        return "judge"
    if REFLECTOR_MARK in system:
        return "reflector"
    if OBSERVER_MARK in system:
        return "observer"
    return "actor"


def offline_reply(body: dict[str, Any]) -> str:
    return run_role(role_of(body), body["messages"], {"max_tokens": body.get("max_tokens")})


def local_server(n_ctx: int = 32768, served: str = "qwen2.5-7b-instruct") -> FakeOpenAIServer:
    """A server (context manager) reporting an `n_ctx` window and one slot, as `llama-server -c n_ctx` does."""
    return FakeOpenAIServer(offline_reply, models=[{"id": served}],
                            props={"default_generation_settings": {"n_ctx": n_ctx}, "total_slots": 1})
