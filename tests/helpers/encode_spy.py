"""A stand-in for a TokenCounter's tiktoken encoding that records every text it is asked to encode: tests of
"tokenised once" (issue 30) count what reached the tokenizer."""

from __future__ import annotations

from typing import Any


class EncodeSpy:
    """Wraps an encoding (`TokenCounter._enc`); `texts` lists each text passed to `encode`, in order."""

    def __init__(self, enc: Any) -> None:
        self.enc, self.texts = enc, []

    def encode(self, text: str, **kw: Any) -> list[int]:
        self.texts.append(text)
        return self.enc.encode(text, **kw)

    def __getattr__(self, name: str) -> Any:  # the rest of the encoding (decode_single_token_bytes, ...)
        return getattr(self.enc, name)


def spy_encode(monkeypatch: Any, enc: Any) -> list[str]:
    """Patch `enc.encode` (a TokenCounter's `_enc`) to record each text it encodes; returns the list it fills."""
    texts: list[str] = []
    real = enc.encode

    def encode(text: str, *a: Any, **kw: Any) -> list[int]:
        texts.append(text)
        return real(text, *a, **kw)

    monkeypatch.setattr(enc, "encode", encode)
    return texts
