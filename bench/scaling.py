"""How replay time grows with haystack size: haystacks scaled from real ones (`scaled_instances`) and the
exponent b of seconds ~ tokens^b fitted on per-question timings binned by size (`fit_exponent`).

LongMemEval_S haystacks all hold about 100k-115k tokens, too narrow a range to tell linear from quadratic
growth, so `ombench perf --scaling 0.25,0.5,1,2,4` replays each question at several sizes: a prefix of its own
sessions below 1x, its sessions followed by those of the next questions above 1x (dates as in the files; the
replay orders sessions by date). Only the size changes; the text is real.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from itertools import count
from typing import Iterator, Sequence

from bench.data.schema import Instance, Session

DEFAULT_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)


@dataclass(frozen=True)
class Fit:
    exponent: float  # b in seconds ~ tokens^b (1.0 = linear, 2.0 = quadratic)
    bins: int  # size bins the line was fitted through (median tokens, median seconds of each)
    min_tokens: int
    max_tokens: int


def fit_exponent(points: Sequence[tuple[int, float]], bins: int = 5, min_spread: float = 1.5) -> Fit | None:
    """Least-squares slope of log(seconds) on log(tokens) through the medians of up to `bins` equal-count size
    bins of `points` ((haystack tokens, seconds) per question). None when fewer than 3 bins can be formed or
    the largest bin holds less than `min_spread` times the tokens of the smallest (no slope to speak of)."""
    import numpy as np

    pts = sorted((t, s) for t, s in points if t > 0 and s > 0)
    k = min(bins, len(pts))
    if k < 3:
        return None
    groups = [pts[i * len(pts) // k:(i + 1) * len(pts) // k] for i in range(k)]
    xs = np.array([float(np.median([t for t, _ in g])) for g in groups])
    ys = np.array([float(np.median([s for _, s in g])) for g in groups])
    if xs[-1] < min_spread * xs[0]:
        return None
    slope = float(np.polyfit(np.log(xs), np.log(ys), 1)[0])
    return Fit(slope, k, int(xs[0]), int(xs[-1]))


def _chars(sessions: Sequence[Session]) -> int:
    return sum(len(t.content) for s in sessions for t in s.turns)


def _sessions(instances: Sequence[Instance], i: int) -> Iterator[Session]:
    """The sessions a scaled haystack of instance i draws from, in order: its own, then those of the next
    instances, cyclically (borrowed ones get unique ids)."""
    for lap in count():
        for k in range(len(instances)):
            for s in instances[(i + k) % len(instances)].sessions:
                yield s if lap == k == 0 else replace(s, session_id=f"{s.session_id}#{lap}.{k}")


def scaled_instances(instances: Sequence[Instance], factors: Sequence[float] = DEFAULT_FACTORS) -> list[Instance]:
    """Each instance at each factor of its haystack size (by characters), factor by factor: the shortest run of
    `_sessions` (at least one session) that reaches the size, i.e. a prefix of its own sessions below 1x, its
    sessions and borrowed ones above. Question ids get an `@x<factor>` suffix. Raises ValueError for a factor
    <= 0, no instances, or haystacks without text."""
    if not instances or not _chars([s for inst in instances for s in inst.sessions]):
        raise ValueError("scaling needs at least one question with a non-empty haystack")
    if any(f <= 0 for f in factors):
        raise ValueError(f"scaling factors must be > 0, got {list(factors)}")
    out: list[Instance] = []
    for f in factors:
        for i, base in enumerate(instances):
            target = f * _chars(base.sessions)
            taken: list[Session] = []
            size = 0
            for s in _sessions(instances, i):
                if taken and size >= target:
                    break
                taken.append(s)
                size += _chars([s])
            out.append(replace(base, question_id=f"{base.question_id}@x{f:g}", sessions=tuple(taken)))
    return out


def local_exponents(tokens: Sequence[float], seconds: Sequence[float]) -> list[float | None]:
    """The slope of log(seconds) on log(tokens) from each size to the next (None for the first size, or where
    either value is not positive or the sizes are equal): where growth changes regime (e.g. once OM's
    thresholds are reached) the single fitted exponent hides what these show."""
    out: list[float | None] = [None]
    for (t0, s0), (t1, s1) in zip(zip(tokens, seconds), zip(tokens[1:], seconds[1:])):
        ok = min(t0, s0, t1, s1) > 0 and t1 != t0
        out.append(math.log(s1 / s0) / math.log(t1 / t0) if ok else None)
    return out


def render_scaling(factors: Sequence[float], instances: Sequence[Instance], sizes: Sequence[int],
                   per_question: dict[str, list[tuple[int, float]]]) -> str:
    """The scaling table: per factor, the median haystack tokens and each strategy's median seconds per
    question with, in brackets, the local exponent from the size above (`local_exponents`); then each
    strategy's exponent fitted over all the points."""
    n = len(instances) // max(1, len(factors))
    lines = [f"scaling (each of {n} question(s) replayed at {', '.join(f'{f:g}x' for f in factors)} its size; "
             "seconds per question, median, [local exponent from the size above]):",
             f"{'factor':>8}{'tokens':>11}" + "".join(f"{name:>22}" for name in per_question)]
    med_tokens = []
    med_secs: dict[str, list[float]] = {name: [] for name in per_question}
    for j in range(len(factors)):
        rows = range(j * n, (j + 1) * n)
        toks = sorted(sizes[r] for r in rows)
        med_tokens.append(float(toks[len(toks) // 2]))
        for name, pts in per_question.items():
            secs = sorted(pts[r][1] for r in rows if r < len(pts))
            med_secs[name].append(secs[len(secs) // 2] if secs else math.nan)
    slopes = {name: local_exponents(med_tokens, secs) for name, secs in med_secs.items()}
    for j, f in enumerate(factors):
        cells = ""
        for name in per_question:
            sec, b = med_secs[name][j], slopes[name][j]
            cell = "-" if math.isnan(sec) else f"{sec:.3f}" + (f" [{b:.2f}]" if b is not None else "")
            cells += f"{cell:>22}"
        lines.append(f"{f:>7g}x{int(med_tokens[j]):>11,}{cells}")
    exps = []
    for name, pts in per_question.items():
        fit = fit_exponent(pts, bins=len(factors))
        exps.append(f"{name} {fit.exponent:.2f}" if fit and not math.isnan(fit.exponent) else f"{name} n/a")
    lines.append("exponent of seconds ~ tokens^b (1.0 = linear): " + ", ".join(exps))
    return "\n".join(lines)
