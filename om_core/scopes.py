"""Resource-scope helpers: thread-id obscuring, thread selection and batching, merging per-thread observation
sections, and the OTHER-conversations block. All pure functions.

Rules from mastra-ai/mastra, packages/memory/src/processors/observational-memory/:
observation-strategies/resource-scoped.ts, observational-memory.ts and observer-agent.ts (multi-thread output).
"""

from __future__ import annotations

import hashlib
import importlib
import re
from dataclasses import dataclass
from datetime import datetime
from types import ModuleType
from typing import Callable, Mapping, Sequence

from om_core.types import Message

_xxhash: ModuleType | None
try:  # Mastra renders obscured ids as xxhash32 hex; fall back to a stable 8-hex digest without it
    _xxhash = importlib.import_module("xxhash")
except ImportError:  # pragma: no cover - depends on the install
    _xxhash = None

HASH_NAME = "xxh32" if _xxhash is not None else "sha256[:8]"


def obscure_thread_id(thread_id: str) -> str:
    """Stable 8-hex rendering of a thread id (hides ids such as session names that could leak answers)."""
    if _xxhash is not None:
        return str(_xxhash.xxh32(thread_id.encode("utf-8")).hexdigest())
    return hashlib.sha256(thread_id.encode("utf-8")).hexdigest()[:8]


def display_id(thread_id: str, obscure: bool) -> str:
    return obscure_thread_id(thread_id) if obscure else thread_id


@dataclass(frozen=True)
class ThreadBatch:
    thread_ids: tuple[str, ...]
    tokens: int


def select_threads(token_counts: Mapping[str, int], oldest: Mapping[str, datetime], threshold: int,
                   max_tokens_per_batch: int) -> list[ThreadBatch]:
    """Largest threads first until their sum reaches `threshold`; then re-sorted oldest-first and packed into
    batches of at most `max_tokens_per_batch` tokens (a thread is never split; each batch has ≥ 1 thread)."""
    chosen: list[str] = []
    acc = 0
    for tid in sorted((t for t, n in token_counts.items() if n > 0), key=lambda t: (-token_counts[t], t)):
        chosen.append(tid)
        acc += token_counts[tid]
        if acc >= threshold:
            break
    chosen.sort(key=lambda t: (oldest[t], t))
    batches: list[ThreadBatch] = []
    current: list[str] = []
    size = 0
    for tid in chosen:
        n = token_counts[tid]
        if current and size + n > max_tokens_per_batch:
            batches.append(ThreadBatch(tuple(current), size))
            current, size = [], 0
        current.append(tid)
        size += n
    if current:
        batches.append(ThreadBatch(tuple(current), size))
    return batches


_FIRST_DATE = re.compile(r"Date:\s*([A-Za-z]+\s+\d+,\s+\d+)")
_CLOSE = "</thread>"


def wrap_thread(display: str, body: str) -> str:
    return f'<thread id="{display}">\n{body.strip()}\n{_CLOSE}'


def _merge_into_first_section(text: str, display: str, section: str) -> str | None:
    """Mastra's merge rule: when the thread's first section already holds the new section's first `Date:`
    header, the new lines (after that header) go to the end of that section. None when it does not apply."""
    date_m = _FIRST_DATE.search(section)
    start = text.find(f'<thread id="{display}">')
    if date_m is None or start == -1:
        return None
    close = text.find(_CLOSE, start)
    if close == -1:
        return None
    old = text[start : close + len(_CLOSE)]
    if f"Date: {date_m.group(1)}" not in old and f"Date:{date_m.group(1)}" not in old:
        return None
    line_end = section.find("\n", date_m.start())
    new_lines = section[line_end + 1 : section.rfind(_CLOSE)].strip() if line_end != -1 else ""
    if not new_lines:
        return None
    merged = old[: -len(_CLOSE)].rstrip() + "\n" + new_lines + "\n" + _CLOSE
    return text[:start] + merged + text[close + len(_CLOSE):]


def merge_thread_sections(existing: str, sections: Sequence[tuple[str, str]], boundary: str | Sequence[str]) -> str:
    """Add new per-thread observations to resource-scope text, one thread section at a time (Mastra's
    replaceOrAppendThreadSection): merged into the thread's first section when that section already has
    the new section's first date, else appended after a message boundary (`boundary` is one separator
    for all, or one per section, e.g. stamped with each thread's newest observed message)."""
    text = existing
    for i, (display, body) in enumerate(sections):
        if not body.strip():
            continue
        section = wrap_thread(display, body)
        if not text:
            text = section
            continue
        merged = _merge_into_first_section(text, display, section)
        if merged is not None:
            text = merged
            continue
        text += (boundary if isinstance(boundary, str) else boundary[i]) + section
    return text


OTHER_SEPARATOR = "\n\n"  # between two threads' blocks


def other_conversation_parts(threads: Mapping[str, Sequence[Message]], fmt: Callable[[Sequence[Message]], str],
                             obscure: bool) -> list[str]:
    """One `<other-conversation id=…>` block per thread with unobserved messages, in order."""
    return [f'<other-conversation id="{display_id(tid, obscure)}">\n{fmt(msgs)}\n</other-conversation>'
            for tid, msgs in threads.items() if msgs]


def other_conversations_block(threads: Mapping[str, Sequence[Message]], fmt: Callable[[Sequence[Message]], str],
                              obscure: bool) -> str:
    """`<other-conversation id=…>` blocks for the unobserved messages of other threads (inner content)."""
    return OTHER_SEPARATOR.join(other_conversation_parts(threads, fmt, obscure))
