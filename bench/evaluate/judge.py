"""The LongMemEval judge: official template choice, call parameters and answer parsing (LongMemEval:
xiaowu0162/LongMemEval src/evaluation/evaluate_qa.py)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from bench.errors import ConfigError

from bench.benchmarks.longmemeval.judge_templates import TemplateSet, resolve_templates, template_name
from om_core.llm import ChatModel, Completion

OFFICIAL_JUDGE = "gpt-4o-2024-08-06"
# Official short names used in `.eval-results-<short>` file suffixes (evaluate_qa.py's model_zoo).
JUDGE_SHORT = {"gpt-4o-2024-08-06": "gpt-4o", "gpt-4o-mini-2024-07-18": "gpt-4o-mini"}


def judge_short_name(model: str) -> str:
    """The `.eval-results-<short>` suffix: the official short name, else the model's last path part."""
    name = model.split("/")[-1]
    return JUDGE_SHORT.get(name, name)


def official_model_name(model: str) -> str:
    """The name the official scripts write and assert (`gpt-4o-2024-08-06`): the OpenAI model id without
    litellm's `openai/` routing prefix. Other providers' names stay whole (they are not the official judge)."""
    return model.split("/", 1)[1] if model.startswith("openai/") else model


def parse_official(reply: str) -> bool:
    """The official rule (evaluate_qa.py): 'yes' anywhere in the reply (so 'No, ... yes' counts as yes)."""
    return "yes" in reply.strip().lower()


def parse_strict(reply: str) -> bool:
    return reply.strip().lower().startswith("yes")


def parse_mastra(reply: str) -> bool:
    """Mastra's rule (explorations/longmemeval/src/evaluation/longmemeval-metric.ts): the trimmed, lower-cased
    reply is "yes" or starts with "yes." (so "Yes, it is correct" counts as no)."""
    text = reply.strip().lower()
    return text == "yes" or text.startswith("yes.")


# judge.parse -> (rule, what it means in one phrase)
PARSE_RULES: dict[str, tuple[Callable[[str], bool], str]] = {
    "official": (parse_official, "official: 'yes' anywhere in the reply"),
    "mastra": (parse_mastra, "mastra: the reply is 'yes' or starts with 'yes.'"),
}


def parse_rule(name: str) -> Callable[[str], bool]:
    try:
        return PARSE_RULES[name][0]
    except KeyError:
        raise ConfigError(f"judge.parse={name!r}: use one of {', '.join(PARSE_RULES)}") from None


def judge_protocol(templates: TemplateSet, parse: str) -> dict[str, str]:
    """{templates: where the text came from, templates_sha256, parse: the rule in one phrase}."""
    return {"templates": templates.describe(), "templates_sha256": templates.sha256, "source": templates.source,
            "parse": PARSE_RULES[parse][1] if parse in PARSE_RULES else parse}


@dataclass
class Judgment:
    label: bool  # the configured parse rule (official by default), majority over repeats
    label_strict: bool
    disagree: bool  # official and strict parses differ
    raw: str
    template: str  # name of the rule set used
    repeats: list[tuple[str, bool]] = field(default_factory=list)  # (raw, official label) per call
    agreement: float | None = None  # share of repeats agreeing with `label`; None for a single call
    model: str = OFFICIAL_JUDGE
    completions: list[Completion] = field(default_factory=list)


class Judge:
    def __init__(
        self,
        model: ChatModel,
        *,
        source: str = "builtin",
        official_repo: Path | str | None = None,
        repeats: int = 1,
        model_name: str = OFFICIAL_JUDGE,
        role: str = "judge",
        parse: str = "official",
        ask_reason: bool = False,
        template_set: TemplateSet | None = None,
    ) -> None:
        """`role` labels its calls (`second_judge` for judge.second_model, so cost and latency tell them apart)."""
        if repeats < 1:
            raise ValueError(f"judge repeats must be >= 1, got {repeats}")
        self.model = model
        self.source = source
        self.template_set = template_set or resolve_templates(source, official_repo, ask_reason=ask_reason)
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
        name = template_name(question_id, question_type)
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
