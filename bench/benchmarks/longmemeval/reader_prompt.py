"""The LongMemEval reader prompt (official layout), in the project's own words.

The layout (section headers, session numbering, JSON history, "Current Date" = question date) follows the
official generation script (xiaowu0162/LongMemEval src/generation/run_generation.py); the instruction
sentences are our paraphrase. Parts come back as ordered (key, text) pairs so strategies can turn them into
cache-friendly Prompt segments.
"""

from __future__ import annotations

import json
from typing import Literal, Mapping, Sequence, cast

from bench.data.schema import ViewSession

Method = Literal["con", "direct"]
HistoryFormat = Literal["json", "nl"]

_INSTR_CON = (
    "Below are earlier chat sessions between you (the assistant) and a user. Using them, answer the "
    "question that follows. Work step by step: first pick out the facts from the sessions that matter "
    "for the question, then reason over those facts to reach the answer."
)
_INSTR_DIRECT = (
    "Below are earlier chat sessions between you (the assistant) and a user. Using them, answer the "
    "question that follows."
)


def instruction(method: Method = "con", texts: Mapping[str, str] | None = None) -> str:
    """The instruction sentence of `method`: the project's own, or `texts[method]` (e.g. the official ones,
    bench.benchmarks.longmemeval.official_reader)."""
    if method not in ("con", "direct"):
        raise ValueError(f"unknown reader method {method!r}; use 'con' or 'direct'")
    if texts is not None:
        return texts[method]
    return _INSTR_CON if method == "con" else _INSTR_DIRECT


def _session_content(session: ViewSession, history_format: HistoryFormat) -> str:
    if history_format == "json":
        # Only role and content, as the official reader (has_answer is never in a ViewTurn); the official
        # json layout starts the content with a newline, leaving a blank line after "Session Content:".
        return "\n" + json.dumps([{"role": t.role, "content": t.content} for t in session.turns])
    if history_format == "nl":
        return "".join(f"\n\n{t.role}: {t.content.strip()}" for t in session.turns)
    raise ValueError(f"unknown history format {history_format!r}; use 'json' or 'nl'")


def session_block(i: int, session: ViewSession, history_format: HistoryFormat = "json") -> str:
    """One numbered session (1-based `i`), byte-stable for the same session and position."""
    return (
        f"\n### Session {i}:\nSession Date: {session.date_str}\nSession Content:\n"
        f"{_session_content(session, history_format)}\n"
    )


def question_block(question: str, question_date_str: str, method: Method = "con") -> str:
    tail = "Answer (step by step):" if method == "con" else "Answer:"
    # Official template: "{history}\n\nCurrent Date: ..." where history ends with a session's "\n".
    return f"\n\nCurrent Date: {question_date_str}\nQuestion: {question}\n{tail}"


def reader_prompt_parts(
    sessions: Sequence[ViewSession],
    question: str,
    question_date_str: str,
    *,
    method: Method = "con",
    history_format: HistoryFormat = "json",
    texts: Mapping[str, str] | None = None,
) -> list[tuple[str, str]]:
    """Ordered (key, text) parts; sessions are rendered in the given order (callers sort by date); `texts`
    replaces the instruction sentences (`instruction`)."""
    parts: list[tuple[str, str]] = [("reader:instr", instruction(method, texts) + "\n\n\nHistory Chats:\n\n")]
    for i, s in enumerate(sessions, start=1):
        parts.append((f"sess:{s.label}", session_block(i, s, history_format)))
    if method not in ("con", "direct"):
        raise ValueError(f"unknown reader method {method!r}; use 'con' or 'direct'")
    parts.append(("reader:question", question_block(question, question_date_str, method)))
    return parts


def render_reader_prompt(
    sessions: Sequence[ViewSession],
    question: str,
    question_date_str: str,
    *,
    method: Method = "con",
    history_format: HistoryFormat = "json",
    texts: Mapping[str, str] | None = None,
) -> str:
    return "".join(
        t for _, t in reader_prompt_parts(
            sessions, question, question_date_str, method=method, history_format=history_format, texts=texts
        )
    )


def reader_text_sha256(method: str = "con", history_format: str = "json",
                       texts: Mapping[str, str] | None = None) -> str:
    """Hash of the reader prompt's own text (instruction, layout, question block) for one method and format,
    rendered over a fixed two-turn session: any change of wording or layout changes it (run and ingestion keys)."""
    import hashlib
    from datetime import datetime

    from bench.data.schema import ViewTurn

    probe = ViewSession("s-probe", datetime(2023, 5, 30, 23, 40), "2023/05/30 (Tue) 23:40",
                        (ViewTurn("user", "U"), ViewTurn("assistant", "A")))
    text = render_reader_prompt([probe], "Q?", "2023/06/01 (Thu) 09:00", method=cast(Method, method),
                                history_format=cast(HistoryFormat, history_format), texts=texts)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
