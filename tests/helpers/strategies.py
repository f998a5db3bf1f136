"""Strategy-test helpers: hand-made views, a strategy context, a scripted model, the real LongMemEval_S once."""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bench.benchmarks.longmemeval.dates import format_lme_date
from bench.data.schema import InstanceView, ViewSession, ViewTurn
from bench.records import CallRecord, record_call
from bench.strategies import StrategyContext
from om_core.llm import Completion, Usage
from om_core.tokens import default_counter


def make_view(sessions: list[list[tuple[str, str]]], start: datetime = datetime(2023, 5, 1, 10, 0), *,
              question: str = "What did I say?", gap_days: int = 1) -> InstanceView:
    """One session per list of (role, content); sessions `gap_days` apart, labels s0, s1, ..."""
    out = []
    for i, turns in enumerate(sessions):
        d = start + timedelta(days=i * gap_days)
        out.append(ViewSession(f"s{i}", d, format_lme_date(d), tuple(ViewTurn(r, c) for r, c in turns)))
    qd = start + timedelta(days=len(sessions) * gap_days)
    return InstanceView(question, qd, format_lme_date(qd), tuple(out))


def chat(n: int, tag: str, words: int = 5) -> list[tuple[str, str]]:
    """n user+assistant pairs whose text names `tag` (so retrieval can find them)."""
    out = []
    for k in range(n):
        out.append(("user", f"{tag} question {k}: " + " ".join(f"{tag}{j}" for j in range(words))))
        out.append(("assistant", f"{tag} answer {k}: " + " ".join(f"word{j}" for j in range(words))))
    return out


class ScriptedModel:
    """A ChatModel returning `reply(messages)` and recording each call like the gateway does."""

    def __init__(self, role: str, reply: Any = None) -> None:
        self.role = role
        self.reply = reply or (lambda msgs: f"{role} reply {len(self.calls)}")
        self.calls: list[list[dict[str, Any]]] = []

    async def complete(self, messages: list[dict[str, Any]], **params: Any) -> Completion:
        self.calls.append(messages)
        text = self.reply(messages)
        c = default_counter()
        n = sum(len(c.encode(str(m["content"]))) for m in messages)
        record_call(CallRecord(role=params.get("role", self.role), model=f"scripted/{self.role}",
                               prompt_tokens=n, completion_tokens=len(c.encode(text)), messages=list(messages)))
        return Completion(text=text, usage=Usage(prompt_tokens=n), model=f"scripted/{self.role}")


def make_ctx(*, max_input_tokens: int = 128000, output_budget: int = 800, system_prompt: str = "You are a helpful assistant.",
             models: dict[str, Any] | None = None, embed: Any = None) -> StrategyContext:
    return StrategyContext(
        models=models or {r: ScriptedModel(r) for r in ("observer", "reflector", "summarizer")},
        embed=embed,
        counter=default_counter(),
        actor_model="gpt-4o",
        max_input_tokens=max_input_tokens,
        output_budget=output_budget,
        system_prompt=system_prompt,
        resource_id="r-test",
    )


def seg_digests(prompt) -> list[str]:
    return [s.digest for s in prompt.segments]


def _shape(seg):
    return (seg.role, seg.text, seg.key, seg.message_index)  # breakpoints move to the last message each turn


def is_prefix(a, b) -> bool:
    """Prompt a's segments are a prefix of prompt b's (same roles, texts, keys and message grouping)."""
    return len(b.segments) >= len(a.segments) and all(_shape(x) == _shape(y) for x, y in zip(a.segments, b.segments))


# ---- real data ----------------------------------------------------------------------------------------

_S_CACHE: dict[str, Any] = {}


def s_dataset():
    """LongMemEval_S, loaded at most once per test session; skips without LONGMEMEVAL_DATA_DIR."""
    folder = os.environ.get("LONGMEMEVAL_DATA_DIR")
    if not folder or not (Path(folder) / "longmemeval_s_cleaned_498.json.xz").exists():
        pytest.skip("real LongMemEval_S needs LONGMEMEVAL_DATA_DIR (a folder with longmemeval_s_cleaned_498.json.xz)")
    if "s" not in _S_CACHE:
        from bench.benchmarks.longmemeval.loader import load_dataset

        _S_CACHE["s"] = load_dataset("longmemeval_s", folder)
    return _S_CACHE["s"]


def offline_models() -> dict[str, Any]:
    """The offline engine's observer/reflector/summarizer through the real gateway (rule-based, no network)."""
    from bench.perf import offline_gateway

    gw = offline_gateway()
    return {r: gw.model(r) for r in ("observer", "reflector", "summarizer")}
