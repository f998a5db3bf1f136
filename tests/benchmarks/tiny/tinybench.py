"""TinyChat: a benchmark defined outside the harness, to prove the seam. Several questions are asked about one
conversation at different times (LoCoMo's shape), with its own question types, judge templates, reader layout
and metric order. The harness knows nothing of it but this module's path, named by its dataset YAML
(`tests/benchmarks/tiny/conf/dataset/tiny_chat.yaml`): these two files are all it needs."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any, Mapping, Sequence

from bench.benchmarks.base import Evidence
from bench.data.dataset import Dataset
from bench.data.schema import Instance, Session, Turn
from bench.errors import ConfigError
from bench.evaluate.templates import TemplateSet

# one conversation of three sessions, and four questions asked about it at their own times
SESSIONS = (
    ("s1", datetime(2024, 3, 1, 9, 0), (("user", "Hi! My sister Maya just moved to Lisbon."),
                                         ("assistant", "How exciting for Maya! Lisbon is lovely."))),
    ("s2", datetime(2024, 3, 8, 18, 30), (("user", "I adopted two cats this week, Pip and Tofu."),
                                           ("assistant", "Congratulations on Pip and Tofu!"))),
    ("s3", datetime(2024, 3, 20, 12, 15), (("user", "Big news: I adopted a third cat, called Miso."),
                                            ("assistant", "Three cats now: Pip, Tofu and Miso!"))),
)
QUESTIONS = (  # id, type, question, answer, asked at, evidence sessions
    ("q1", "recall", "Where did my sister move?", "Lisbon", datetime(2024, 3, 2, 10, 0), ("s1",)),
    ("q2", "count", "How many cats do I have?", "2", datetime(2024, 3, 9, 8, 0), ("s2",)),
    ("q3", "recall", "What is my sister called?", "Maya", datetime(2024, 3, 9, 8, 5), ("s1",)),
    ("q4", "count", "How many cats do I have?", "3", datetime(2024, 3, 21, 8, 0), ("s2", "s3")),
)
TEMPLATES = {  # our own wording; the fields are the ones every judge template has
    "recall": ("Grade a chat assistant's memory.\n\nQuestion: {question}\n\nCorrect Answer: {answer}\n\n"
               "Model Response: {response}\n\nDoes the response name the correct answer? Answer yes or no only."),
    "count": ("Grade a chat assistant's counting.\n\nQuestion: {question}\n\nCorrect Answer: {answer}\n\n"
              "Model Response: {response}\n\nIs the number in the response the correct one? Answer yes or no only."),
}


def _stamp(d: datetime) -> str:
    return d.strftime("%Y-%m-%d %H:%M")


class TinyReader:
    """A plain layout of its own: numbered sessions as `role: text` lines, then the date and the question."""

    def reader_prompt_parts(self, sessions: Sequence[Any], question: str, question_date_str: str, *,
                            method: Any = "con", history_format: Any = "json") -> list[tuple[str, str]]:
        parts = [("tiny:instr", "Earlier chats with the user follow. Answer the question from them.\n")]
        parts += [(f"sess:{s.label}", self.session_block(i, s)) for i, s in enumerate(sessions, 1)]
        return [*parts, ("tiny:question", self.question_block(question, question_date_str))]

    def session_block(self, i: int, session: Any, history_format: Any = "json") -> str:
        lines = "".join(f"\n{t.role}: {t.content}" for t in session.turns)
        return f"\nChat {i} ({session.date_str})\nSession Content:\n{lines}\n"

    def question_block(self, question: str, question_date_str: str, method: Any = "con") -> str:
        return f"\nToday: {question_date_str}\nQuestion: {question}\nAnswer:"

    def reader_text_sha256(self, method: str = "con", history_format: str = "json") -> str:
        return hashlib.sha256(json.dumps(self.reader_prompt_parts([], "Q?", "D")).encode()).hexdigest()


class TinyChat:
    name = "tiny_chat"
    title = "TinyChat"
    isolation_unit = "conversation"
    question_types = ("recall", "count")
    short_labels = {"recall": "RC", "count": "CT"}
    reference_judge = None
    reader = TinyReader()

    def splits(self) -> tuple[str, ...]:
        return ("main",)

    def load(self, split: str, data_dir: str | None = None) -> Dataset:
        if split != "main":
            raise ConfigError(f"dataset.split={split!r}: TinyChat has one split, main")
        sessions = tuple(Session(sid, when, _stamp(when), tuple(Turn(r, c) for r, c in turns))
                         for sid, when, turns in SESSIONS)
        questions = [Instance(qid, qtype, q, a, when, _stamp(when), sessions, evidence)
                     for qid, qtype, q, a, when, evidence in QUESTIONS]
        sha = hashlib.sha256(json.dumps([SESSIONS, QUESTIONS], default=str).encode()).hexdigest()
        return Dataset(questions, "tiny_chat", None, sha, False, "main", types=self.question_types)

    def unit_of(self, question: Instance) -> str:
        return "conversation-1"  # every question is about the one conversation

    def is_abstention(self, question: Instance) -> bool:
        return False

    def evidence(self, question: Instance) -> Evidence:
        return Evidence(frozenset(question.answer_session_ids))

    def judge_templates(self, source: str = "builtin", official_repo: str | None = None, *,
                        ask_reason: bool = False, download: bool = True) -> TemplateSet:
        if source != "builtin":
            raise ConfigError(f"judge.source={source!r}: TinyChat has only its builtin templates")
        return TemplateSet(dict(TEMPLATES), "builtin", "TinyChat's own wording")

    def template_for(self, question_id: str, question_type: str) -> str:
        return question_type

    def retrieval_rows(self, question: Instance, meta: Mapping[str, Any], key: str | None = None) -> list[Any]:
        return []
