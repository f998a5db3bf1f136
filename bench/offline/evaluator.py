"""Offline evaluator (decay's `evaluator` role): reads the memories back from the request and scores each with
seed 004's keyword and source rules, answering the JSON the request asks for. Deterministic; a dry-run
stand-in, not an LLM: with it, `evaluator: model` gives the scores of `evaluator: rules` plus the calls.

The request format belongs to the strategy (`bench.strategies.decay_evaluator`): this handler reads it with
that module's read-back function, so a change of the request is followed or fails the contract test."""

from __future__ import annotations

from typing import Any

from bench.offline.reader import text_of
from bench.strategies.decay_evaluator import items_from_request, render_scores, rule_scores


def evaluate(messages: list[dict[str, Any]]) -> str:
    """`{"memories": [{"id", "importance", "volatility", "entities"}, ...]}` for every memory in the request
    (an empty list when it holds none)."""
    text = "\n".join(text_of(m) for m in messages if m.get("role") == "user")
    return render_scores({i: rule_scores(content, source) for i, source, content in items_from_request(text)})
