"""The one seam between om_core and any model provider."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # provider-reported cache reads
    cache_write_tokens: int = 0  # provider-reported cache writes (Anthropic, GPT-5.6+)


@dataclass
class Completion:
    text: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    # Provider- or gateway-specific extras (cost, latency, response-cache hit, retries). om_core ignores them.
    meta: dict[str, Any] = field(default_factory=dict)
    # Why generation stopped, as OpenAI-compatible servers report it: "stop", "length" (the output cap or the
    # context window cut the text short), "content_filter", ...; None when the provider does not say. The output
    # guards refuse a "length" output (om_core.guards.truncation_guard).
    finish_reason: str | None = None


@runtime_checkable
class ChatModel(Protocol):
    """Anything that turns OpenAI-style chat messages into a completion.

    `messages` are dicts with "role" and "content" (str). Extra keyword params (temperature, max_tokens,
    role="observer", ...) are passed through; implementations ignore what they do not understand. A regenerated
    request (the same messages asked again after a refused output) carries `attempt=1, 2, ...`: an implementation
    that caches responses must not answer it with the cached answer to the first attempt. An
    implementation that knows why generation stopped sets `Completion.finish_reason` ("length" when the
    `max_tokens` cap or the context window cut the output).
    """

    async def complete(self, messages: list[dict[str, Any]], **params: Any) -> Completion: ...
