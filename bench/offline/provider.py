"""The litellm custom provider `offline`: chat calls to the rule-based roles, embeddings to the hashed
bag-of-words embedder. Imported only when litellm is (it subclasses `litellm.CustomLLM`); registered by
`bench.offline.register()`."""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import litellm
from litellm.llms.custom_llm import CustomLLM, CustomLLMError

from bench.gateway.providers import ProviderCallError
from bench.offline.direct import OfflineDirect, fit_cap

__all__ = ["OfflineLLM", "fit_cap"]


class OfflineLLM(CustomLLM):
    """Dry-run engine whose accuracy is not an LLM's; every response's model is `offline/<role>`. Its replies are
    `bench.offline.direct.OfflineDirect`'s (the gateway's direct route), wrapped as litellm responses.

    Embeddings take the provider-specific param `dim` (default 256); litellm rejects OpenAI's `dimensions`
    for custom providers."""

    def __init__(self) -> None:
        super().__init__()
        self.direct = OfflineDirect()

    def _respond(self, model: str, messages: list[dict[str, Any]], optional_params: dict[str, Any]) -> Any:
        try:
            reply = self.direct.chat(model, messages, optional_params)
        except ProviderCallError as exc:
            raise CustomLLMError(status_code=exc.status_code, message=exc.message) from exc
        digest = hashlib.sha256(json.dumps(messages, sort_keys=True, default=str).encode()).hexdigest()[:16]
        u = reply.usage
        return litellm.ModelResponse(
            id=f"offline-{digest}",
            created=int(time.time()),
            model=reply.model,
            object="chat.completion",
            choices=[{"index": 0, "finish_reason": reply.finish_reason,
                      "message": {"role": "assistant", "content": reply.text}}],
            usage=litellm.Usage(prompt_tokens=u.prompt_tokens, completion_tokens=u.completion_tokens,
                                total_tokens=u.prompt_tokens + u.completion_tokens),
        )

    def _embed(self, model: str, texts: list[Any], optional_params: dict[str, Any], response: Any) -> Any:
        try:
            got = self.direct.embed(model, texts, optional_params)
        except ProviderCallError as exc:
            raise CustomLLMError(status_code=exc.status_code, message=exc.message) from exc
        response.data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(got.vectors)]
        response.model = got.model
        n = got.usage.prompt_tokens
        response.usage = litellm.Usage(prompt_tokens=n, completion_tokens=0, total_tokens=n)
        return response

    def completion(self, model: str, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        return self._respond(model, messages, kwargs.get("optional_params") or {})

    async def acompletion(self, model: str, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        return self._respond(model, messages, kwargs.get("optional_params") or {})

    def embedding(self, model: str, input: list[Any], model_response: Any, *args: Any,
                  **kwargs: Any) -> Any:
        return self._embed(model, input, kwargs.get("optional_params") or {}, model_response)

    async def aembedding(self, model: str, input: list[Any], model_response: Any, *args: Any,
                         **kwargs: Any) -> Any:
        return self._embed(model, input, kwargs.get("optional_params") or {}, model_response)
