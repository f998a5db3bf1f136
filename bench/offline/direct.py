"""The offline engine's direct route: its chat and embedding replies built in this process without litellm.

The same rules and usage numbers as the litellm custom provider (`bench.offline.provider`, which builds its
responses from these functions), handed to the gateway as plain values (`bench.gateway.providers.DirectReply`),
so a call skips litellm's machinery meant for remote providers (logging, routing, cost callbacks: about 3-9 ms a
call) while the gateway keeps everything else of its call path (request building, caching, recording, usage and
cost accounting, retries). `gateway.direct_providers=false` routes the offline engine through litellm instead.
"""

from __future__ import annotations

from typing import Any

from om_core import Usage

from bench.gateway.providers import DirectEmbedding, DirectReply, ProviderCallError
from bench.offline.embedder import DEFAULT_DIM, embed_texts
from bench.offline.engine import EMBEDDER, PROVIDER, canonical_role, chat_prompt_tokens, completion_tokens, input_tokens, run_role


def fit_cap(text: str, cap: Any) -> tuple[str, str]:
    """The reply and its finish reason as a server reports them: cut at `max_tokens` (o200k) with "length" when it
    is longer, else whole with "stop"."""
    from om_core import default_counter

    if not isinstance(cap, int) or cap <= 0:
        return text, "stop"
    counter = default_counter()
    ids = counter.encode(text)
    return (text, "stop") if len(ids) <= cap else (counter.decode(ids[:cap]), "length")


class OfflineDirect:
    """`bench.gateway.providers.DirectModel` of the offline engine. `model` is the name after `offline/`;
    `params` the call's params (`max_tokens` / `max_completion_tokens` cap a chat reply, `dim` sets the
    embedding size, default 256). Raises ProviderCallError (status 400) for a name that is no offline model."""

    def chat(self, model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> DirectReply:
        role = canonical_role(model)
        try:
            text = run_role(role, messages, params)
        except ValueError as exc:
            raise ProviderCallError(400, str(exc)) from exc
        prompt = chat_prompt_tokens(messages)
        text, finish = fit_cap(text, params.get("max_tokens") or params.get("max_completion_tokens"))
        return DirectReply(text=text, usage=Usage(prompt, completion_tokens(text)), model=f"{PROVIDER}/{role}",
                           finish_reason=finish)

    def embed(self, model: str, texts: list[Any], params: dict[str, Any]) -> DirectEmbedding:
        if canonical_role(model) != EMBEDDER:
            raise ProviderCallError(400, f"offline/{model} does not embed; use offline/{EMBEDDER}")
        batch = [str(t) for t in texts]
        vectors = embed_texts(batch, int(params.get("dim") or DEFAULT_DIM))
        return DirectEmbedding(vectors=vectors, usage=Usage(input_tokens(batch), 0), model=f"{PROVIDER}/{EMBEDDER}")
