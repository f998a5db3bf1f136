"""An LLM judge: one template per question (chosen by the benchmark), call parameters, the parse rule of its reply,
repeats with a majority label. What the templates say and which one a question gets are the benchmark's
(`bench.benchmarks`; LongMemEval: xiaowu0162/LongMemEval src/evaluation/evaluate_qa.py).

Parse rules are a plug-in kind (`PARSE_RULES`, one `bench.registry.Registry`): `judge.parse` names one.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from bench.errors import ConfigError
from bench.evaluate.templates import TemplateSet
from bench.registry import Registry
from om_core import ChatModel, Completion

if TYPE_CHECKING:
    from bench.benchmarks.base import Benchmark


def parse_official(reply: str) -> bool:
    """LongMemEval's official rule (evaluate_qa.py): 'yes' anywhere in the reply (so 'No, ... yes' counts as yes)."""
    return "yes" in reply.strip().lower()


def parse_strict(reply: str) -> bool:
    return reply.strip().lower().startswith("yes")


def parse_mastra(reply: str) -> bool:
    """Mastra's rule (explorations/longmemeval/src/evaluation/longmemeval-metric.ts): the trimmed, lower-cased
    reply is "yes" or starts with "yes." (so "Yes, it is correct" counts as no)."""
    text = reply.strip().lower()
    return text == "yes" or text.startswith("yes.")


@dataclass(frozen=True)
class ParseRule:
    """A judge reply -> label rule, and what it means in one phrase (the run's digest and manifest say it)."""

    parse: Callable[[str], bool]
    meaning: str


# judge.parse -> its rule
PARSE_RULES: Registry[ParseRule] = Registry("judge parse rule", {
    "official": ParseRule(parse_official, "official: 'yes' anywhere in the reply"),
    "mastra": ParseRule(parse_mastra, "mastra: the reply is 'yes' or starts with 'yes.'"),
}, key="judge.parse")


def parse_rule(name: str) -> Callable[[str], bool]:
    """The rule registered as `name`. Raises ConfigError (one line naming judge.parse and the rules)."""
    if name not in PARSE_RULES:
        raise ConfigError(f"judge.parse={name!r}: use one of {', '.join(PARSE_RULES.names())}")
    return PARSE_RULES.get(name).parse


def parse_meaning(name: str) -> str:
    return PARSE_RULES.get(name).meaning if name in PARSE_RULES else name


def judge_protocol(templates: TemplateSet, parse: str) -> dict[str, str]:
    """{templates: where the text came from, templates_sha256, parse: the rule in one phrase}."""
    return {"templates": templates.describe(), "templates_sha256": templates.sha256, "source": templates.source,
            "parse": parse_meaning(parse)}


def _longmemeval() -> Benchmark:
    from bench.benchmarks import get_benchmark

    return get_benchmark("longmemeval")


@dataclass
class Judgment:
    label: bool  # the configured parse rule (official by default), majority over repeats
    label_strict: bool
    disagree: bool  # official and strict parses differ
    raw: str
    template: str  # name of the rule set used
    repeats: list[tuple[str, bool]] = field(default_factory=list)  # (raw, official label) per call
    agreement: float | None = None  # share of repeats agreeing with `label`; None for a single call
    model: str = ""
    completions: list[Completion] = field(default_factory=list)
    members: list[tuple[str, Judgment]] = field(default_factory=list)  # a panel's: (model, that judge's verdict)


