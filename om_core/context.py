"""The Actor's context: static instructions, observations, hints, continuation reminder, raw tail.

Layout from mastra-ai/mastra, packages/memory/src/processors/observational-memory/: observational-memory.ts
(`buildContextSystemMessages`), constants.ts, processor.ts; observation transforms from observer-agent.ts
(`optimizeObservationsForContext`) and date-utils.ts.

m31 splits the observations at message boundaries into one system message per chunk, so that a turn
which only appends observations leaves every earlier chunk byte-identical (a stable cache prefix).
m11 puts everything into one system message with a closing `</observations>`.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import replace
from datetime import date, datetime, time, timezone
from pathlib import Path
from typing import Any, Hashable, Sequence

from .dates import annotate_relative, last_header_date
from .errors import InputError
from .prompts import check_profile, load
from .types import ContextMessage, Message

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

MESSAGE_BOUNDARY_RE = re.compile(
    r"\n{2,}--- message boundary \(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z\) ---\n{2,}"
)

_LOW_PRIORITY_EMOJI = re.compile(r"[🟡🟢]\s*")
# A bracketed label, unless it is a "[N items collapsed…]" marker or the text of a markdown link.
_BRACKET_LABEL = re.compile(r"\[(?![\d\s]*items collapsed)[^\]]+\](?!\()")
_ARROW = re.compile(r"\s*->\s*")
_SPACE_RUNS = re.compile(r" {2,}")
_MANY_NEWLINES = re.compile(r"\n{3,}")

# memo budgets in characters (texts and their renderings): a few dozen full 40k-token memories each
RENDER_MEMO_CHUNK_CHARS = 16_000_000  # rendered chunks (per chunk text, previous header, day of `now`)
RENDER_MEMO_TEXT_CHARS = 8_000_000  # whole observation texts (per text and day of `now`)


def optimize_observations(text: str) -> str:
    """Trim observations for the Actor as Mastra does: drop 🟡/🟢 (keep 🔴, ✅) with the whitespace after
    them, bracketed labels, `->` arrows with their surrounding whitespace; collapse runs of spaces
    (indentation included) and 3+ newlines."""
    out = _LOW_PRIORITY_EMOJI.sub("", text)
    out = _BRACKET_LABEL.sub("", out)
    out = _ARROW.sub(" ", out)
    out = _SPACE_RUNS.sub(" ", out)
    return _MANY_NEWLINES.sub("\n\n", out).strip()


def message_boundary(ts: datetime) -> str:
    """The separator written between activated observation batches, stamped with an ISO UTC time."""
    if ts.tzinfo is None:
        raise InputError("message_boundary needs a timezone-aware datetime")
    utc = ts.astimezone(timezone.utc)
    return f"\n\n--- message boundary ({utc:%Y-%m-%dT%H:%M:%S}.{utc.microsecond // 1000:03d}Z) ---\n\n"


def split_observation_chunks(text: str) -> list[str]:
    """Observation text split at message boundaries; chunks trimmed, empty ones dropped."""
    return [c.strip() for c in MESSAGE_BOUNDARY_RE.split(text) if c.strip()]


class _LRU:
    """A least-recently-used map bounded by the total size (in characters) of what it holds; thread-safe."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self._data: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        with self._lock:
            hit = self._data.get(key)
            if hit is None:
                return None
            self._data.move_to_end(key)
            return hit[0]

    def put(self, key: Hashable, value: Any, chars: int) -> None:
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._chars -= old[1]
            self._data[key] = (value, chars)
            self._chars += chars
            while self._chars > self.max_chars and self._data:
                self._chars -= self._data.popitem(last=False)[1][1]

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._chars = 0


_CHUNK_MEMO = _LRU(RENDER_MEMO_CHUNK_CHARS)
_TEXT_MEMO = _LRU(RENDER_MEMO_TEXT_CHARS)


def _day_key(now: datetime) -> tuple[date, bool]:
    """What of `now` the rendering depends on: its calendar date (relative ages, in now's zone) and
    whether it is past midnight (a date equal to today counts as past only then)."""
    return now.date(), now.time() != time(0)


