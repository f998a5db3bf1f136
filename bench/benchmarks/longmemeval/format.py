"""Raw LongMemEval dicts -> validated Instances, with one-line errors naming file, question and field.

Strict about what would silently corrupt a run (missing or mistyped fields, parallel lists of different
lengths, unparseable dates, unknown roles or question types); lenient about the quirks the official files
really have (integer answers, turns without `has_answer`, empty contents, sessions opening with the
assistant or not alternating, unsorted dates, duplicate session ids).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bench.benchmarks.longmemeval.dates import format_lme_date, parse_any_date
from bench.data.schema import Instance, Session, Turn
from bench.benchmarks.longmemeval.rules import QUESTION_TYPES
from bench.errors import DataError

ROLES = ("user", "assistant")
# Key order of the S/M (cleaned) files; the oracle file orders them differently, which is harmless.
RAW_KEYS = (
    "question_id",
    "question_type",
    "question",
    "question_date",
    "answer",
    "answer_session_ids",
    "haystack_dates",
    "haystack_session_ids",
    "haystack_sessions",
)


@dataclass
class ParseStats:
    """What a file held that the official format does not: ISO-8601 dates (accepted, reported as non-official)."""

    iso_dates: int = 0
    iso_example: str = ""

    def notes(self) -> tuple[str, ...]:
        if not self.iso_dates:
            return ()
        return (f"non-official date format: {self.iso_dates} dates are ISO-8601 (e.g. {self.iso_example!r}), not "
                "LongMemEval's 'YYYY/MM/DD (Ddd) HH:MM'; accepted and shown to the models in the official format",)


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


class _Checker:
    """Builds the one-line messages for one question of one file."""

    def __init__(self, source: str, qid: str, stats: ParseStats | None = None) -> None:
        self.source = source
        self.qid = qid
        self.stats = stats

    def fail(self, field: str, problem: str, fix: str) -> DataError:
        return DataError(f"{self.source}: question {self.qid}: field '{field}' {problem}; {fix}")

    def get(self, raw: dict[str, Any], field: str, kind: type | tuple[type, ...], what: str) -> Any:
        if field not in raw:
            raise self.fail(field, "is missing", f"add it ({what})")
        value = raw[field]
        # bool is an int subclass; a boolean answer or has_answer-like slip must not pass as a number
        if not isinstance(value, kind) or isinstance(value, bool):
            raise self.fail(field, f"has type {_type_name(value)}", f"it must be {what}")
        return value

    def date(self, field: str, text: Any) -> tuple[datetime, str]:
        """(datetime, its stamp in the official format): an ISO-8601 stamp is accepted, rewritten in the
        official format (the prompts show dates as the official files write them) and counted."""
        if not isinstance(text, str):
            raise self.fail(field, f"has type {_type_name(text)}", "it must be a string 'YYYY/MM/DD (Ddd) HH:MM'")
        try:
            dt, official = parse_any_date(text)
        except ValueError as exc:
            raise self.fail(field, f"is not a valid date: {exc}", "write it as e.g. '2023/05/30 (Tue) 23:40'") from None
        if official:
            return dt, text
        if self.stats is not None:
            self.stats.iso_dates += 1
            self.stats.iso_example = self.stats.iso_example or text
        return dt, format_lme_date(dt)


def parse_instance(raw: Any, source: str, index: int, stats: ParseStats | None = None) -> Instance:
    """One raw question dict -> Instance. `index` names the question when its id itself is broken; `stats`
    counts what was accepted in a non-official form."""
    where = f"#{index}"
    if not isinstance(raw, dict):
        raise DataError(f"{source}: question {where}: is a {_type_name(raw)}, not an object; each question must be a JSON object")
    qid = raw.get("question_id")
    if not isinstance(qid, str) or not qid:
        c = _Checker(source, where)
        raise c.fail("question_id", "is missing or not a non-empty string", "give every question a string id")
    c = _Checker(source, qid, stats)
    qtype = c.get(raw, "question_type", str, "one of " + ", ".join(QUESTION_TYPES))
    if qtype not in QUESTION_TYPES:
        raise c.fail("question_type", f"is {qtype!r}", "use one of " + ", ".join(QUESTION_TYPES) + " (abstention is marked by '_abs' in the id)")
    question = c.get(raw, "question", str, "a string")
    answer = c.get(raw, "answer", (str, int), "a string or an integer")
    qdate_str = c.get(raw, "question_date", str, "a string 'YYYY/MM/DD (Ddd) HH:MM'")
    qdate, qdate_str = c.date("question_date", qdate_str)
    dates = c.get(raw, "haystack_dates", list, "a list of date strings, one per session")
    sids = c.get(raw, "haystack_session_ids", list, "a list of session id strings, one per session")
    sessions_raw = c.get(raw, "haystack_sessions", list, "a list of sessions (lists of turns)")
    answer_ids = c.get(raw, "answer_session_ids", list, "a list of session id strings")
    if not (len(dates) == len(sids) == len(sessions_raw)):
        raise c.fail(
            "haystack_dates",
            f"has {len(dates)} entries but haystack_session_ids has {len(sids)} and haystack_sessions {len(sessions_raw)}",
            "the three haystack lists are parallel and must have the same length",
        )
    sessions: list[Session] = []
    for i, (date_str, sid, turns_raw) in enumerate(zip(dates, sids, sessions_raw)):
        if not isinstance(sid, str):
            raise c.fail(f"haystack_session_ids[{i}]", f"has type {_type_name(sid)}", "session ids must be strings")
        date, date_str = c.date(f"haystack_dates[{i}]", date_str)
        if not isinstance(turns_raw, list):
            raise c.fail(f"haystack_sessions[{i}]", f"has type {_type_name(turns_raw)}", "each session must be a list of turns")
        turns = tuple(_parse_turn(c, i, j, t) for j, t in enumerate(turns_raw))
        sessions.append(Session(session_id=sid, date=date, date_str=date_str, turns=turns))
    known = set(sids)
    for k, aid in enumerate(answer_ids):
        if not isinstance(aid, str):
            raise c.fail(f"answer_session_ids[{k}]", f"has type {_type_name(aid)}", "session ids must be strings")
        if aid not in known:
            raise c.fail(f"answer_session_ids[{k}]", f"names {aid!r}, which is not in haystack_session_ids", "list only sessions of this haystack")
    return Instance(
        question_id=qid,
        question_type=qtype,
        question=question,
        answer=answer,
        question_date=qdate,
        question_date_str=qdate_str,
        sessions=tuple(sessions),
        answer_session_ids=tuple(answer_ids),
    )


def _parse_turn(c: _Checker, i: int, j: int, raw: Any) -> Turn:
    field = f"haystack_sessions[{i}][{j}]"
    if not isinstance(raw, dict):
        raise c.fail(field, f"has type {_type_name(raw)}", "each turn must be an object with 'role' and 'content'")
    role = raw.get("role")
    if role not in ROLES:
        raise c.fail(f"{field}.role", f"is {role!r}", "use 'user' or 'assistant'")
    content = raw.get("content")
    if not isinstance(content, str):
        raise c.fail(f"{field}.content", f"has type {_type_name(content)}", "turn content must be a string (it may be empty)")
    has_answer = raw.get("has_answer")
    if has_answer is not None and not isinstance(has_answer, bool):
        raise c.fail(f"{field}.has_answer", f"has type {_type_name(has_answer)}", "it must be true, false or absent")
    return Turn(role=role, content=content, has_answer=has_answer)


def parse_instances(raw: Any, source: str, stats: ParseStats | None = None) -> list[Instance]:
    """A whole file's questions; ids must be unique (results and judgments are keyed by them)."""
    if not isinstance(raw, list):
        raise DataError(f"{source}: the file holds a JSON {_type_name(raw)}, not an array of questions; use the LongMemEval .json (array) or .jsonl (one question per line) format")
    if not raw:
        raise DataError(f"{source}: the file holds no questions; point at a LongMemEval file with at least one question")
    check_first_entry(raw[0], source)
    out: list[Instance] = []
    seen: set[str] = set()
    for index, item in enumerate(raw):
        inst = parse_instance(item, source, index, stats)
        if inst.question_id in seen:
            raise DataError(f"{source}: question {inst.question_id}: field 'question_id' is duplicated; every question id must be unique")
        seen.add(inst.question_id)
        out.append(inst)
    return out