class Judge:
    def __init__(
        self,
        model: ChatModel,
        *,
        source: str = "builtin",
        official_repo: Path | str | None = None,
        repeats: int = 1,
        model_name: str = "",
        role: str = "judge",
        parse: str = "official",
        ask_reason: bool = False,
        template_set: TemplateSet | None = None,
        benchmark: Benchmark | None = None,
    ) -> None:
        """`role` labels its calls (`second_judge` for judge.second_model, so cost and latency tell them apart).
        `benchmark` (default LongMemEval) chooses each question's template and, unless `template_set` is given
        (resolved once for a job), resolves the templates of `source`."""
        if repeats < 1:
            raise ValueError(f"judge repeats must be >= 1, got {repeats}")
        self.benchmark = benchmark or _longmemeval()
        self.model = model
        self.source = source
        self.template_set = template_set or self.benchmark.judge_templates(
            source, None if official_repo is None else str(official_repo), ask_reason=ask_reason)
        self.templates = self.template_set.texts
        self.repeats = repeats
        self.model_name = model_name
        self.role = role
        self.parse_name = parse
        self.parse = parse_rule(parse)

    def protocol(self) -> dict[str, str]:
        """What produced the labels, for the run's manifest and summary (see `judge_protocol`)."""
        return judge_protocol(self.template_set, self.parse_name)

    def prompt(self, question_id: str, question_type: str, question: str, answer: str | int, hypothesis: str) -> tuple[str, str]:
        name = self.benchmark.template_for(question_id, question_type)
        text = self.templates[name].format(question=question, answer=answer, response=hypothesis)
        return name, text

    async def judge(
        self, question_id: str, question_type: str, question: str, answer: str | int, hypothesis: str
    ) -> Judgment:
        name, text = self.prompt(question_id, question_type, question, answer, hypothesis)
        messages = [{"role": "user", "content": text}]  # one user message, no system prompt (official)
        results: list[tuple[str, bool]] = []
        completions: list[Completion] = []
        for _ in range(self.repeats):
            c = await self.model.complete(messages, temperature=0, max_tokens=10, role=self.role)
            raw = c.text.strip()
            results.append((raw, self.parse(raw)))
            completions.append(c)
        counts = Counter(lbl for _, lbl in results)
        first = results[0][1]
        label = first if counts[first] * 2 >= len(results) else not first  # majority; ties -> first call
        raw = next(r for r, lbl in results if lbl == label)
        strict = parse_strict(raw)
        return Judgment(
            label=label,
            label_strict=strict,
            disagree=label != strict,
            raw=raw,
            template=name,
            repeats=results,
            agreement=(counts[label] / len(results)) if self.repeats > 1 else None,
            model=(completions[0].model or self.model_name),
            completions=completions,
        )


PANEL_RULE = "strict majority: yes only when more than half of the judges say yes (a tie is no)"


def strict_majority(labels: list[bool]) -> bool:
    """True when more than half of `labels` are True (a tie, or no labels, is False)."""
    return sum(bool(x) for x in labels) * 2 > len(labels)


class JudgePanel:
    """Several judges (`Judge`s: the same templates and parse rule, different models) on every question. The verdict
    is their strict majority (`PANEL_RULE`); each judge's verdict is kept in `Judgment.members`. Model errors
    propagate (the question is stored with the error and computed again on the next run)."""

    def __init__(self, members: list[Judge]) -> None:
        if len(members) < 2:
            raise ValueError(f"a judge panel needs at least two judges, got {len(members)}")
        self.members = members
        self.template_set = members[0].template_set
        self.model_name = members[0].model_name
        self.models = [m.model_name for m in members]

    def protocol(self) -> dict[str, str]:
        return {**self.members[0].protocol(), "panel": ", ".join(self.models), "panel_rule": PANEL_RULE}

    async def judge(
        self, question_id: str, question_type: str, question: str, answer: str | int, hypothesis: str
    ) -> Judgment:
        import asyncio

        got = await asyncio.gather(*(m.judge(question_id, question_type, question, answer, hypothesis)
                                     for m in self.members))
        label = strict_majority([g.label for g in got])
        strict = strict_majority([g.label_strict for g in got])
        yes = sum(g.label for g in got)
        raw = f"panel {yes}/{len(got)} yes -> {'yes' if label else 'no'} (strict majority): " + \
            " | ".join(f"{name}: {g.raw}" for name, g in zip(self.models, got))
        return Judgment(
            label=label, label_strict=strict, disagree=label != strict, raw=raw, template=got[0].template,
            repeats=[(g.raw, g.label) for g in got],
            agreement=sum(g.label == label for g in got) / len(got),
            model=self.model_name, completions=[c for g in got for c in g.completions],
            members=list(zip(self.models, got)),
        )
