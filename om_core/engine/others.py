"""The OTHER-conversations block of resource scope (the unobserved messages of the resource's other threads, as
the Actor sees them) and its token count, memoised while every thread's unobserved messages stay the same.

Formatting from mastra-ai/mastra, packages/memory/src/processors/observational-memory/observational-memory.ts
(other threads' messages through the Observer formatter, 500 characters per part).
"""

from __future__ import annotations

from datetime import tzinfo
from operator import is_
from typing import Any, Mapping, Sequence

from om_core.observer_format import format_messages
from om_core.scopes import OTHER_SEPARATOR, other_conversation_parts
from om_core.tokens import TokenCounter
from om_core.types import Message

OTHER_PART_CHARS = 500
OTHER_MEMO_THREADS = 1024  # formatted OTHER-conversation blocks kept (one per thread)


class OtherConversations:
    """Renders and counts the block; a thread's part (text and tokens) is built once per unobserved tail, and the
    whole block is rebuilt only when a thread's tail, or the set of threads, seen from the reader changed."""

    def __init__(self, profile: str, tz: tzinfo, counter: TokenCounter, obscure: bool) -> None:
        self.profile, self.tz, self.counter, self.obscure = profile, tz, counter, obscure
        # per thread: [its unobserved messages, its part, tokens of part + separator, tokens of the part alone]
        self._parts: dict[str | None, list[Any]] = {}
        # per reader: (thread ids, their message sequences, block text, block tokens)
        self._blocks: dict[tuple[str, str], tuple[tuple[str, ...], tuple[Sequence[Message], ...], str, int]] = {}

    def block(self, resource_id: str, thread_id: str, others: Mapping[str, Sequence[Message]]) -> tuple[str, int]:
        """(the block's inner text, its tokens) as seen from `thread_id`; ("", 0) without other messages."""
        if not others:
            return "", 0
        key = (resource_id, thread_id)
        seqs = tuple(others.values())
        hit = self._blocks.get(key)
        # the same sequences, object for object (a caller that keeps its tails hands back the same tuples)
        if hit is not None and len(hit[1]) == len(seqs) and all(map(is_, hit[1], seqs)) and hit[0] == tuple(others):
            return hit[2], hit[3]
        parts = [self._part(tid, ms) for tid, ms in others.items() if ms]
        if not parts:
            text, tokens = "", 0
        else:
            text = OTHER_SEPARATOR.join(p[1] for p in parts)
            # the parts are counted on their own (each ends with a newline before the next "<": the encoding
            # splits there, see TokenCounter.count_joined), each once per tail: exact, and O(threads) per rebuild
            tokens = sum(self._tokens(p, True) for p in parts[:-1]) + self._tokens(parts[-1], False)
        if len(self._blocks) >= OTHER_MEMO_THREADS:
            self._blocks.clear()
        self._blocks[key] = (tuple(others), seqs, text, tokens)
        return text, tokens

    def _part(self, thread_id: str, msgs: Sequence[Message]) -> list[Any]:
        """A thread's `<other-conversation>` part for these messages (memoised while they are the same)."""
        hit = self._parts.get(thread_id)
        if hit is not None and (hit[0] is msgs or hit[0] == tuple(msgs)):
            return hit
        text = self._format(msgs)
        part = other_conversation_parts({thread_id: msgs}, lambda _: text, self.obscure)[0]
        if len(self._parts) >= OTHER_MEMO_THREADS:
            self._parts.clear()
        entry = self._parts[thread_id] = [msgs if isinstance(msgs, tuple) else tuple(msgs), part, None, None]
        return entry

    def _tokens(self, entry: list[Any], separated: bool) -> int:
        """Tokens of a part followed by the separator, or alone (the last part); counted by line pieces, so the
        rendering of the block (tokenised by line pieces too) finds them."""
        i = 2 if separated else 3
        if entry[i] is None:
            entry[i] = self.counter.count_by_lines(entry[1] + OTHER_SEPARATOR if separated else entry[1], keep_ids=False)
        return int(entry[i])

    def _format(self, msgs: Sequence[Message]) -> str:
        """Another thread's unobserved messages as shown to the Actor."""
        return format_messages(msgs, self.profile, tz=self.tz, counter=self.counter, max_part_chars=OTHER_PART_CHARS)