def _render_chunk(chunk: str, previous: date | None, now: datetime,
                  optimize: bool = True) -> tuple[str | None, date | None]:
    """(rendered chunk or None when it optimises away, date of its last header)."""
    optimized = optimize_observations(chunk) if optimize else chunk.strip()
    if not optimized:
        return None, None
    return annotate_relative(optimized, now, previous_header=previous).strip(), last_header_date(optimized)


def render_chunks(observations: str, now: datetime, *, memo: bool = True, optimize: bool = True) -> list[str]:
    """Each chunk optimised and annotated with relative dates against `now`.

    A chunk depends only on itself, the last date header before it and the day of `now`, so appending
    chunks never changes earlier ones. Renderings are memoised on exactly those inputs (bounded LRU), so
    re-rendering an unchanged memory every turn costs dictionary lookups; `memo=False` bypasses the memo.
    `optimize=False` keeps the text as written (retrieval mode's rendered groups, as Mastra shows them).
    """
    day = (*_day_key(now), optimize)
    if memo:
        hit = _TEXT_MEMO.get((observations, day))
        if hit is not None:
            return list(hit)
    rendered: list[str] = []
    previous: date | None = None
    for chunk in split_observation_chunks(observations):
        key = (chunk, previous, day)
        value = _CHUNK_MEMO.get(key) if memo else None
        if value is None:
            value = _render_chunk(chunk, previous, now, optimize)
            if memo:
                _CHUNK_MEMO.put(key, value, len(chunk) + len(value[0] or ""))
        text, last = value
        if text is not None:
            rendered.append(text)
            previous = last or previous
    if memo:
        _TEXT_MEMO.put((observations, day), tuple(rendered), len(observations) + sum(map(len, rendered)))
    return rendered


RAW_MEMO_MESSAGES = 1 << 15  # stored messages whose context form is kept (the unobserved tail recurs every turn)
# per message object (a frozen Message, held here so its id is not reused while kept): its ContextMessage
_RAW: dict[int, tuple[Message, ContextMessage]] = {}


def _raw_message(m: Message) -> ContextMessage:
    """A raw message as the Actor's context holds it: built once per message object, since storage hands back
    the same objects for the same tail turn after turn (both are frozen, so the kept one equals a new one)."""
    hit = _RAW.get(id(m))
    if hit is not None and hit[0] is m:
        return hit[1]
    cm = ContextMessage(role=m.role, content=m.content, key=f"msg:{m.id}", created_at=m.created_at,
                        tool_calls=m.tool_calls)
    if len(_RAW) >= RAW_MEMO_MESSAGES:
        _RAW.clear()
    _RAW[id(m)] = (m, cm)
    return cm


def _raw_tail(unobserved: Sequence[Message]) -> list[ContextMessage]:
    return [_raw_message(m) for m in unobserved]


def _continuation(profile: str, folder: str | Path | None) -> ContextMessage:
    text = f"<system-reminder>{load(profile, 'continuation', folder)}</system-reminder>"
    return ContextMessage(role="user", content=text, breakpoint=True, key="om:continuation", created_at=EPOCH)


def _other_block(profile: str, other: str, folder: str | Path | None) -> str:
    intro = load(profile, "other_conversations", folder)
    return f"{intro}\nSTART_OTHER_CONVERSATIONS_BLOCK\n{other.strip()}\nEND_OTHER_CONVERSATIONS_BLOCK"


WORKING_MEMORY_KEY = "om:working-memory"


