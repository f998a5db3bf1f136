"""The Actor prompt as ordered segments: the one type strategies produce and cache simulators consume.

A segment is a unit that is either byte-identical to a segment of an earlier prompt or not. Its `key` is
stable across turns for the same logical block (e.g. "sys", "om:chunk:0", "turn:12:user"), so simulators
can skip unchanged segments without re-tokenising or comparing them token by token.

These are plain types and import nothing of the harness. Their token rendering (message headers + segment ids,
what a provider's prefix cache sees) and its memos live in `bench.render` (`prompt_units(prompt)`,
`token_count(prompt)` for the default `Renderer`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Segment:
    role: str
    text: str
    key: str = ""
    breakpoint: bool = False  # a natural cache breakpoint (Anthropic cache_control candidate)
    # Segments of one chat message share `message_index` (their texts are concatenated, so rendering to
    # chat messages is lossless).
    message_index: int = -1

    @property
    def digest(self) -> str:
        """Content hash of (role, text): equal digests <=> the same message content."""
        return hashlib.blake2b(f"{self.role}\x00{self.text}".encode(), digest_size=16).hexdigest()


@dataclass
class Prompt:
    segments: list[Segment] = field(default_factory=list)
    # Free-form notes about how the prompt was built (e.g. truncated=True, retrieved ids).
    meta: dict[str, Any] = field(default_factory=dict)

    def add(self, role: str, text: str, key: str = "", breakpoint: bool = False, new_message: bool = True) -> None:
        """Append a segment; with new_message=False it continues the previous chat message."""
        if new_message or not self.segments:
            idx = (self.segments[-1].message_index + 1) if self.segments else 0
        else:
            idx = self.segments[-1].message_index
        self.segments.append(Segment(role=role, text=text, key=key, breakpoint=breakpoint, message_index=idx))

    def to_messages(self) -> list[dict[str, str]]:
        """OpenAI-style chat messages; segments of the same message are concatenated."""
        out: list[dict[str, str]] = []
        last = None
        for s in self.segments:
            if s.message_index == last and out:
                out[-1]["content"] += s.text
            else:
                out.append({"role": s.role, "content": s.text})
                last = s.message_index
        return out

    @property
    def text(self) -> str:
        return "".join(s.text for s in self.segments)
