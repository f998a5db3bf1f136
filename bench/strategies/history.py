"""The raw conversation as strategies keep it: sessions of chat messages, each with a stable segment key and
its token count, serialisable for checkpoints."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Iterator

from bench.data.schema import ViewSession, ViewTurn
from bench.prompt import Segment
from bench.replay import ReplayTurn


@dataclass(frozen=True)
class Msg:
    role: str
    text: str
    key: str  # stable across turns: "m:<turn index>:u" / "m:<turn index>:a"
    tokens: int


@dataclass
class SessionLog:
    label: str
    date: datetime
    date_str: str
    msgs: list[Msg] = field(default_factory=list)

    def view(self) -> ViewSession:
        """The session as the official reader renders it (roles and contents only)."""
        return ViewSession(self.label, self.date, self.date_str, tuple(ViewTurn(m.role, m.text) for m in self.msgs))

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "date": self.date.isoformat(),
            "date_str": self.date_str,
            "msgs": [[m.role, m.text, m.key] for m in self.msgs],
        }

    @classmethod
    def from_json(cls, d: dict[str, Any], count: Callable[[str], int]) -> "SessionLog":
        return cls(
            d["label"],
            datetime.fromisoformat(d["date"]),
            d["date_str"],
            [Msg(r, t, k, count(t)) for r, t, k in d["msgs"]],
        )


def user_msg(turn: ReplayTurn, count: Callable[[str], int]) -> Msg | None:
    return None if turn.user is None else Msg("user", turn.user, f"m:{turn.index}:u", count(turn.user))


def turn_msgs(turn: ReplayTurn, count: Callable[[str], int], user: Msg | None = None) -> Iterator[Msg]:
    """The pair's messages in order (user first); `user` reuses an already-counted user message."""
    if turn.user is not None:
        yield user or Msg("user", turn.user, f"m:{turn.index}:u", count(turn.user))
    if turn.assistant is not None:
        yield Msg("assistant", turn.assistant, f"m:{turn.index}:a", count(turn.assistant))


def system_segments(system_prompt: str) -> list[Segment]:
    """The Actor's system prompt as the first message (a cache breakpoint), or nothing when it is empty."""
    return [Segment("system", system_prompt, "sys", True, 0)] if system_prompt else []


def question_text(question: str, question_date_str: str) -> str:
    """The question as the Actor receives it (LongMemEval's and Mastra's format)."""
    return f"Current Date: {question_date_str}\nQuestion: {question}"
