"""Offline embedder: hashed bag of words (unigrams + bigrams), signed, L2-normalised.

Deterministic across processes (blake2b, not Python's salted `hash`). A dry-run stand-in whose similarity is
lexical overlap, not an embedding model's semantics.
"""

from __future__ import annotations

import hashlib
import math

from bench.offline.text import content_words

DEFAULT_DIM = 256


def _slot(feature: str, dim: int) -> tuple[int, float]:
    h = hashlib.blake2b(feature.encode(), digest_size=8).digest()
    n = int.from_bytes(h, "little")
    return n % dim, (1.0 if (n >> 63) & 1 else -1.0)


def embed_text(text: str, dim: int = DEFAULT_DIM) -> list[float]:
    vec = [0.0] * dim
    words = content_words(text)
    feats = words + [f"{a} {b}" for a, b in zip(words, words[1:])]
    for f in feats:
        i, sign = _slot(f, dim)
        vec[i] += sign * (0.5 if " " in f else 1.0)
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0:
        return vec
    return [round(v / norm, 6) for v in vec]


def embed_texts(texts: list[str], dim: int = DEFAULT_DIM) -> list[list[float]]:
    return [embed_text(t, dim) for t in texts]
