"""Benchmark questions as typed, validated objects, and the leak-free view for the system under test.

An `Instance` is one question with the conversation it is asked about (LongMemEval's format: sessions of turns,
dates, `answer_session_ids` as the gold evidence). Questions that share a conversation share its `sessions`
tuple. Which questions are unanswerable, and everything else a benchmark decides, is the benchmark's
(bench.benchmarks)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Turn:
    role: str
    content: str
    has_answer: bool | None = None  # absent on S filler turns


@dataclass(frozen=True)
class Session:
    session_id: str
    date: datetime  # naive; LongMemEval dates carry no zone
    date_str: str  # as in the file: "2023/05/30 (Tue) 23:40"
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Instance:
    question_id: str
    question_type: str
    question: str
    answer: str | int
    question_date: datetime
    question_date_str: str
    sessions: tuple[Session, ...]  # file order (haystack_* lists)
    answer_session_ids: tuple[str, ...]

    def view(self, key: str | None = None) -> "InstanceView":
        """What the system under test may see: roles, contents, dates and opaque labels only. The labels derive
        from `key` (default: the question text); questions that share a conversation are viewed with one key,
        so they see the same labels."""
        return _make_view(self, self.sessions, key)

    def oracle_view(self, key: str | None = None) -> "InstanceView":
        """Evidence sessions only: the one explicit use of answer_session_ids (the oracle ceiling)."""
        wanted = set(self.answer_session_ids)
        return _make_view(self, tuple(s for s in self.sessions if s.session_id in wanted), key)


@dataclass(frozen=True)
class ViewTurn:
    role: str
    content: str


@dataclass(frozen=True)
class ViewSession:
    label: str  # opaque, e.g. "s-3f9a21c0"; never the dataset session id
    date: datetime
    date_str: str
    turns: tuple[ViewTurn, ...]


@dataclass(frozen=True)
class InstanceView:
    question: str
    question_date: datetime
    question_date_str: str
    sessions: tuple[ViewSession, ...]  # sorted by date (stable for equal dates), as the official reader does


def _opaque_label(key: str, index: int) -> str:
    # Keyed by position and the question text (or a shared conversation's key) only, so nothing of the session
    # id leaks into the label.
    return "s-" + hashlib.blake2b(f"{key}\x00{index}".encode(), digest_size=4).hexdigest()


def _make_view(inst: Instance, sessions: tuple[Session, ...], key: str | None = None) -> InstanceView:
    ordered = sorted(sessions, key=lambda s: s.date)
    label_key = inst.question if key is None else key
    return InstanceView(
        question=inst.question,
        question_date=inst.question_date,
        question_date_str=inst.question_date_str,
        sessions=tuple(
            ViewSession(
                label=_opaque_label(label_key, i),
                date=s.date,
                date_str=s.date_str,
                turns=tuple(ViewTurn(t.role, t.content) for t in s.turns),
            )
            for i, s in enumerate(ordered)
        ),
    )
