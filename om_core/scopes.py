"""Resource-scope helpers (spec §2.6, §3.6, §5.1): thread-id obscuring, thread selection and batching,
merging per-thread observation sections, and the OTHER-conversations block. All pure functions."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Callable, Mapping, Sequence

from om_core.types import Message

try:  # Mastra renders obscured ids as xxhash32 hex; fall back to a stable 8-hex digest without it
    import xxhash as _xxhash
except ImportError:  # pragma: no cover - depends on the install
    _xxhash = None

HASH_NAME = "xxh32" if _xxhash is not None else "sha256[:8]"
_SECTION = re.compile(r'<thread id="([^"]*)">\n?(.*?)\n?</thread>', re.DOTALL)
_DATE = re.compile(r"^[ \t]*Date:[ \t]*(.+?)[ \t]*$", re.MULTILINE)


def obscure_thread_id(thread_id: str) -> str:
    """Stable 8-hex rendering of a thread id (hides ids such as session names that could leak answers)."""
    if _xxhash is not None:
        return _xxhash.xxh32(thread_id.encode("utf-8")).hexdigest()
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


def _dates(text: str) -> list[str]:
    return [m.group(1) for m in _DATE.finditer(text)]


def _drop_first_header(text: str) -> str:
    lines = text.strip("\n").split("\n")
    if lines and _DATE.match(lines[0]):
        lines = lines[1:]
    return "\n".join(lines).strip("\n")


def wrap_thread(display: str, body: str) -> str:
    return f'<thread id="{display}">\n{body.strip()}\n</thread>'


def merge_thread_sections(existing: str, sections: Sequence[tuple[str, str]], boundary: str) -> str:
    """Add new per-thread observations to resource-scope text.

    When the last existing section of the same thread ends under the same `Date:` header the new section
    starts with, its lines are merged into that section; otherwise the section is appended, and appended
    sections as a group follow one message boundary (so earlier text keeps its bytes where possible).
    """
    text = existing
    appended: list[str] = []
    for display, body in sections:
        body = body.strip("\n")
        if not body.strip():
            continue
        last = None
        for m in _SECTION.finditer(text):
            if m.group(1) == display:
                last = m
        new_dates = _dates(body)
        if last is not None:
            old_dates = _dates(last.group(2))
            same_day = (new_dates and old_dates and new_dates[0] == old_dates[-1]) or not new_dates
            if same_day:
                merged_body = last.group(2).rstrip("\n") + "\n" + (_drop_first_header(body) if new_dates else body)
                text = text[: last.start()] + wrap_thread(display, merged_body) + text[last.end():]
                continue
        appended.append(wrap_thread(display, body))
    if not appended:
        return text
    block = "\n".join(appended)
    return text + boundary + block if text.strip() else block


def other_conversations_block(threads: Mapping[str, Sequence[Message]], fmt: Callable[[Sequence[Message]], str],
                              obscure: bool) -> str:
    """`<other-conversation id=…>` blocks for the unobserved messages of other threads (inner content)."""
    parts = [f'<other-conversation id="{display_id(tid, obscure)}">\n{fmt(msgs)}\n</other-conversation>'
             for tid, msgs in threads.items() if msgs]
    return "\n\n".join(parts)
