"""Offline summariser: extractive, bounded by a token budget.

Keeps the first sentence of each user turn plus one more sentence that carries a number or a name, in order,
until `max_tokens` (o200k) is reached. A dry-run stand-in, not an LLM summary.
"""

from __future__ import annotations

import re
from typing import Any

from bench.offline.reader import text_of
from bench.offline.text import has_number_or_name, sentences, truncate_words

_ROLE_LINE = re.compile(r"^\s*(?:\*\*)?(user|assistant)\b(?:\s*\([^)]*\))?\s*:?(?:\*\*)?\s*:?\s*(.*)$", re.I)
_JSON_TURN = re.compile(r'\[?\{"role": "(\w+)", "content": "')
_JSON_END = re.compile(r'"\}(?:, |\])')
DEFAULT_BUDGET = 512


def _turns_from_text(text: str) -> list[tuple[str, str]]:
    text = _JSON_END.sub("\n", _JSON_TURN.sub(lambda g: f"\n{g.group(1)}: ", text.replace("\\n", "\n")))
    turns: list[tuple[str, str]] = []
    for line in text.splitlines():
        m = _ROLE_LINE.match(line)
        if m:
            turns.append((m.group(1).lower(), m.group(2)))
        elif turns:
            turns[-1] = (turns[-1][0], turns[-1][1] + "\n" + line)
    return turns


def conversation_turns(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Turns given as chat messages, else as role-labelled lines inside the prompt text."""
    chat = [(str(m.get("role")), text_of(m)) for m in messages if m.get("role") in ("user", "assistant")]
    inline = [t for _, txt in chat for t in _turns_from_text(txt)]
    if inline:
        return inline
    if len(chat) > 1:
        return chat[:-1] if chat[-1][0] == "user" else chat  # the last user message is the request
    text = chat[-1][1] if chat else ""
    return [("user", p) for p in text.split("\n\n") if p.strip()]


def summarize(messages: list[dict[str, Any]], max_tokens: int | None = None) -> str:
    from om_core import default_counter

    budget = max_tokens or DEFAULT_BUDGET
    count = default_counter().count_string
    header = "Summary of the conversation so far (extractive):"
    lines: list[str] = []
    used = count(header)
    for role, text in conversation_turns(messages):
        if role != "user":
            continue
        sents = [s for s in sentences(text) if len(s.split()) >= 3]
        if not sents:
            continue
        picks = [sents[0]] + [s for s in sents[1:] if has_number_or_name(s)][:1]
        for s in picks:
            line = f"- User: {truncate_words(s, 30)}"
            cost = count(line) + 1
            if used + cost > budget:
                return "\n".join([header, *lines])
            lines.append(line)
            used += cost
    return "\n".join([header, *lines])
