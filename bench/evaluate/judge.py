"""The LongMemEval judge: official template choice, call parameters and answer parsing (spec §4.2–§4.3)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench.evaluate.judge_templates import load_templates, template_name
from om_core.llm import ChatModel, Completion

OFFICIAL_JUDGE = "gpt-4o-2024-08-06"
# Official short names used in `.eval-results-<short>` file suffixes.
JUDGE_SHORT = {"gpt-4o-2024-08-06": "gpt-4o", "gpt-4o-mini-2024-07-18": "gpt-4o-mini"}


def judge_short_name(model: str) -> str:
    name = model.split("/")[-1]
    return JUDGE_SHORT.get(name, name)


def parse_official(reply: str) -> bool:
    """The official rule: 'yes' anywhere in the reply (so 'No, ... yes' counts as yes)."""
    return "yes" in reply.strip().lower()


def parse_strict(reply: str) -> bool:
    return reply.strip().lower().startswith("yes")


@dataclass
class Judgment:
    label: bool  # official parse, majority over repeats
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
    ) -> None:
        """`role` labels its calls (`second_judge` for judge.second_model, so cost and latency tell them apart)."""
        if repeats < 1:
            raise ValueError(f"judge repeats must be >= 1, got {repeats}")
        self.model = model
        self.source = source
        self.templates = load_templates(source, official_repo)
        self.repeats = repeats
        self.model_name = model_name
        self.role = role

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
            results.append((raw, parse_official(raw)))
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
