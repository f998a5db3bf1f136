"""The Actor's context (spec §5): static instructions, observations, hints, continuation reminder, raw tail.

m31 splits the observations at message boundaries into one system message per chunk, so that a turn
which only appends observations leaves every earlier chunk byte-identical (a stable cache prefix).
m11 puts everything into one system message with a closing `</observations>`.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from .dates import annotate_relative, last_header_date
from .prompts import check_profile, load
from .types import ContextMessage, Message

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

MESSAGE_BOUNDARY_RE = re.compile(
    r"\n{2,}--- message boundary \(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z\) ---\n{2,}"
)

_KEEP_EMOJI_ONLY = re.compile(r"[🟡🟢][ \t]*")
# A bracketed label, unless it is a "[N items collapsed…]" marker or the text of a markdown link.
_BRACKET_LABEL = re.compile(r"\[(?![\d\s]*items collapsed)[^\[\]\n]+\](?!\()")
_INNER_SPACES = re.compile(r"(?<=\S)[ \t]{2,}")
_MANY_NEWLINES = re.compile(r"\n{3,}")


def optimize_observations(text: str) -> str:
    """Trim observations for the Actor: drop 🟡/🟢 (keep 🔴, ✅), bracketed labels and `->` arrows.

    Leading indentation is kept; only runs of spaces inside a line collapse.
    """
    out = _KEEP_EMOJI_ONLY.sub("", text)
    out = _BRACKET_LABEL.sub("", out)
    out = out.replace("->", " ")
    out = _INNER_SPACES.sub(" ", out)
    out = "\n".join(line.rstrip() for line in out.split("\n"))
    return _MANY_NEWLINES.sub("\n\n", out).strip()


def message_boundary(ts: datetime) -> str:
    """The separator written between activated observation batches, stamped with an ISO UTC time."""
    if ts.tzinfo is None:
        raise ValueError("message_boundary needs a timezone-aware datetime")
    utc = ts.astimezone(timezone.utc)
    return f"\n\n--- message boundary ({utc:%Y-%m-%dT%H:%M:%S}.{utc.microsecond // 1000:03d}Z) ---\n\n"


def split_observation_chunks(text: str) -> list[str]:
    """Observation text split at message boundaries; chunks trimmed, empty ones dropped."""
    return [c.strip() for c in MESSAGE_BOUNDARY_RE.split(text) if c.strip()]


def render_chunks(observations: str, now: datetime) -> list[str]:
    """Each chunk optimised and annotated with relative dates against `now`.

    A chunk depends only on itself and the last date header before it, so appending chunks never
    changes earlier ones.
    """
    rendered: list[str] = []
    previous = None
    for chunk in split_observation_chunks(observations):
        optimized = optimize_observations(chunk)
        if not optimized:
            continue
        rendered.append(annotate_relative(optimized, now, previous_header=previous).strip())
        previous = last_header_date(optimized) or previous
    return rendered


def _raw_tail(unobserved: Sequence[Message]) -> list[ContextMessage]:
    return [ContextMessage(role=m.role, content=m.content, key=f"msg:{m.id}", created_at=m.created_at) for m in unobserved]


def _continuation(profile: str, folder: str | Path | None) -> ContextMessage:
    text = f"<system-reminder>{load(profile, 'continuation', folder)}</system-reminder>"
    return ContextMessage(role="user", content=text, breakpoint=True, key="om:continuation", created_at=EPOCH)


def _other_block(profile: str, other: str, folder: str | Path | None) -> str:
    intro = load(profile, "other_conversations", folder)
    return f"{intro}\nSTART_OTHER_CONVERSATIONS_BLOCK\n{other.strip()}\nEND_OTHER_CONVERSATIONS_BLOCK"


def _hint(tag: str, value: str | None) -> str | None:
    return f"<{tag}>\n{value.strip()}\n</{tag}>" if value and value.strip() else None


def build_actor_context(
    *,
    profile: str,
    observations: str,
    now: datetime,
    current_task: str | None = None,
    suggested_response: str | None = None,
    other_conversations: str | None = None,
    retrieval_instructions: str | None = None,
    unobserved: Sequence[Message] = (),
    prompts_folder: str | Path | None = None,
) -> list[ContextMessage]:
    """The messages om_core adds to the Actor's context, followed by the unobserved raw messages.

    `other_conversations` is the already formatted inner content (e.g. `<other-conversation id=…>` blocks).
    With no observations nothing is injected: only the raw messages are returned.
    """
    check_profile(profile)
    if now.tzinfo is None:
        raise ValueError("build_actor_context needs a timezone-aware `now`")
    chunks = render_chunks(observations or "", now)
    tail = _raw_tail(unobserved)
    if not chunks:
        return tail

    static = load(profile, "actor_preamble", prompts_folder)
    instructions = load(profile, "actor_instructions", prompts_folder)
    retrieval = retrieval_instructions.strip() if retrieval_instructions and retrieval_instructions.strip() else None
    other = _other_block(profile, other_conversations, prompts_folder) if other_conversations and other_conversations.strip() else None
    hints = [_hint("current-task", current_task), _hint("suggested-response", suggested_response)]

    if profile == "m11":
        body = "\n\n".join(chunks)
        text = f"\n{static}\n\n<observations>\n{body}\n</observations>\n\n{instructions}"
        for extra in (retrieval, other, *hints):
            if extra:
                text += "\n\n" + extra
        system = ContextMessage(role="system", content=text, breakpoint=True, key="om:system")
        return [system, _continuation(profile, prompts_folder), *tail]

    head = static + "\n\n" + instructions + (f"\n\n{retrieval}" if retrieval else "")
    out = [ContextMessage(role="system", content=head, key="om:preamble")]
    if other:
        out.append(ContextMessage(role="system", content=other, key="om:other"))
    out.append(ContextMessage(role="system", content="<observations>", key="om:open"))
    out += [ContextMessage(role="system", content=c, breakpoint=True, key=f"om:chunk:{i}") for i, c in enumerate(chunks)]
    for key, hint in zip(("om:task", "om:suggested"), hints):
        if hint:
            out.append(ContextMessage(role="system", content=hint, key=key))
    out[-1] = replace(out[-1], breakpoint=True)  # end of the system block, just before the raw tail
    return [*out, _continuation(profile, prompts_folder), *tail]
