"""Dispatch of the offline roles, plus realistic usage numbers. Free of litellm so it is testable directly.

This is the dry-run engine: deterministic rules whose accuracy is not an LLM's. Results are labelled by
their model name `offline/<role>`; the answer text itself carries no label so judging still works.
"""

from __future__ import annotations

from typing import Any, Callable

from bench.offline import evaluator, judge, observer, reader, reflector, summarizer
from bench.offline.reader import text_of
from bench.roles import Role

PROVIDER = "offline"  # the models are offline/<role>
Handler = Callable[[list[dict[str, Any]], dict[str, Any]], str]
EMBEDDER = Role.EMBEDDER.value


def _user_text(messages: list[dict[str, Any]], last_only: bool = False) -> str:
    users = [text_of(m) for m in messages if m.get("role") == "user"]
    if not users:
        users = [text_of(m) for m in messages]
    return (users[-1] if users else "") if last_only else "\n\n".join(users)


def _cap(params: dict[str, Any]) -> int | None:
    cap = params.get("max_tokens") or params.get("max_completion_tokens")
    return int(cap) if cap else None


# One handler per model role (bench.roles.Role), the only dispatch of the engine: a role added to `Role`
# without a handler here fails tests/offline/test_engine.py, not a run. None: the role is not a chat model
# (the embedder is served by the provider's embedding path).
HANDLERS: dict[Role, Handler | None] = {
    Role.OBSERVER: lambda messages, params: observer.observe(_user_text(messages)),
    Role.REFLECTOR: lambda messages, params: reflector.reflect(_user_text(messages), _cap(params)),
    Role.ACTOR: lambda messages, params: reader.answer(messages),
    Role.JUDGE: lambda messages, params: judge.judge(_user_text(messages, last_only=True)),
    Role.SUMMARIZER: lambda messages, params: summarizer.summarize(messages, _cap(params)),
    Role.EVALUATOR: lambda messages, params: evaluator.evaluate(messages),
    Role.EMBEDDER: None,
}

# the chat models the provider serves as offline/<name>: each role's own name (`Role.offline_model`) and the
# names calls may carry for a role (`reader`/`answerer` for the actor, `summariser`)
ROLES = tuple(dict.fromkeys(n for r, h in HANDLERS.items() if h is not None
                            for n in (r.offline_model.split("/")[1], r.value)))
ALIASES = {"answerer": "reader", "summariser": "summarizer"}
# every model name the provider serves as offline/<name>
MODELS = tuple(dict.fromkeys([*ROLES, *ALIASES, EMBEDDER]))


def canonical_role(name: str) -> str:
    """The model name (after `offline/`) a role label is served as: `actor` and `answerer` -> `reader`."""
    label = name.split("/")[-1].lower()
    role = Role.parse(label)
    return role.offline_model.split("/")[1] if role is not None else label


def run_role(role: str, messages: list[dict[str, Any]], params: dict[str, Any] | None = None) -> str:
    """The reply of the offline model `role` (a model name after `offline/`, or a role label). Raises
    ValueError for a name that is no chat role."""
    found = Role.parse(role.split("/")[-1].lower())
    handler = HANDLERS.get(found) if found is not None else None
    if handler is None:
        raise ValueError(f"unknown offline role {role!r}: use one of {', '.join(ROLES)} (or offline/embedder)")
    return handler(messages, params or {})


def chat_prompt_tokens(messages: list[dict[str, Any]]) -> int:
    """o200k count of the request as OpenAI bills chat: content tokens + 3 per message + 3.

    Counted as len(encode(text)) (equal to count_string) because encode's memo is the one prompt rendering
    and the strategies use: the messages of a background call were mostly tokenised already (history a
    summariser condenses) or will be right after (the cache simulators render the same request). A long text
    (an Observer's message history, a Reflector's log) goes through encode_by_lines: the lines it shares with
    earlier requests are not tokenised again."""
    from om_core import default_counter

    counter = default_counter()
    encode, by_lines = counter.encode, counter.encode_by_lines

    def ids(text: str) -> tuple[int, ...]:
        return by_lines(text) if len(text) >= LONG_TEXT_CHARS else encode(text)

    return sum(len(ids(text_of(m))) + 3 for m in messages) + 3


LONG_TEXT_CHARS = 4096  # as bench.render's INCREMENTAL_MIN_CHARS


def completion_tokens(text: str) -> int:
    from om_core import default_counter

    return default_counter().count_string(text)


def input_tokens(texts: list[str]) -> int:
    """o200k tokens of embedding inputs (what OpenAI bills an embedding request)."""
    from om_core import default_counter

    count = default_counter().count_string
    return sum(count(t) for t in texts)
