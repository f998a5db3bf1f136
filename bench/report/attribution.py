"""Where the gold answer went, for one question of one run, from what the store holds (the gold answer, the memory
view at question time, the Actor's question-time prompt): did it reach memory, survive every reflection to
question time, and appear in the Actor's prompt; and, for a wrong answer, the likely cause.

The matching rule (docs/results.md, "Where the answer went"): the gold answer's terms are its lower-cased words and
numbers less a short list of function words; a text holds the answer when it contains at least two thirds of
those terms (all of them when there are one or two) as whole words. An answer with no term (a bare "yes"), an
abstention question and a rubric (no single answer) are not attributable.

Causes of a wrong answer: `missed by the reader` (the answer was in the Actor's prompt), `lost in reflection` (it
reached an earlier memory generation but not the memory at question time, and not the prompt), `not in the
prompt` (it never reached the prompt: memory lost it, or the answer is derived rather than said, as counts and
date arithmetic are: the rule cannot tell these apart). In a long prompt a short answer's terms (a bare number)
may occur by chance: `in_prompt` is then an upper bound.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

_WORD = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*")
STOP = frozenset("""a an and are as at be but by for from has have i in is it its my of on or our she that the their
them they this to was we were with you your he his her me not no yes also""".split())
ACTIVE_KINDS = frozenset({"observations", "buffered", "buffered_reflection", "working_memory"})  # OM at question time
MISSED, LOST_REFLECTION, NOT_IN_PROMPT = "missed by the reader", "lost in reflection", "not in the prompt"


def answer_terms(answer: str) -> list[str]:
    """The gold answer's terms (lower-cased words and numbers, function words left out), in order, unique."""
    seen: dict[str, None] = {}
    for w in _WORD.findall(answer.lower()):
        if w not in STOP and (len(w) > 1 or w.isdigit()):
            seen.setdefault(w, None)
    return list(seen)


def holds(text: str, terms: Sequence[str]) -> bool:
    """Whether `text` holds an answer of these terms (see the module's matching rule)."""
    if not terms or not text:
        return False
    words = set(_WORD.findall(text.lower()))
    found = sum(t in words for t in terms)
    need = len(terms) if len(terms) <= 2 else -(-2 * len(terms) // 3)
    return found >= need


@dataclass(frozen=True)
class Attribution:
    attributable: bool
    reached_memory: bool | None = None  # None: the strategy keeps no memory view
    survived: bool | None = None  # in the memory at question time (OM: active log, buffered, working memory)
    in_prompt: bool | None = None  # None: the Actor's prompt text was not stored
    cause: str | None = None  # for a wrong answer: MISSED, LOST_REFLECTION or NOT_IN_PROMPT
    holding: tuple[int, ...] = ()  # item_idx of the memory rows that hold the answer


def attribute(gold: str | None, label: bool | None, memory: Iterable[tuple[int, str, str]],
              prompt: str | None, *, attributable: bool = True) -> Attribution:
    """`memory`: (item_idx, kind, text) rows of the memory view; `prompt`: the Actor's question-time prompt text
    (None when not stored); `attributable`: False for questions the benchmark says have no single answer (an
    abstention, a rubric)."""
    terms = answer_terms(gold or "")
    if not attributable or not terms:
        return Attribution(False)
    rows = list(memory)
    holding = tuple(i for i, _, text in rows if holds(text, terms))
    reached = bool(holding) if rows else None
    survived = any(k in ACTIVE_KINDS for i, k, _ in rows if i in holding) if rows else None
    in_prompt = None if prompt is None else holds(prompt, terms)
    cause = None
    if label is False and in_prompt is not None:
        cause = MISSED if in_prompt else (LOST_REFLECTION if reached and not survived else NOT_IN_PROMPT)
    return Attribution(True, reached, survived, in_prompt, cause, holding)


def attribution_table(samples: Any, memory: Any, prompts: dict[tuple[str, str], str],
                      single_answer: Any = None) -> Any:
    """One row per judged question: run_key, question_id, attributable, reached_memory, survived, in_prompt, cause
    (a DataFrame). `samples`: run_key, question_id, question_type, is_abstention, label, gold_answer; `memory`:
    run_key, question_id, item_idx, kind, text; `single_answer(question_id, question_type)`: the benchmark's rule."""
    import pandas as pd

    mem: dict[tuple[str, str], list[tuple[int, str, str]]] = {}
    for r in memory.itertuples():
        mem.setdefault((r.run_key, r.question_id), []).append((int(r.item_idx), str(r.kind), str(r.text)))
    rows = []
    for s in samples.itertuples():
        if pd.isna(s.label):  # unjudged (an error): None, NaN or pd.NA (a nullable column of only nulls)
            continue
        key = (s.run_key, s.question_id)
        ok = not bool(s.is_abstention) and (single_answer is None or single_answer(s.question_id, s.question_type))
        a = attribute(s.gold_answer if isinstance(s.gold_answer, str) else None, bool(s.label), mem.get(key, []),
                      prompts.get(key), attributable=ok)
        rows.append({"run_key": s.run_key, "question_id": s.question_id, "label": bool(s.label),
                     "attributable": a.attributable, "reached_memory": a.reached_memory, "survived": a.survived,
                     "in_prompt": a.in_prompt, "cause": a.cause})
    return pd.DataFrame(rows, columns=["run_key", "question_id", "label", "attributable", "reached_memory",
                                       "survived", "in_prompt", "cause"])
