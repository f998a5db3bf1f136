"""Detect model output stuck in a repetition loop (spec §4.4), applied to raw Observer/Reflector output."""

from __future__ import annotations

from om_core.errors import DegenerateOutputError

__all__ = ["DegenerateOutputError", "detect_degenerate_repetition"]

MIN_CHARS = 2_000  # shorter texts are never judged degenerate
WINDOW = 200
SAMPLES = 50  # window step = len // SAMPLES
MIN_WINDOWS = 5
WINDOW_DUP_RATIO = 0.4
MAX_LINE_CHARS = 50_000
MIN_LINE_CHARS = 24  # only lines this long (stripped) take part in the duplicate-line rule
MIN_LINES = 20
LINE_DUP_RATIO = 0.5


def _repeated_windows(text: str) -> bool:
    step = max(1, len(text) // SAMPLES)
    seen: set[str] = set()
    total = dup = 0
    for start in range(0, len(text) - WINDOW + 1, step):
        window = text[start : start + WINDOW]
        total += 1
        if window in seen:
            dup += 1
        else:
            seen.add(window)
    return total > MIN_WINDOWS and dup / total > WINDOW_DUP_RATIO


def _repeated_lines(lines: list[str]) -> bool:
    seen: set[str] = set()
    counted = dup = 0
    for line in lines:
        s = line.strip()
        if len(s) < MIN_LINE_CHARS:
            continue
        counted += 1
        if s in seen:
            dup += 1
        else:
            seen.add(s)
    return counted >= MIN_LINES and dup / counted > LINE_DUP_RATIO


def detect_degenerate_repetition(text: str) -> bool:
    """True when `text` looks like a repetition loop; short texts (< 2,000 chars) never do."""
    if len(text) < MIN_CHARS:
        return False
    if _repeated_windows(text):
        return True
    lines = text.split("\n")
    if any(len(line) > MAX_LINE_CHARS for line in lines):
        return True
    return _repeated_lines(lines)

