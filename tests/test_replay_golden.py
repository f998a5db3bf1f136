"""Speed-ups change nothing: the first 5 LongMemEval_S questions replayed through every strategy of `ombench perf`
(offline engine, openai/anthropic/vllm simulators) give the same Actor prompts, background requests, turn rows
(events, token counts, cache results), question-time prompt, om_core output verdicts and exported memory (OM's
observations) as the golden digests in tests/golden/replay.json, computed before the replay speed-ups
(`python -m tests.helpers.replay_digest --write` regenerates them when a change is meant to alter replays)."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.helpers.replay_digest import GOLDEN, QUESTIONS, STRATEGIES, compute
from tests.helpers.strategies import s_dataset

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_replay_is_byte_identical_to_the_golden_digests(strategy: str) -> None:
    want = json.loads(GOLDEN.read_text())[strategy]
    got = asyncio.run(compute(s_dataset().instances[:QUESTIONS], [strategy]))[strategy]
    assert sorted(got) == sorted(want), "the golden file covers other questions: regenerate it on purpose"
    for qid, parts in want.items():
        for part, digest in parts.items():
            assert got[qid][part] == digest, f"{strategy} {qid}: {part} changed"
