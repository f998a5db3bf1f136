"""The raw conversation as strategies keep it: sessions of chat messages, each with a stable segment key and
its token count, serialisable for checkpoints."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from datetime import datetime
from typing import Any, Callable, Iterator, Protocol

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


class TurnText(Protocol):
    """What `turn_msgs` reads of a turn: a ReplayTurn, or the copy a strategy's checkpoint keeps."""

    @property
    def index(self) -> int: ...
    @property
    def user(self) -> str | None: ...
    @property
    def assistant(self) -> str | None: ...


def turn_msgs(turn: TurnText, count: Callable[[str], int], user: Msg | None = None) -> Iterator[Msg]:
    """The pair's messages in order (user first); `user` reuses an already-counted user message."""
    if turn.user is not None:
        yield user or Msg("user", turn.user, f"m:{turn.index}:u", count(turn.user))
    if turn.assistant is not None:
        yield Msg("assistant", turn.assistant, f"m:{turn.index}:a", count(turn.assistant))


def system_segments(system_prompt: str) -> list[Segment]:
    """The Actor's system prompt as the first message (a cache breakpoint), or nothing when it is empty.

    A fresh list, but always the same Segment object for the same text, so consecutive prompts share it
    (bench.prompt reuses the rendering of a prompt's identical leading segments)."""
    return [_system_segment(system_prompt)] if system_prompt else []


@lru_cache(maxsize=64)
def _system_segment(system_prompt: str) -> Segment:
    return Segment("system", system_prompt, "sys", True, 0)


class SegmentCache:
    """Segment objects by (role, key, breakpoint, message index), reused while their text is unchanged, so
    a strategy that rebuilds its prompt every turn still hands the same objects for unchanged parts."""

    __slots__ = ("_segs",)

    def __init__(self) -> None:
        self._segs: dict[tuple[str, str, bool, int], Segment] = {}

    def get(self, role: str, text: str, key: str, breakpoint: bool, index: int) -> Segment:
        k = (role, key, breakpoint, index)
        seg = self._segs.get(k)
        if seg is None or seg.text != text:
            seg = self._segs[k] = Segment(role, text, key, breakpoint, index)
        return seg

    def clear(self) -> None:
        self._segs.clear()


def question_text(question: str, question_date_str: str) -> str:
    """The question as the Actor receives it (LongMemEval's and Mastra's format)."""
    return f"Current Date: {question_date_str}\nQuestion: {question}"
