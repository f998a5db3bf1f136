"""Long texts in the results file (prompts, replies, memory) are stored zlib-compressed: a question-time prompt
of a full-context run is ~115k tokens, and it compresses about fourfold."""

from __future__ import annotations

import json
import zlib
from typing import Any, Mapping, Sequence


def pack(text: str | None) -> bytes | None:
    """zlib-compressed UTF-8 of a text (None stays None)."""
    return None if text is None else zlib.compress(text.encode("utf-8"), 6)


def unpack(blob: bytes | bytearray | memoryview | None) -> str | None:
    """The text `pack` compressed (None stays None)."""
    return None if blob is None else zlib.decompress(bytes(blob)).decode("utf-8")


def pack_messages(messages: Sequence[Mapping[str, Any]] | None) -> bytes | None:
    """Chat messages as compressed JSON."""
    return None if messages is None else pack(json.dumps(list(messages), ensure_ascii=False, default=str))


def unpack_messages(blob: bytes | bytearray | memoryview | None) -> list[dict[str, Any]] | None:
    text = unpack(blob)
    if text is None:
        return None
    out = json.loads(text)
    return out if isinstance(out, list) else None
