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


async def audit_job(job: Any, ds: Any, gateway: Any, *, n: int, seed: int = 0,
                    concurrency: int = 4) -> tuple[AuditResult, dict[str, Any]]:
    """Audit the judge of an assembled job (`bench.assemble.Job`; its model, templates and parse rule, through
    `gateway`) on probes from `n` questions of the dataset `ds` (0 = all); returns the result and its
    `judge_audits` row.
    Raises ConfigError when the benchmark builds no probes; model errors propagate."""
    from bench.errors import ConfigError
    from bench.evaluate.judge import Judge
    from bench.roles import Role

    probes_of = getattr(job.benchmark, "judge_probes", None)
    if probes_of is None:
        raise ConfigError(f"dataset.benchmark={job.benchmark.name}: this benchmark builds no judge probes")
    probes = probes_of(ds.instances, n, seed)
    j = job.judge
    judge = Judge(gateway.model(Role.JUDGE), template_set=j.templates, model_name=j.model, parse=j.parse,
                  source=j.source, benchmark=job.benchmark)
    result = await audit_judge(judge, probes, concurrency=concurrency)
    row = audit_row(result, judge.protocol(), dataset_name=ds.name, n_requested=n, seed=seed,
                    n_questions=len({p.question_id for p in probes}), offline_engine=j.model.startswith("offline/"))
    return result, row


# --- stored audits (table judge_audits) and the runs they qualify ------------------------------------------------


@dataclass(frozen=True)
class StoredAudit:
    """One stored `ombench judge-audit` result of a judge configuration (model, template text, parse rule)."""

    judge_model: str
    dataset_name: str
    n_questions: int
    false_positive: Rate
    false_negative: Rate
    offline_engine: bool
    audited_at: Any

    @property
    def unreliable(self) -> bool:
        return bool(self.false_positive.n) and self.false_positive.rate > FP_WARN

    def cell(self) -> str:
        """The false-positive rate in a table cell: "7%" or "100%!" (over FP_WARN: unreliable), "n/a"."""
        fp = self.false_positive
        if not fp.n:
            return "n/a"
        return f"{100 * fp.rate:.0f}%" + ("!" if self.unreliable else "")

    def note(self) -> str:
        """One sentence: what the judge accepted, where and when, and whether its accuracy can be trusted."""
        def part(r: Rate) -> str:
            lo, hi = r.ci()
            return f"{r.hits} of {r.n} ({100 * r.rate:.0f}%, 95% CI {100 * lo:.0f}-{100 * hi:.0f}%)" if r.n else "n/a"

        when = str(self.audited_at)[:10] if self.audited_at is not None else "?"
        head = "UNRELIABLE judge: " if self.unreliable else "judge audit: "
        return (f"{head}{self.judge_model} accepted {part(self.false_positive)} deliberately wrong answers, "
                f"rejected {part(self.false_negative)} right ones (`ombench judge-audit`, {when}, "
                f"{self.n_questions} questions of {self.dataset_name}"
                + (", offline engine" if self.offline_engine else "") + ")")


def judge_config(model: str | None, protocol: Any) -> tuple[str, str, str]:
    """The key an audit and a run share: (judge model, sha256 of the template texts, parse rule in one phrase;
    `protocol` is `bench.evaluate.judge.judge_protocol`'s dict, as a run's `extra.judge` keeps it)."""
    p = protocol if isinstance(protocol, dict) else {}
    return (str(model or ""), str(p.get("templates_sha256") or ""), str(p.get("parse") or ""))


def audit_row(result: AuditResult, protocol: dict[str, str], *, dataset_name: str, n_requested: int, seed: int,
              n_questions: int, offline_engine: bool) -> dict[str, Any]:
    """The `judge_audits` row of `result` (`protocol`: `judge_protocol` of the audited judge)."""
    return {"judge_model": result.judge_model, "judge_source": protocol.get("source"),
            "judge_parse": protocol.get("parse"), "templates_sha256": protocol.get("templates_sha256"),
            "dataset_name": dataset_name, "n_requested": n_requested, "seed": seed, "n_questions": n_questions,
            "fp_hits": result.false_positive.hits, "fp_n": result.false_positive.n,
            "fn_hits": result.false_negative.hits, "fn_n": result.false_negative.n, "verdict": result.verdict,
            "result": result.to_json(), "offline_engine": offline_engine, "audited_at": None}


def audits_by_run(runs: Any, audits: Any) -> dict[str, StoredAudit]:
    """run_key -> the stored audit of the judge configuration that judged it (`runs`, `audits`: the `runs` and
    `judge_audits` frames of a results file). The newest audit on the run's own dataset wins, else the newest.
    Runs without a matching audit (or judged by a panel: no single judge's rate qualifies the headline) are left
    out."""
    import json

    if audits is None or len(audits) == 0 or runs is None or len(runs) == 0:
        return {}
    found: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for a in audits.to_dict("records"):  # newest first
        key = (str(a["judge_model"]), str(a["templates_sha256"] or ""), str(a["judge_parse"] or ""))
        found.setdefault(key, []).append(a)
    out: dict[str, StoredAudit] = {}
    for r in runs.to_dict("records"):
        try:
            extra = json.loads(r["extra"]) if isinstance(r.get("extra"), str) else (r.get("extra") or {})
        except ValueError:
            extra = {}
        if not isinstance(extra, dict) or extra.get("judge_panel"):
            continue
        got = found.get(judge_config(r.get("judge_model"), extra.get("judge")))
        if not got:
            continue
        a = next((x for x in got if x["dataset_name"] == r.get("dataset_name")), got[0])
        out[str(r["run_key"])] = StoredAudit(
            judge_model=str(a["judge_model"]), dataset_name=str(a["dataset_name"]),
            n_questions=int(a["n_questions"] or 0), false_positive=Rate(int(a["fp_hits"]), int(a["fp_n"])),
            false_negative=Rate(int(a["fn_hits"]), int(a["fn_n"])), offline_engine=bool(a["offline_engine"]),
            audited_at=a["audited_at"])
    return out
