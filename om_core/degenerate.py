"""Detect model output stuck in a repetition loop, applied to raw Observer/Reflector output.

Rules from mastra-ai/mastra, packages/memory/src/processors/observational-memory/observer-agent.ts
(`detectDegenerateRepetition`). One addition: given the `source` the model was asked to compress, a repetition
rule that the source itself trips does not count against the output (600 identical input lines faithfully
summarised as 60 identical observations are not a loop).
"""

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
    if len(text) < MIN_CHARS:
        return False
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


def detect_degenerate_repetition(text: str, source: str | None = None) -> bool:
    """True when `text` looks like a repetition loop; short texts (< 2,000 chars) never do.

    `source`: the text the model was given to compress (the Observer's message history, the Reflector's
    observations). A window or line rule that `source` trips as well is taken as faithful repetition."""
    if len(text) < MIN_CHARS:
        return False
    if _repeated_windows(text) and not (source and _repeated_windows(source)):
        return True
    lines = text.split("\n")
    if any(len(line) > MAX_LINE_CHARS for line in lines):
        return True
    return _repeated_lines(lines) and not (source and _repeated_lines(source.split("\n")))

