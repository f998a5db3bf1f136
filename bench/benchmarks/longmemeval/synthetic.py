"""A small synthetic LongMemEval-format sample: six question types plus abstention, answers derivable from
dated evidence sessions hidden among generated filler, haystacks sized in o200k tokens.

Clearly not LongMemEval data: question ids start with `syn_`, and the loader labels the dataset
split "synthetic", official false. Fully deterministic for a seed.
"""

from __future__ import annotations

import hashlib
import json
import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.data.dataset import Dataset
from bench.benchmarks.longmemeval.dates import format_lme_date
from bench.benchmarks.longmemeval.synthetic_evidence import ABSTENTION_TYPES, BUILDERS, Turns
from bench.benchmarks.longmemeval.synthetic_filler import filler_session
from bench.benchmarks.longmemeval.format import QUESTION_TYPES, parse_instances
from bench.errors import DataError
from om_core.tokens import default_counter


def session_tokens(turns: Turns) -> int:
    """Same measure as bench.data.stats: o200k tokens of the turn contents joined by newlines."""
    return default_counter().count_string("\n".join(t["content"] for t in turns))


def generate(n_per_type: int = 2, haystack_tokens: int = 6000, seed: int = 0, abstention_per_type: int = 1) -> list[dict[str, Any]]:
    """Raw question dicts in the official key layout. `abstention_per_type` applies to the four types that
    have abstention questions in the official data (single-session-user, multi-session, temporal-reasoning,
    knowledge-update). `haystack_tokens` is a target; filler stops once it is reached (within a session)."""
    for key, value, low in (("n_per_type", n_per_type, 0), ("haystack_tokens", haystack_tokens, 0), ("abstention_per_type", abstention_per_type, 0)):
        if not isinstance(value, int) or value < low:
            raise DataError(f"synthetic: parameter {key} is {value!r}; it must be an integer >= {low}")
    out: list[dict[str, Any]] = []
    for qtype in QUESTION_TYPES:
        base = random.Random(f"synthetic:{seed}:{qtype}").randrange(1000)  # which kind each type starts with
        n_abs = abstention_per_type if qtype in ABSTENTION_TYPES else 0
        for i in range(n_per_type):
            out.append(_question(qtype, base + i, seed, haystack_tokens, abstain=False))
        for i in range(n_abs):
            out.append(_question(qtype, base + i, seed, haystack_tokens, abstain=True))
    return out


def _question(qtype: str, variant: int, seed: int, target_tokens: int, abstain: bool) -> dict[str, Any]:
    key = f"{seed}:{qtype}:{variant}:{'abs' if abstain else 'ans'}"
    rng = random.Random("synthetic-question:" + key)
    hexid = hashlib.blake2b(key.encode(), digest_size=4).hexdigest()
    qdate = datetime(2023, 1, 20) + timedelta(days=rng.randint(0, 300), hours=rng.randint(9, 22), minutes=rng.randint(0, 59))
    ev = BUILDERS[qtype](rng, qdate, variant, abstain)
    tag = "_abs" if abstain else ""
    sessions: list[tuple[datetime, str, Turns]] = [
        (when, f"answer_{hexid}{tag}_{k}", turns) for k, (when, turns) in enumerate(ev.sessions, 1)
    ]
    oldest = min(when for when, _, _ in sessions)
    span_s = max(int((qdate - oldest).total_seconds()) + 5 * 86400, 30 * 86400)
    total = sum(session_tokens(turns) for _, _, turns in sessions)
    frng = random.Random("synthetic-filler:" + key)
    while total < target_tokens:
        remaining = target_tokens - total
        turns = filler_session(frng)
        n = session_tokens(turns)
        while n > remaining and len(turns) > 2:  # trim whole exchanges to land near the target
            turns = turns[:-2]
            n = session_tokens(turns)
        if n > remaining and remaining < n / 2:  # overshooting would miss the target by more than stopping
            break
        when = qdate - timedelta(seconds=frng.randint(3600, span_s))
        sessions.append((when.replace(second=0, microsecond=0), f"syn_{frng.getrandbits(32):08x}", turns))
        total += n
    sessions.sort(key=lambda s: s[0])
    return {
        "question_id": f"syn_{hexid}{tag}",
        "question_type": qtype,
        "question": ev.question,
        "question_date": format_lme_date(qdate),
        "answer": ev.answer,
        "answer_session_ids": [sid for _, sid, _ in sessions if sid.startswith("answer_")],
        "haystack_dates": [format_lme_date(when) for when, _, _ in sessions],
        "haystack_session_ids": [sid for _, sid, _ in sessions],
        "haystack_sessions": [turns for _, _, turns in sessions],
    }


def synthetic_spec(n_per_type: int = 2, haystack_tokens: int = 6000, seed: int = 0, abstention_per_type: int = 1) -> str:
    """The dataset name that `load_dataset` turns back into exactly this sample."""
    return f"synthetic:n_per_type={n_per_type},haystack_tokens={haystack_tokens},seed={seed},abstention_per_type={abstention_per_type}"


def synthetic_dataset(**params: int) -> Dataset:
    raw = generate(**params)
    data = json.dumps(raw, ensure_ascii=False).encode("utf-8")
    spec = synthetic_spec(**params)
    return Dataset(
        instances=parse_instances(raw, spec),
        name=spec,
        path=None,
        sha256=hashlib.sha256(data).hexdigest(),
        official=False,
        split="synthetic",
        note="synthetic sample generated by om-bench (ids syn_*); not LongMemEval data",
        types=QUESTION_TYPES,
    )


def write_synthetic(path: str | Path, **params: int) -> Path:
    """Write the sample as .json (array), .jsonl (one question per line), optionally .xz or .gz compressed."""
    path = Path(path)
    raw = generate(**params)
    name = path.name
    plain = name.removesuffix(".xz").removesuffix(".gz")
    if plain.endswith(".jsonl"):
        text = "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in raw)
    elif plain.endswith(".json"):
        text = json.dumps(raw, ensure_ascii=False, indent=2)
    else:
        raise DataError(f"{path}: unknown file type; use .json, .jsonl, .json.xz, .jsonl.xz, .json.gz or .jsonl.gz")
    data = text.encode("utf-8")
    if name.endswith(".xz"):
        import lzma

        data = lzma.compress(data)
    elif name.endswith(".gz"):
        import gzip

        data = gzip.compress(data, mtime=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path
