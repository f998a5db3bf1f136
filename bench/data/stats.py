"""Dataset summaries: question-type counts and haystack sizes in o200k_base tokens.

A haystack's size is the sum over its sessions of the tokens of the session's turn contents joined by
newlines. Sessions recur across questions (S: 23.7k sessions, 18.4k distinct), so each distinct session
text is encoded once, in batches on several threads (tiktoken releases the GIL).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence

from bench.data.schema import Instance, Session
from om_core.formats import get_encoding

_BATCH = 256  # bounded: a batch's token lists are materialised before being counted


def session_text(session: Session) -> str:
    return "\n".join(t.content for t in session.turns)


def count_texts(texts: Sequence[str], encoding: str = "o200k_base", threads: int | None = None) -> list[int]:
    enc = get_encoding(encoding)
    n_threads = threads or min(8, os.cpu_count() or 1)
    out: list[int] = []
    for start in range(0, len(texts), _BATCH):
        batch = list(texts[start : start + _BATCH])
        out.extend(len(ids) for ids in enc.encode_ordinary_batch(batch, num_threads=n_threads))
    return out


def haystack_tokens(instances: Iterable[Instance], encoding: str = "o200k_base") -> list[int]:
    """Tokens per haystack, in instance order."""
    per_instance: list[list[str]] = []
    distinct: dict[str, int] = {}
    for inst in instances:
        texts = [session_text(s) for s in inst.sessions]
        for t in texts:
            distinct.setdefault(t, 0)
        per_instance.append(texts)
    keys = list(distinct)
    for key, n in zip(keys, count_texts(keys, encoding)):
        distinct[key] = n
    return [sum(distinct[t] for t in texts) for texts in per_instance]


def percentile_low(values: Sequence[int], q: float) -> int:
    """Nearest-rank percentile that is always one of the values (p50 of an even count = lower middle)."""
    if not values:
        return 0
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))
    return ordered[rank]


def token_summary(instances: Iterable[Instance], encoding: str = "o200k_base") -> dict[str, int]:
    sizes = haystack_tokens(instances, encoding)
    return {
        "p50": percentile_low(sizes, 50),
        "max": max(sizes, default=0),
        "min": min(sizes, default=0),
        "total": sum(sizes),
    }