def working_memory_message(profile: str, text: str, folder: str | Path | None = None) -> ContextMessage:
    """The working-memory block as the Actor sees it: one system message after the observations."""
    intro = load(profile, "actor_working_memory", folder)
    return ContextMessage(role="system", content=f"<working-memory>\n{intro}\n{text.strip()}\n</working-memory>",
                          key=WORKING_MEMORY_KEY)


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
    optimize: bool = True,
    layout: str = "mastra",
    working_memory: str | None = None,
) -> list[ContextMessage]:
    """The messages om_core adds to the Actor's context, followed by the unobserved raw messages.

    `other_conversations` is the already formatted inner content (e.g. `<other-conversation id=…>` blocks).
    With no observations nothing is injected: only the raw messages are returned.
    `layout` (m31): "mastra" puts the OTHER-conversations block right after the preamble, as Mastra does
    (mastra-ai/mastra, packages/memory/src/processors/observational-memory/observational-memory.ts,
    `buildContextSystemMessages`), so any change in another thread rewrites everything after it;
    "stable_prefix" puts it after the observation chunks and hints, so the observations stay a cacheable
    prefix while threads interleave. m11 already renders the block after its observations.
    `working_memory` (the block's lines; om_core.working_memory) becomes one system message placed after the
    static instructions and the observations (m31: right after the last chunk, before the hints; m11: after
    its one system message), so a change of it never touches the cached prefix before it.
    """
    check_profile(profile)
    if layout not in ("mastra", "stable_prefix"):
        raise InputError(f"layout must be 'mastra' or 'stable_prefix', got {layout!r}")
    if now.tzinfo is None:
        raise InputError("build_actor_context needs a timezone-aware `now`")
    chunks = render_chunks(observations or "", now, optimize=optimize)
    tail = _raw_tail(unobserved)
    wm = working_memory_message(profile, working_memory, prompts_folder) \
        if working_memory and working_memory.strip() else None
    if not chunks:
        return [wm, *tail] if wm else tail

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
        return [system, *([wm] if wm else []), _continuation(profile, prompts_folder), *tail]

    head = static + "\n\n" + instructions + (f"\n\n{retrieval}" if retrieval else "")
    out = [ContextMessage(role="system", content=head, key="om:preamble")]
    if other and layout == "mastra":
        out.append(ContextMessage(role="system", content=other, key="om:other"))
    out.append(ContextMessage(role="system", content="<observations>", key="om:open"))
    out += [ContextMessage(role="system", content=c, breakpoint=True, key=f"om:chunk:{i}") for i, c in enumerate(chunks)]
    if wm:
        out.append(wm)
    for key, hint in zip(("om:task", "om:suggested"), hints):
        if hint:
            out.append(ContextMessage(role="system", content=hint, key=key))
    if other and layout == "stable_prefix":
        out.append(ContextMessage(role="system", content=other, key="om:other"))
    out[-1] = replace(out[-1], breakpoint=True)  # end of the system block, just before the raw tail
    return [*out, _continuation(profile, prompts_folder), *tail]


OBSERVATIONS_CLOSE = "\n</observations>"
_PREFIX_SEP = "\x1e"  # between messages in `memory_prefix` (never in message text)


def memory_prefix(messages: Sequence[ContextMessage]) -> str:
    """The Actor context from its first message through the end of the observations, as one string (each
    message as `role`, a unit separator, its content; m11: its one system message cut before
    `</observations>`). "" when no observations were injected.

    While memory only appends (new chunks, new lines), this text of one render is an exact prefix of the next
    render's: the part a provider's prefix cache can reuse. What breaks it is a reflection (rewrite), a new
    day in the relative dates, or a changing block placed before the observations."""
    parts: list[str] = []
    last_chunk = max((i for i, m in enumerate(messages) if m.key.startswith("om:chunk:")), default=-1)
    for i, m in enumerate(messages):
        if m.key == "om:system":
            cut = m.content.rfind(OBSERVATIONS_CLOSE)
            return _PREFIX_SEP.join([*parts, f"{m.role}\x1f{m.content[:cut] if cut >= 0 else m.content}"])
        if i > last_chunk:
            break
        parts.append(f"{m.role}\x1f{m.content}")
    return _PREFIX_SEP.join(parts) if last_chunk >= 0 else ""


def prefix_stability(renders: Sequence[Sequence[ContextMessage]]) -> tuple[int, int]:
    """(kept, pairs): over consecutive renders whose first one has observations, how many kept that render's
    `memory_prefix` as an exact prefix of the next one's."""
    kept = pairs = 0
    for a, b in zip(renders, renders[1:]):
        pa = memory_prefix(a)
        if not pa:
            continue
        pairs += 1
        kept += memory_prefix(b).startswith(pa)
    return kept, pairs
