"""Replay: a haystack becomes a timeline of dated user+assistant pairs, fed to a strategy like a live agent."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from bench.data.schema import InstanceView


@dataclass(frozen=True)
class ReplayTurn:
    index: int  # position in the whole timeline
    session_index: int  # position of the session in date order
    thread_id: str  # opaque session label (one thread per session, as Mastra's replay)
    session_date: datetime
    user: str | None  # None when the pair starts with an assistant turn
    assistant: str | None
    user_at: datetime  # timezone-aware UTC; session date + k * offset
    assistant_at: datetime
    first_in_session: bool


def build_timeline(view: InstanceView, turn_offset_s: float = 5.0) -> list[ReplayTurn]:
    """Sessions in date order; each message gets session date + its index * offset; empty turns skipped.

    Turns are grouped into user+assistant pairs; a leading assistant turn or non-alternating runs become
    pairs with a missing side, so nothing of the haystack is dropped.
    """
    out: list[ReplayTurn] = []
    for si, sess in enumerate(view.sessions):
        base = sess.date.replace(tzinfo=timezone.utc) if sess.date.tzinfo is None else sess.date
        msgs = [(k, t) for k, t in enumerate(sess.turns) if t.content and t.content.strip()]
        first = True
        i = 0
        while i < len(msgs):
            k, t = msgs[i]
            user = asst = None
            u_at = a_at = base + timedelta(seconds=k * turn_offset_s)
            if t.role == "assistant":
                asst = t.content
                i += 1
            else:
                user = t.content
                i += 1
                if i < len(msgs) and msgs[i][1].role == "assistant":
                    k2, t2 = msgs[i]
                    asst = t2.content
                    a_at = base + timedelta(seconds=k2 * turn_offset_s)
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
                )
            )
            first = False
    return out
