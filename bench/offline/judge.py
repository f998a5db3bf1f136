"""Offline judge for the LongMemEval templates: replies `yes` or `no` by rule.

Reads `Question:`, `Correct Answer:` / `Rubric:` / `Explanation:` and `Model Response:` from the prompt.
- abstention (an `Explanation:` field or "unanswerable" in the instructions): yes when the response abstains;
- preference (`Rubric:`): yes when enough rubric keywords appear in the response;
- otherwise: yes when the normalised answer is contained in the normalised response (numbers as digits),
  or most of its content words are; numbers must agree (±1 when the template forgives off-by-one).
A crude lexical proxy for an LLM judge, for dry runs only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bench.offline.text import content_words, normalize_answer, numbers_in

_FIELD = re.compile(r"^(Question|Correct Answer|Rubric|Explanation|Model Response):[ \t]*", re.M)
ABSTAIN_PHRASES = (
    "not mentioned", "no information", "don't know", "do not know", "cannot", "can't", "not enough",
    "unable to", "no record", "not provided", "doesn't mention", "does not mention", "not specified",
    "no mention", "isn't mentioned", "is not mentioned", "not available", "did not mention", "didn't mention",
    "not sure", "insufficient", "no details", "not in the", "unknown", "unanswerable", "no data",
)
_RUBRIC_GENERIC = frozenset(content_words(
    "user would prefer preferred response responses suggest suggestion suggestions recommend recommendation "
    "recommendations mention mentioned related like specific specifically utilize utilizing consider "
    "interest interested might could include including personal information previous provide provided "
    "based also may such well especially"))
PREFERENCE_THRESHOLD = 0.3
RECALL_THRESHOLD = 0.8


@dataclass
class JudgeInput:
    question: str = ""
    answer: str = ""
    rubric: str = ""
    explanation: str = ""
    response: str = ""
    instructions: str = ""  # everything outside the fields
    off_by_one: bool = False


def parse_judge_prompt(text: str) -> JudgeInput:
    marks = list(_FIELD.finditer(text))
    ji = JudgeInput(instructions=text[: marks[0].start()] if marks else text)
    for k, m in enumerate(marks):
        end = marks[k + 1].start() if k + 1 < len(marks) else len(text)
        value = text[m.end():end].strip()
        name = m.group(1)
        if name == "Model Response":
            value, tail = _split_instruction_tail(value)
            ji.instructions += "\n" + tail
        setattr(ji, {"Question": "question", "Correct Answer": "answer", "Rubric": "rubric",
                     "Explanation": "explanation", "Model Response": "response"}[name], value)
    ji.off_by_one = "off-by-one" in ji.instructions.lower()
    return ji


def _split_instruction_tail(value: str) -> tuple[str, str]:
    """The response runs up to the closing yes/no instruction paragraph."""
    paras = value.split("\n\n")
    for k in range(len(paras) - 1, 0, -1):
        tail = "\n\n".join(paras[k:])
        if "yes or no" in tail.lower() and len(tail) < 400:
            return "\n\n".join(paras[:k]).strip(), tail
    return value, ""


def abstains(response: str) -> bool:
    low = response.lower().replace("\u2019", "'")
    return any(p in low for p in ABSTAIN_PHRASES)


def rubric_overlap(rubric: str, response: str) -> float:
    keys = set(content_words(rubric)) - _RUBRIC_GENERIC
    if not keys:
        return 0.0
    return len(keys & set(content_words(response))) / len(keys)


def _numbers_agree(answer: str, response: str, off_by_one: bool) -> bool:
    want = numbers_in(answer)
    if not want:
        return True
    have = numbers_in(response)
    tol = 1 if off_by_one and len(want) == 1 else 0
    return all(any(abs(h - w) <= tol for h in have) for w in want)


def answer_matches(answer: str, response: str, off_by_one: bool = False) -> bool:
    na, nr = normalize_answer(answer), normalize_answer(response)
    if not na:
        return False
    if f" {na} " in f" {nr} ":
        return True
    if not _numbers_agree(answer, response, off_by_one):
        return False
    if numbers_in(answer) and off_by_one:
        return True  # the number (±1) was the answer
    want = set(content_words(answer))
    if not want:
        return False
    return len(want & set(content_words(response))) / len(want) >= RECALL_THRESHOLD


def judge(text: str) -> str:
    ji = parse_judge_prompt(text)
    if ji.explanation or "unanswerable" in ji.instructions.lower():
        return "yes" if abstains(ji.response) else "no"
    if ji.rubric:
        return "yes" if rubric_overlap(ji.rubric, ji.response) >= PREFERENCE_THRESHOLD else "no"
    return "yes" if answer_matches(ji.answer, ji.response, ji.off_by_one) else "no"