def check_first_entry(first: Any, source: str) -> None:
    """Refuse a file of another benchmark by its first entry (a dict with none of LongMemEval's keys)."""
    if isinstance(first, dict) and not {"question_id", "haystack_sessions", "question"} & set(first):
        keys = ", ".join(sorted(map(str, first))[:6])
        raise DataError(f"{source}: not LongMemEval: its first entry has none of question_id, question, "
                        f"haystack_sessions (it has {keys}); give a LongMemEval file or the matching benchmark "
                        "(dataset.benchmark=...)")


def instance_to_raw(inst: Instance) -> dict[str, Any]:
    """Back to the file format (S key order); `has_answer` is written only where the source had it."""

    def turn(t: Turn) -> dict[str, Any]:
        d: dict[str, Any] = {"role": t.role, "content": t.content}
        if t.has_answer is not None:
            d["has_answer"] = t.has_answer
        return d

    return {
        "question_id": inst.question_id,
        "question_type": inst.question_type,
        "question": inst.question,
        "question_date": inst.question_date_str,
        "answer": inst.answer,
        "answer_session_ids": list(inst.answer_session_ids),
        "haystack_dates": [s.date_str for s in inst.sessions],
        "haystack_session_ids": [s.session_id for s in inst.sessions],
        "haystack_sessions": [[turn(t) for t in s.turns] for s in inst.sessions],
    }
