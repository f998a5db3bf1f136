"""The Actor's answering call: one completion over a strategy's Prompt."""

from __future__ import annotations

from bench.prompt import Prompt
from om_core.llm import ChatModel, Completion


async def answer(
    model: ChatModel, prompt: Prompt, *, max_tokens: int | None = 800, temperature: float = 0.0, attempt: int = 0
) -> tuple[str, Completion]:
    """Return (hypothesis text, completion). 800 tokens is the official reader's effective budget
    (LongMemEval: xiaowu0162/LongMemEval src/generation/run_generation.py); None sends no cap at all (Mastra's
    LongMemEval runner, explorations/longmemeval run.ts, sets no max tokens for its actor). `attempt` > 0: a retry
    of the same request (its own response-cache key, bench.gateway; never sent to the provider)."""
    cap: dict[str, int] = {} if max_tokens is None else {"max_tokens": max_tokens}
    if attempt:
        cap["attempt"] = attempt
    completion = await model.complete(prompt.to_messages(), temperature=temperature, role="actor", **cap)
    return completion.text.strip(), completion
