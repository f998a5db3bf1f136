"""The mastra_* presets' Actor request carries the sampling parameters Mastra's runner sent (no npm here: the
runner's side is the body recorded by `make conformance`, case actor-params, with @mastra/core 1.2.0 and 1.68.0;
this test sends om-bench's side for real, through the gateway and litellm, to the conformance fake model)."""

from __future__ import annotations

import asyncio

import pytest

from conformance.actor_params import ombench_request, sampling
from conformance.fake_model import FakeModel

# the runner's Responses API bodies as measured (input elided): what its SDK sent for temperature 0, no cap
RUNNER = {
    "mastra_gpt5mini": {"model": "gpt-5-mini", "input": []},
    "mastra_gpt4o": {"model": "gpt-4o", "input": [], "temperature": 0},
}


def test_sampling_reads_both_apis() -> None:
    assert sampling({"max_output_tokens": 5, "reasoning": {"effort": "low"}, "temperature": 0}) == \
        {"max_output": 5, "reasoning": "low", "temperature": 0}
    assert sampling({"max_completion_tokens": 5, "reasoning_effort": "low"}) == {"max_output": 5, "reasoning": "low"}
    assert sampling({"messages": []}) == {}


@pytest.mark.parametrize("preset", sorted(RUNNER))
def test_preset_sends_what_the_runner_sent(preset: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fake")
    with FakeModel() as fm:
        asyncio.run(ombench_request(preset, fm.base_url("ombench")))
        body = fm.requests["ombench"][-1]["body"]
    assert sampling(body) == sampling(RUNNER[preset])
    assert ("temperature" in body) == (preset == "mastra_gpt4o")
