"""A word tokenizer for hand-computed expectations: one token per whitespace-separated word.

Message headers ("{role}\\n") are then exactly 1 token, so a message of k words costs k + 1 tokens.
"""

from __future__ import annotations

from bench.prompt import Prompt

_VOCAB: dict[str, int] = {}
_MEMO: dict[str, tuple[int, ...]] = {}


def word_tokenizer(text: str) -> tuple[int, ...]:
    ids = _MEMO.get(text)
    if ids is None:
        ids = _MEMO[text] = tuple(_VOCAB.setdefault(w, len(_VOCAB)) for w in text.split())
    return ids


def W(tag: str, n: int, start: int = 0) -> str:
    """n distinct words tag<start> .. tag<start+n-1>: n tokens under word_tokenizer."""
    return " ".join(f"{tag}{i}" for i in range(start, start + n))


def prompt(*msgs: tuple[str, str] | tuple[str, str, bool]) -> Prompt:
    """Prompt with one segment per message: (role, text[, breakpoint])."""
    p = Prompt()
    for m in msgs:
        p.add(m[0], m[1], breakpoint=bool(m[2]) if len(m) > 2 else False)
    return p
