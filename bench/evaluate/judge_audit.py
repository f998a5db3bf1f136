"""Audit a judge: feed it probes (deliberately wrong but on-topic answers, and correct restatements, built by the
benchmark: `Benchmark.judge_probes`) and measure how often it accepts a wrong answer (false-positive rate) and
rejects a right one (false-negative rate), overall and per question type, with Wilson 95% intervals.

A judge with a high false-positive rate inflates every accuracy it reports: `AuditResult.verdict` says so."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Sequence

from bench.evaluate.metrics import wilson

FP_WARN = 0.10  # a judge accepting more than this share of wrong answers is flagged


@dataclass
class Rate:
    """`hits` of `n` probes (accepted wrong answers, or rejected right ones) and its Wilson 95% interval."""

    hits: int = 0
    n: int = 0

    @property
    def rate(self) -> float:
        return self.hits / self.n if self.n else float("nan")

    def ci(self) -> tuple[float, float]:
        return wilson(self.hits, self.n)

    def text(self) -> str:
        if not self.n:
            return "n/a"
        lo, hi = self.ci()
        return f"{100 * self.rate:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] ({self.hits}/{self.n})"


@dataclass
class AuditResult:
    judge_model: str
    false_positive: Rate = field(default_factory=Rate)  # wrong answers accepted
    false_negative: Rate = field(default_factory=Rate)  # correct answers rejected
    per_type: dict[str, tuple[Rate, Rate]] = field(default_factory=dict)  # type -> (false positive, false negative)
    per_kind: dict[str, Rate] = field(default_factory=dict)  # how a wrong answer was made -> false positives
    accepted_wrong: list[tuple[str, str, str]] = field(default_factory=list)  # (question_id, kind, response)

    @property
    def verdict(self) -> str:
        """One line: whether this judge's accuracy numbers can be trusted as to false positives."""
        fp = self.false_positive
        if not fp.n:
            return "no wrong-answer probes were judged"
        if fp.rate > FP_WARN:
            return (f"UNRELIABLE: {self.judge_model} accepted {fp.hits} of {fp.n} deliberately wrong answers "
                    f"({100 * fp.rate:.0f}%): every accuracy it judges is inflated")
        return f"{self.judge_model} accepted {fp.hits} of {fp.n} deliberately wrong answers ({100 * fp.rate:.0f}%)"

    def to_json(self) -> dict[str, Any]:
        def r(x: Rate) -> dict[str, Any]:
            lo, hi = x.ci() if x.n else (None, None)
            return {"hits": x.hits, "n": x.n, "rate": None if not x.n else x.rate, "ci_low": lo, "ci_high": hi}

        return {"judge_model": self.judge_model, "false_positive": r(self.false_positive),
                "false_negative": r(self.false_negative), "verdict": self.verdict,
                "per_type": {t: {"false_positive": r(a), "false_negative": r(b)} for t, (a, b) in self.per_type.items()},
                "per_kind": {k: r(v) for k, v in self.per_kind.items()},
                "accepted_wrong": [{"question_id": q, "kind": k, "response": t} for q, k, t in self.accepted_wrong]}


async def audit_judge(judge: Any, probes: Sequence[Any], *, concurrency: int = 4) -> AuditResult:
    """Judge every probe (a `bench.benchmarks.longmemeval.judge_probes.Probe`-shaped object) with `judge` (a
    `bench.evaluate.judge.Judge`), at most `concurrency` at a time. Model errors propagate."""
    async def one(p: Any) -> bool:
        j = await judge.judge(p.question_id, p.question_type, p.question, p.answer, p.response)
        return bool(j.label)

    labels: list[bool] = []
    step = max(1, concurrency)
    for i in range(0, len(probes), step):  # bounded: `concurrency` calls in flight
        labels += await asyncio.gather(*(one(p) for p in probes[i:i + step]))
    out = AuditResult(judge_model=getattr(judge, "model_name", "") or "judge")
    for p, accepted in zip(probes, labels):
        fp, fn = out.per_type.setdefault(p.question_type, (Rate(), Rate()))
        if p.should_accept:
            for rate in (out.false_negative, fn):
                rate.n += 1
                rate.hits += int(not accepted)
        else:
            kind = out.per_kind.setdefault(p.kind, Rate())
            for rate in (out.false_positive, fp, kind):
                rate.n += 1
                rate.hits += int(accepted)
            if accepted:
                out.accepted_wrong.append((p.question_id, p.kind, p.response))
    return out
