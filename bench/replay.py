"""Replay: a haystack becomes a timeline of dated user+assistant pairs, fed to a strategy like a live agent."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from bench.benchmarks.longmemeval.dates import format_lme_date
from bench.data.schema import InstanceView


@dataclass(frozen=True)
class ReplayTurn:
    index: int  # position in the whole timeline
    session_index: int  # position of the session in date order
    thread_id: str  # opaque session label (one thread per session, as Mastra's replay)
    session_date: datetime
    user: str | None  # None when the pair starts with an assistant turn
    assistant: str | None
    user_at: datetime  # timezone-aware UTC; session date + k * offset, never before the previous message
    assistant_at: datetime
    first_in_session: bool
    session_date_str: str = ""  # the session's stamp as in the file ("2023/05/30 (Tue) 23:40")
    user_turn: int | None = None  # position of the user message in its session's turns (the dataset's index)

    @property
    def date_str(self) -> str:
        return self.session_date_str or format_lme_date(self.session_date)


def as_utc(dt: datetime) -> datetime:
    """LongMemEval dates are naive; the replay clock reads them as UTC."""
    return dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt.astimezone(timezone.utc)


def build_timeline(view: InstanceView, turn_offset_s: float = 5.0) -> list[ReplayTurn]:
    """Sessions in date order; each message gets session date + its index * offset; empty turns skipped.

    Turns are grouped into user+assistant pairs; a leading assistant turn or non-alternating runs become
    pairs with a missing side, so nothing of the haystack is dropped. Two sessions of one day can overlap
    (a long session started minutes before the next): a message is then moved to one offset after the
    previous one, so the clock never runs backwards (cache TTLs and OM's observed-up-to cursor rely on it).
    """
    step = timedelta(seconds=turn_offset_s)
    last: datetime | None = None

    def stamp(natural: datetime) -> datetime:
        nonlocal last
        at = natural if last is None or natural > last else last + step
        last = at
        return at

    out: list[ReplayTurn] = []
    for si, sess in enumerate(view.sessions):
        base = as_utc(sess.date)
        msgs = [(k, t) for k, t in enumerate(sess.turns) if t.content and t.content.strip()]
        first = True
        i = 0
        while i < len(msgs):
            k, t = msgs[i]
            user = asst = user_turn = None
            u_at = a_at = stamp(base + k * step)
            if t.role == "assistant":
                asst = t.content
                i += 1
            else:
                user, user_turn = t.content, k
                i += 1
                if i < len(msgs) and msgs[i][1].role == "assistant":
                    k2, t2 = msgs[i]
                    asst = t2.content
                    a_at = stamp(base + k2 * step)
                    i += 1
            out.append(
                ReplayTurn(
                    index=len(out),
                    session_index=si,
                    thread_id=sess.label,
                    session_date=sess.date,
                    user=user,
                    assistant=asst,
                    user_at=u_at,
                    assistant_at=a_at,
                    first_in_session=first,
                    session_date_str=sess.date_str,
                    user_turn=user_turn,
                )
            )
            first = False
    return out
