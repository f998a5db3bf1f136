"""Detect model output stuck in a loop, applied to raw Observer/Reflector output.

Repetition rules from mastra-ai/mastra, packages/memory/src/processors/observational-memory/observer-agent.ts
(`detectDegenerateRepetition`). Two additions of this project:

* Faithful repetition. Given the `source` the model was asked to compress, repetition that copies the
  source's own repetition does not count: the source must trip the same rule, the output must repeat no more
  units than the source does, and at least half of the words of the output's repeated units must come from the
  source's repeated units (600 identical input lines summarised as 60 identical observations are accepted; a
  loop about something else, or a longer one than the input's, is not).
* Counting loops (`detect_counting_loop`): "1, 2, 3, ... 200", or lines that differ only by a number counting
  up ("Item 1", "Item 2", ...), at least `COUNT_RUN` long, are a loop at any length unless the source counts
  as well. Mastra's rules miss them: the items are short and all different.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable

from om_core.errors import DegenerateOutputError

__all__ = ["DegenerateOutputError", "detect_counting_loop", "detect_degenerate_repetition"]

MIN_CHARS = 2_000  # shorter texts are never judged degenerate by the repetition rules
WINDOW = 200
SAMPLES = 50  # window step = len // SAMPLES
MIN_WINDOWS = 5
WINDOW_DUP_RATIO = 0.4
MAX_LINE_CHARS = 50_000
MIN_LINE_CHARS = 24  # only lines this long (stripped) take part in the duplicate-line rule
MIN_LINES = 20
LINE_DUP_RATIO = 0.5
WINDOW_RATIO_SLACK = 0.1
FAITHFUL_WORD_SHARE = 0.5  # share of the output's repeated words that the source's repeated units must contain
COUNT_RUN = 30  # items counting up by one, identical apart from the number: a counting loop

_WORD = re.compile(r"[^\W\d_]{3,}")
_NUMBER = re.compile(r"\d+")
_ONLY_NUMBERS = re.compile(r"^[\s\d,;.:\-–]+$")


def _windows(text: str) -> list[str]:
    step = max(1, len(text) // SAMPLES)
    return [text[start : start + WINDOW] for start in range(0, len(text) - WINDOW + 1, step)]


def _dup_stats(units: list[str]) -> tuple[int, int, Counter[str]]:
    """(units counted, duplicates, count of every unit seen more than once)."""
    seen: Counter[str] = Counter(units)
    repeated = Counter({u: n for u, n in seen.items() if n > 1})
    return len(units), len(units) - len(seen), repeated


def _line_units(text: str) -> list[str]:
    return [s for s in (line.strip() for line in text.split("\n")) if len(s) >= MIN_LINE_CHARS]


def _window_loop(units: list[str]) -> bool:
    total, dup, _ = _dup_stats(units)
    return total > MIN_WINDOWS and dup / total > WINDOW_DUP_RATIO


def _line_loop(units: list[str]) -> bool:
    counted, dup, _ = _dup_stats(units)
    return counted >= MIN_LINES and dup / counted > LINE_DUP_RATIO


def _words(units: Iterable[str]) -> set[str]:
    return {w.lower() for u in units for w in _WORD.findall(u)}


def _faithful(out_units: list[str], src_units: list[str], *, by_ratio: bool = False) -> bool:
    """The output's repeated units copy the source's: no more duplicates than the source has (`by_ratio`: no
    larger a share of duplicates, plus WINDOW_RATIO_SLACK, for sampled windows, whose number does not grow with
    the text), and the words of the output's repeated units mostly come from the source's repeated units."""
    out_n, out_dup, out_rep = _dup_stats(out_units)
    src_n, src_dup, src_rep = _dup_stats(src_units)
    if not out_rep:
        return False
    if by_ratio and out_dup / out_n > src_dup / src_n + WINDOW_RATIO_SLACK:
        return False
    if not by_ratio and out_dup > src_dup:
        return False
    out_words = _words(out_rep)
    return not out_words or len(out_words & _words(src_rep)) / len(out_words) >= FAITHFUL_WORD_SHARE


def _copies_source_repetition(text: str, source: str | None) -> bool:
    """Whether the repetition in `text` is the source's own (see `_faithful`): compared line by line when the
    source repeats lines, else window by window. Sampled windows alone are a poor witness for the source: whether
    they catch a repeated line depends on how the sampling step falls on its length."""
    if not source:
        return False
    src_lines = _line_units(source)
    if _line_loop(src_lines) and _faithful(_line_units(text), src_lines):
        return True
    src_windows = _windows(source) if len(source) >= MIN_CHARS else []
    return bool(src_windows) and _window_loop(src_windows) and _faithful(_windows(text), src_windows, by_ratio=True)


def detect_degenerate_repetition(text: str, source: str | None = None) -> bool:
    """True when `text` looks like a repetition loop; short texts (< 2,000 chars) never do.

    `source`: the text the model was given to compress (the Observer's message history, the Reflector's
    observations). Repetition that copies the source's own repetition is not a loop: the output repeats no
    more than the source does and its repeated words come from the source's repeated units."""
    if len(text) < MIN_CHARS:
        return False
    if any(len(line) > MAX_LINE_CHARS for line in text.split("\n")):
        return True
    if not (_window_loop(_windows(text)) or _line_loop(_line_units(text))):
        return False
    return not _copies_source_repetition(text, source)


def _items(text: str) -> list[str]:
    """Lines, with lines of bare numbers or long comma lists split into their items."""
    out: list[str] = []
    for line in text.split("\n"):
        s = line.strip()
        if not s:
            continue
        if _ONLY_NUMBERS.match(s):
            out += _NUMBER.findall(s)
        elif s.count(",") >= 10:
            out += [p.strip() for p in s.split(",") if p.strip()]
        else:
            out.append(s)
    return out


def _counts_on(prev: tuple[str, list[int]] | None, form: str, numbers: list[int]) -> bool:
    """`numbers` follow `prev`'s in the same form: equal except one, which is one higher."""
    if prev is None or prev[0] != form or len(prev[1]) != len(numbers):
        return False
    diff = [(a, b) for a, b in zip(prev[1], numbers) if a != b]
    return len(diff) == 1 and diff[0][1] == diff[0][0] + 1


def longest_count(text: str) -> int:
    """The longest run of consecutive items (lines, or comma-separated items) that are identical apart from one
    number, which counts up by one from item to item."""
    best = run = 0
    prev: tuple[str, list[int]] | None = None
    for item in _items(text):
        found = _NUMBER.findall(item)
        if not found or any(len(n) > 9 for n in found):
            prev, run = None, 0
            continue
        form, numbers = _NUMBER.sub("#", item), [int(n) for n in found]
        run = run + 1 if _counts_on(prev, form, numbers) else 1
        prev = (form, numbers)
        best = max(best, run)
    return best


def detect_counting_loop(text: str, source: str | None = None) -> bool:
    """True when `text` counts up for `COUNT_RUN` items or more ("1, 2, 3, ... 200"; "Item 1" ... "Item 40")
    and `source` has no such run itself (a faithful summary of an input that counts is not a loop)."""
    run = longest_count(text)
    return run >= COUNT_RUN and not (source and longest_count(source) >= COUNT_RUN)
