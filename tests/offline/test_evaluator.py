"""The offline evaluator (decay's `evaluator` role played by rule, not an LLM): it reads the strategy's request
back with the strategy's own read-back function and answers with seed 004's rules, deterministically."""

from __future__ import annotations

import json

from bench.offline import run_role
from bench.strategies.decay_evaluator import evaluator_request, parse_scores, render_scores, rule_scores

VOLATILE = "The weather is lovely today and I am temporarily staying at a hostel right now."
IMPORTANT = "My name is Dana, I am allergic to peanuts and I always prefer green tea."


def test_offline_evaluator_is_the_rule_evaluator_and_deterministic():
    req = evaluator_request([(7, "user", "2023/05/01", IMPORTANT), (8, "assistant", "2023/05/01", VOLATILE)])
    out = run_role("evaluator", req)
    assert out == run_role("evaluator", json.loads(json.dumps(req)))
    got, problem = parse_scores(out, [7, 8])
    assert problem is None
    assert got == {7: rule_scores(IMPORTANT, "user"), 8: rule_scores(VOLATILE, "assistant")}
    assert out == render_scores(got)
    assert json.loads(run_role("evaluator", [{"role": "user", "content": "warm up"}])) == {"memories": []}
