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

from bench.offline.embedder import DEFAULT_DIM, embed_texts
from bench.offline.engine import (
    EMBEDDER,
    PROVIDER,
    canonical_role,
    chat_prompt_tokens,
    completion_tokens,
    input_tokens,
    run_role,
)


def fit_cap(text: str, cap: Any) -> tuple[str, str]:
    """The reply and its finish reason as a server reports them: cut at `max_tokens` (o200k) with "length" when it
    is longer, else whole with "stop"."""
    from om_core import default_counter

    if not isinstance(cap, int) or cap <= 0:
        return text, "stop"
    counter = default_counter()
    ids = counter.encode(text)
    return (text, "stop") if len(ids) <= cap else (counter.decode(ids[:cap]), "length")


class OfflineLLM(CustomLLM):
    """Dry-run engine whose accuracy is not an LLM's; every response's model is `offline/<role>`.

    Embeddings take the provider-specific param `dim` (default 256); litellm rejects OpenAI's `dimensions`
    for custom providers."""

    def _respond(self, model: str, messages: list[dict[str, Any]], optional_params: dict[str, Any]) -> Any:
        role = canonical_role(model)
        try:
            text = run_role(role, messages, optional_params)
        except ValueError as exc:
            raise CustomLLMError(status_code=400, message=str(exc)) from exc
        digest = hashlib.sha256(json.dumps(messages, sort_keys=True, default=str).encode()).hexdigest()[:16]
        prompt = chat_prompt_tokens(messages)
        text, finish = fit_cap(text, optional_params.get("max_tokens") or optional_params.get("max_completion_tokens"))
        out = completion_tokens(text)
        return litellm.ModelResponse(
            id=f"offline-{digest}",
            created=int(time.time()),
            model=f"{PROVIDER}/{role}",
            object="chat.completion",
            choices=[{"index": 0, "finish_reason": finish, "message": {"role": "assistant", "content": text}}],
            usage=litellm.Usage(prompt_tokens=prompt, completion_tokens=out, total_tokens=prompt + out),
        )

    def _embed(self, model: str, texts: list[Any], optional_params: dict[str, Any], response: Any) -> Any:
        if canonical_role(model) != EMBEDDER:
            raise CustomLLMError(status_code=400, message=f"offline/{model} does not embed; use offline/{EMBEDDER}")
        batch = [str(t) for t in texts]
        vectors = embed_texts(batch, int(optional_params.get("dim") or DEFAULT_DIM))
        response.data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        response.model = f"{PROVIDER}/{EMBEDDER}"
        n = input_tokens(batch)
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
