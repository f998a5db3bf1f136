"""The OTHER-conversations block of resource scope (the unobserved messages of the resource's other threads, as
the Actor sees them) and its token count, memoised while every thread's unobserved messages stay the same.

Formatting from mastra-ai/mastra, packages/memory/src/processors/observational-memory/observational-memory.ts
(other threads' messages through the Observer formatter, 500 characters per part).
"""

from __future__ import annotations

from datetime import tzinfo
from typing import Mapping, Sequence

from om_core.observer_format import format_messages
from om_core.scopes import OTHER_SEPARATOR, other_conversation_parts
from om_core.tokens import TokenCounter
from om_core.types import Message

OTHER_PART_CHARS = 500
OTHER_MEMO_THREADS = 1024  # formatted OTHER-conversation blocks kept (one per thread)


class OtherConversations:
    """Renders and counts the block; a thread's text and the whole block are rebuilt only when they change."""

    def __init__(self, profile: str, tz: tzinfo, counter: TokenCounter, obscure: bool) -> None:
        self.profile, self.tz, self.counter, self.obscure = profile, tz, counter, obscure
        self._threads: dict[tuple[str | None, str], tuple[tuple[Message, ...], str]] = {}
        self._blocks: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...], str, int]] = {}

    def block(self, resource_id: str, thread_id: str, others: Mapping[str, Sequence[Message]]) -> tuple[str, int]:
        """(the block's inner text, its tokens) as seen from `thread_id`; ("", 0) without other messages."""
        if not others:
            return "", 0
        texts = tuple(self._format(ms) for ms in others.values())
        key = (resource_id, thread_id)
        hit = self._blocks.get(key)
        if hit is not None and hit[0] == tuple(others) and all(a is b for a, b in zip(hit[1], texts, strict=True)):
            return hit[2], hit[3]
        by_thread = dict(zip(others, texts))
        parts = other_conversation_parts(others, lambda ms: by_thread[ms[0].thread_id or ""], self.obscure)
        text = OTHER_SEPARATOR.join(parts)
        # counted part by part (each part's count is memoised by its text): when the reader moves to another
        # thread or one thread is observed, only the parts that changed are tokenised again
        pieces = [p + OTHER_SEPARATOR for p in parts[:-1]] + parts[-1:]
        if len(self._blocks) >= OTHER_MEMO_THREADS:
            self._blocks.clear()
        self._blocks[key] = (tuple(others), texts, text, self.counter.count_joined(pieces))
        return text, self._blocks[key][3]

    def _format(self, msgs: Sequence[Message]) -> str:
        """Another thread's unobserved messages as shown to the Actor; memoised while they are unchanged."""
        key = (msgs[0].thread_id, msgs[0].id)
        hit = self._threads.get(key)
        # the same tuple from memory's status (unchanged tail) is recognised by identity; else identical
        # message objects compare without field checks
        if hit is not None and (hit[0] is msgs or hit[0] == tuple(msgs)):
            return hit[1]
        text = format_messages(msgs, self.profile, tz=self.tz, counter=self.counter, max_part_chars=OTHER_PART_CHARS)
        if len(self._threads) >= OTHER_MEMO_THREADS:
            self._threads.clear()
        self._threads[key] = (tuple(msgs), text)
        return text
