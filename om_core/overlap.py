"""How much of a model output is verbatim text of something else: its input (a copy) or om_core's own prompt
(an echo). Used by the output guards (`om_core.guards`); the thresholds live there.

Lines are compared after normalisation: lower case, runs of whitespace collapsed, leading markdown bullets
and heading marks (`#`, `*`, `•`, `- `) and `**` emphasis removed. The observation marks a model adds on its own
(priority emoji, `(HH:MM)` clocks, `->` arrows) are kept, and the guards match observation lines only as whole
lines, so a faithful observation never counts as a copy of a conversation (which has no such lines) nor as an
echo of the prompt because it starts like one of its examples.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable, Iterable

MIN_LINE_CHARS = 16  # shorter lines (after normalisation) are not judged: "Thanks!", "Date: ..." headers
SHINGLE_WORDS = 8  # reproduced_share: runs of this many words
LINE_MEMO = 1 << 16  # normalised lines remembered (the prompt's instructions recur in every guard check)

_LEAD = re.compile(r"^(?:[#*•>]+\s*|-\s+)+")
_EMPHASIS = re.compile(r"\*\*|__")
_TAG_LINE = re.compile(r"^</?[a-z][\w-]*(?:\s[^>]*)?>$")
_DATE_LINE = re.compile(r"^date:\s")
_WORD = re.compile(r"\w+")


@lru_cache(maxsize=LINE_MEMO)
def normalize_line(line: str) -> str:
    """A line as the overlap measures compare it (see the module docstring). Memoised per line: the guards
    normalise the same prompt text and the same history lines at every check."""
    return " ".join(_LEAD.sub("", _EMPHASIS.sub("", line.strip())).lower().split())


def normalize_text(text: str) -> str:
    """Every line normalised, joined by single spaces: a text a normalised line is looked up in."""
    return " ".join(n for n in (normalize_line(line) for line in text.split("\n")) if n)


def content_lines(text: str) -> list[str]:
    """The normalised lines of `text` that carry content: not blank, not a lone tag, not a `Date:` header, at
    least MIN_LINE_CHARS long."""
    out = []
    for line in text.split("\n"):
        n = normalize_line(line)
        if len(n) >= MIN_LINE_CHARS and not _TAG_LINE.match(n) and not _DATE_LINE.match(n):
            out.append(n)
    return out


def verbatim_line_share(text: str, reference: str, *, whole_line: Callable[[str], bool] | None = None) -> float:
    """Share (0..1, by characters) of `text`'s content lines that occur verbatim, after normalisation, in
    `reference`: anywhere in it (a line may be part of a longer reference line), or, for the lines
    `whole_line(line)` selects, only as a whole reference line. 0.0 when `text` has no content line."""
    lines = content_lines(text)
    total = sum(len(line) for line in lines)
    if not total:
        return 0.0
    ref_lines = [normalize_line(line) for line in reference.split("\n")]  # once for both look-ups
    ref = " ".join(n for n in ref_lines if n)  # normalize_text(reference)
    whole = set(ref_lines) if whole_line else set()

    def found(line: str) -> bool:
        return line in whole if whole_line is not None and whole_line(line) else line in ref

    return sum(len(line) for line in lines if found(line)) / total


def words_of(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _shingles(text: str, k: int) -> set[tuple[str, ...]]:
    """Runs of k consecutive words within each line (a run across a line break depends on how the lines around
    it were framed, which a copy need not keep)."""
    out: set[tuple[str, ...]] = set()
    for line in text.split("\n"):
        words = words_of(line)
        if len(words) >= k:  # every run of k words: zip of the word list shifted 0..k-1 times
            out.update(zip(*(words[i:] for i in range(k))))
    return out


def reproduced_share(text: str, source: str, *, k: int = SHINGLE_WORDS) -> float:
    """Share (0..1) of `source`'s runs of `k` consecutive words (within a line) that `text` reproduces verbatim,
    in any order: near 1.0 for a full copy, whatever marks were added around its lines. 0.0 when `source` has no
    line of k words."""
    src = _shingles(source, k)
    if not src:
        return 0.0
    return len(src & _shingles(text, k)) / len(src)


def reproduces(text: str, source: str, share: float, *, k: int = SHINGLE_WORDS) -> bool:
    """`reproduced_share(text, source, k=k) >= share`, exactly, without the source's every run when that is
    false: `text` has U distinct runs, so it reproduces at most U of the source's; once the source's lines read
    so far hold more than (U + 2) / share distinct runs, the share is below `share` whatever the rest holds (by
    a margin far above float rounding). A faithful output is much shorter than its input, so the copy guard
    reads a fraction of the input's lines."""
    if share <= 0:
        return reproduced_share(text, source, k=k) >= share
    txt = _shingles(text, k)
    limit = (len(txt) + 2) / share
    src: set[tuple[str, ...]] = set()
    for line in source.split("\n"):
        words = words_of(line)
        if len(words) >= k:
            src.update(zip(*(words[i:] for i in range(k))))
            if len(src) > limit:
                return False
    if not src:
        return 0.0 >= share
    return len(src & txt) / len(src) >= share


def lines_containing(text: str, needles: Iterable[str]) -> list[str]:
    """The normalised lines of `text` that contain one of the (normalised) `needles`."""
    wanted = [n for n in needles if n]
    return [n for n in (normalize_line(line) for line in text.split("\n")) if any(w in n for w in wanted)]
