"""Dispatch of the offline roles, plus realistic usage numbers. Free of litellm so it is testable directly.

This is the dry-run engine: deterministic rules whose accuracy is not an LLM's. Results are labelled by
their model name `offline/<role>`; the answer text itself carries no label so judging still works.
"""

from __future__ import annotations

from typing import Any

from bench.offline import evaluator, judge, observer, reader, reflector, summarizer
from bench.offline.reader import text_of

ROLES = ("observer", "reflector", "reader", "actor", "judge", "summarizer", "evaluator")
ALIASES = {"actor": "reader", "answerer": "reader", "summariser": "summarizer"}
EMBEDDER = "embedder"
# every model name the provider serves as offline/<name>
MODELS = tuple(dict.fromkeys([*ROLES, *ALIASES, EMBEDDER]))


def canonical_role(name: str) -> str:
    role = name.split("/")[-1].lower()
    return ALIASES.get(role, role)


def _user_text(messages: list[dict[str, Any]], last_only: bool = False) -> str:
    users = [text_of(m) for m in messages if m.get("role") == "user"]
    if not users:
        users = [text_of(m) for m in messages]
    return (users[-1] if users else "") if last_only else "\n\n".join(users)


def run_role(role: str, messages: list[dict[str, Any]], params: dict[str, Any] | None = None) -> str:
    params = params or {}
    r = canonical_role(role)
    if r == "observer":
        return observer.observe(_user_text(messages))
    if r == "reflector":
        cap = params.get("max_tokens") or params.get("max_completion_tokens")
        return reflector.reflect(_user_text(messages), int(cap) if cap else None)
    if r == "reader":
        return reader.answer(messages)
    if r == "judge":
        return judge.judge(_user_text(messages, last_only=True))
    if r == "summarizer":
        mt = params.get("max_tokens") or params.get("max_completion_tokens")
        return summarizer.summarize(messages, int(mt) if mt else None)
    if r == "evaluator":
        return evaluator.evaluate(messages)
    raise ValueError(f"unknown offline role {role!r}: use one of {', '.join(ROLES)} (or offline/embedder)")


def chat_prompt_tokens(messages: list[dict[str, Any]]) -> int:
    """o200k count of the request as OpenAI bills chat: content tokens + 3 per message + 3.

    Counted as len(encode(text)) (equal to count_string) because encode's memo is the one prompt rendering
    and the strategies use: the messages of a background call were mostly tokenised already (history a
    summariser condenses) or will be right after (the cache simulators render the same request)."""
    from om_core.tokens import default_counter

    encode = default_counter().encode
    return sum(len(encode(text_of(m))) + 3 for m in messages) + 3


def completion_tokens(text: str) -> int:
    from om_core.tokens import default_counter

    return default_counter().count_string(text)


def input_tokens(texts: list[str]) -> int:
    """o200k tokens of embedding inputs (what OpenAI bills an embedding request)."""
    from om_core.tokens import default_counter

    count = default_counter().count_string
    return sum(count(t) for t in texts)
