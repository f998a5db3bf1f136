"""Judge probes for LongMemEval: deliberately wrong but on-topic answers, and correct restatements, built from
real questions, so `ombench judge-audit` can measure how often a judge accepts a wrong answer (false positive)
or rejects a right one (false negative).

Wrong answers keep the gold answer's shape and change what makes it right (in this order, the first that applies):
`_abs` question (unanswerable): a confident concrete answer instead of the abstention; a number in the answer:
another number (a count, an amount, a day of the month, a year); a month or weekday name: another one; yes/no:
the other; a short capitalised answer (a name, a place): another such answer of the same type; otherwise: another
question's gold answer of the same type (a different option). Only the answer's first sentence is changed (LongMemEval
answers may add an alternative that is also accepted). Preference questions (a rubric, not an answer) get a generic
answer that ignores the user. Correct restatements wrap the gold answer (or, for preference, the rubric) in a
sentence. The rules are this project's own; LongMemEval's types and `_abs` convention are from
xiaowu0162/LongMemEval (README, src/evaluation/evaluate_qa.py).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Sequence

from bench.data.schema import Instance

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_WORDS = {w.lower(): i for i, w in enumerate(MONTHS + DAYS)}
PREFERENCE = "single-session-preference"
_GENERIC = ("Here are some popular options many people enjoy; pick whichever you like, since I don't know "
            "anything about your own tastes.")


@dataclass(frozen=True)
class Probe:
    """One judge input: a question, its gold answer and a response the judge should accept or reject."""

    question_id: str
    question_type: str
    question: str
    answer: str
    response: str
    kind: str  # how the response was made: number, month, weekday, yes_no, name, other_option, non_abstention,
    # ignores_preference, restatement
    should_accept: bool


def _other_number(m: re.Match[str]) -> str:
    text = m.group(0)
    if "." in text:
        return f"{float(text) * 2:g}"
    n = int(text.replace(",", ""))
    if "," in text:
        return f"{n * 2:,}"
    return str(n - 1) if n >= 1900 else str(n + 2 if n < 5 else n * 2)  # never off by one (tolerated)


def _swap_word(text: str) -> tuple[str, str] | None:
    for word in re.findall(r"[A-Za-z]+", text):
        i = _WORDS.get(word.lower())
        if i is None:
            continue
        if i < 12:
            return "month", text.replace(word, MONTHS[(i + 4) % 12], 1)
        return "weekday", text.replace(word, DAYS[(i - 12 + 3) % 7], 1)
    return None


def _short_name(text: str) -> bool:
    """A short answer made of capitalised words only (a name, a place, a title): at most four words."""
    words = text.rstrip(".").split()
    return 0 < len(words) <= 4 and all(w[:1].isupper() or not w[:1].isalpha() for w in words)


def wrong_answer(q: Instance, others: Sequence[Instance]) -> tuple[str, str]:
    """(kind, a wrong but on-topic response) for `q`; `others`: questions of the same type to borrow a
    different option from (never one that contains the answer or is contained in it)."""
    answer = str(q.answer).strip()
    if q.question_id.endswith("_abs"):
        return "non_abstention", "Based on what you told me earlier, the answer is 3, from last Tuesday."
    if q.question_type == PREFERENCE:
        return "ignores_preference", _GENERIC
    first = re.split(r"(?<=[.;])\s", answer)[0]  # "5 days. 6 days is also acceptable": the alternative goes
    if _NUMBER.search(first):
        return "number", _NUMBER.sub(_other_number, first, count=1)
    swapped = _swap_word(first)
    if swapped:
        return swapped
    low = answer.lower().rstrip(".")
    if low in ("yes", "no") or low.startswith(("yes,", "no,", "yes ", "no ")):
        return "yes_no", ("No." if low.startswith("yes") else "Yes.")
    pool = [str(o.answer).strip() for o in others
            if answer.lower() not in str(o.answer).lower() and str(o.answer).strip().lower() not in answer.lower()]
    if _short_name(answer):
        names = [x for x in pool if _short_name(x) and not _NUMBER.search(x)]
        if names:
            return "name", names[len(answer) % len(names)]
    if pool:
        return "other_option", pool[len(answer) % len(pool)]
    return "other_option", "Something else entirely, not what we discussed."


def restatement(q: Instance) -> str:
    """A correct response in other words: the gold answer (preference: the rubric) in a sentence."""
    answer = str(q.answer).strip().rstrip(".")
    if q.question_type == PREFERENCE:
        return f"Going by what you've told me before: {answer}."
    return f"From our earlier conversations, the answer is: {answer}."


def judge_probes(questions: Sequence[Instance], n: int, seed: int = 0) -> list[Probe]:
    """Up to `n` questions (every type in proportion, seeded), each giving one wrong and one correct probe."""
    by_type: dict[str, list[Instance]] = {}
    for q in questions:
        by_type.setdefault(q.question_type, []).append(q)
    rng = random.Random(seed)
    chosen: list[Instance] = []
    total = len(questions) or 1
    for _, qs in sorted(by_type.items()):
        k = max(1, round(n * len(qs) / total))
        chosen += rng.sample(qs, min(k, len(qs)))
    chosen = chosen[:n] if n else chosen
    out = []
    for q in chosen:
        kind, wrong = wrong_answer(q, by_type[q.question_type])
        base = dict(question_id=q.question_id, question_type=q.question_type, question=q.question,
                    answer=str(q.answer))
        out.append(Probe(**base, response=wrong, kind=kind, should_accept=False))
        if not q.question_id.endswith("_abs"):
            out.append(Probe(**base, response=restatement(q), kind="restatement", should_accept=True))
        else:  # a correct response to an unanswerable question abstains
            out.append(Probe(**base, response="I don't know: you never told me that, so I can't say.",
                             kind="restatement", should_accept=True))
    return out
