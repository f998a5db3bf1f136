"""The litellm custom provider `offline/<role>`: routes chat calls to the rule-based engine.

Imported only by `bench.gateway.setup.ensure_litellm`, because it subclasses `litellm.CustomLLM`.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import litellm
from litellm import CustomLLM
from litellm.llms.custom_llm import CustomLLMError

from bench.gateway.offline.engine import canonical_role, chat_prompt_tokens, completion_tokens, run_role

PROVIDER = "offline"


class OfflineLLM(CustomLLM):
    """Dry-run engine whose accuracy is not an LLM's; every response's model is `offline/<role>`."""

    def _respond(self, model: str, messages: list[dict[str, Any]], optional_params: dict[str, Any]) -> Any:
        role = canonical_role(model)
        try:
            text = run_role(role, messages, optional_params)
        except ValueError as exc:
            raise CustomLLMError(status_code=400, message=str(exc)) from exc
        digest = hashlib.sha256(json.dumps(messages, sort_keys=True, default=str).encode()).hexdigest()[:16]
        prompt = chat_prompt_tokens(messages)
        out = completion_tokens(text)
        return litellm.ModelResponse(
            id=f"offline-{digest}",
            created=int(time.time()),
            model=f"{PROVIDER}/{role}",
            object="chat.completion",
            choices=[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            usage=litellm.Usage(prompt_tokens=prompt, completion_tokens=out, total_tokens=prompt + out),
        )

    def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        return self._respond(model, messages, kwargs.get("optional_params") or {})

    async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        return self._respond(model, messages, kwargs.get("optional_params") or {})
