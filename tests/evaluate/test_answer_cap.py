"""The Actor's answering call sends the configured cap, or none at all when answer.max_tokens is null."""

from __future__ import annotations

import asyncio
from typing import Any

from bench.evaluate.answer import answer
from bench.prompt import Prompt, Segment
from om_core.llm import Completion


class _Recorder:
    def __init__(self) -> None:
        self.params: dict[str, Any] = {}

    async def complete(self, messages: list[dict[str, Any]], **params: Any) -> Completion:
        self.params = params
        return Completion(text=" ok ")


def test_uncapped_answer_sends_no_max_tokens() -> None:
    prompt = Prompt(segments=[Segment(role="user", text="When did I move?")])
    m = _Recorder()
    text, _ = asyncio.run(answer(m, prompt, max_tokens=None, temperature=0.0))
    assert text == "ok" and "max_tokens" not in m.params and m.params["temperature"] == 0.0
    asyncio.run(answer(m, prompt, max_tokens=800))
    assert m.params["max_tokens"] == 800
