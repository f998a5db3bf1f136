"""Small text helpers shared by the offline roles: words, sentences, numbers. Pure functions."""

from __future__ import annotations

import re

STOPWORDS = frozenset(
    """a an the and or but if then so of to in on at by for with from about as into over after before
    is are was were be been being am do does did doing have has had having i me my mine myself you your yours
    we our ours he him his she her it its they them their this that these those there here what which who whom
    whose when where why how can could would should will shall may might must not no nor than too very just
    also any some all each both few more most other such only own same s t don't im i'm i've i'd i'll it's
    that's what's let's up down out off again further once ever yes please thanks thank hi hello okay ok
    get got really much many like know think want need tell give make one""".split()
)

_WORD_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_DIGIT = re.compile(r"\d")
_NAME = re.compile(r"(?<=[a-z,;:] )[A-Z][a-zA-Z]+")
_SENT_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9*#-])")

NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40,
    "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "a": 1, "an": 1,
    "couple": 2, "once": 1, "twice": 2, "thrice": 3,
}
_CARDINAL = {k: v for k, v in NUMBER_WORDS.items() if k not in ("a", "an", "couple", "once", "twice", "thrice")}
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
             "eighth": 8, "ninth": 9, "tenth": 10}


def stem(word: str) -> str:
    """A very light stemmer: enough to match plural/possessive/-ing forms lexically."""
    w = word.split("'")[0]
    for suf, min_len in (("ies", 5), ("ing", 6), ("ed", 5), ("es", 5), ("s", 4)):
        if w.endswith(suf) and len(w) >= min_len and not w.endswith("ss"):
            return w[: -len(suf)] + ("y" if suf == "ies" else "")
    return w


def words(text: str) -> list[str]:
    return _WORD_RE.findall(text.lower().replace("\u2019", "'"))


def content_words(text: str) -> list[str]:
    return [stem(w) for w in words(text) if w not in STOPWORDS and len(w) > 1 or w.isdigit()]


def sentences(text: str) -> list[str]:
    """Split into sentences and lines; list items and headings stay separate units."""
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        out.extend(s.strip() for s in _SENT_RE.split(line) if s.strip())
    return out


def truncate_words(text: str, max_words: int) -> str:
    parts = text.split()
    if len(parts) <= max_words:
        return text.strip()
    return " ".join(parts[:max_words]).rstrip(",;:") + " …"


def number_value(token: str) -> int | None:
    if token.isdigit():
        return int(token)
    if token in _CARDINAL:
        return _CARDINAL[token]
    return _ORDINALS.get(token)


def normalize_answer(text: str) -> str:
    """Lowercase, drop punctuation and articles, spell numbers as digits (compound words like 'twenty one')."""
    toks = words(text.replace("-", " ").replace(",", ""))
    out: list[str] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        v = _CARDINAL.get(t)
        if v is not None:
            # combine "twenty one" -> 21, "two hundred" -> 200
            if i + 1 < len(toks) and 20 <= v < 100 and toks[i + 1] in _CARDINAL and _CARDINAL[toks[i + 1]] < 10:
                v += _CARDINAL[toks[i + 1]]
                i += 1
            if i + 1 < len(toks) and toks[i + 1] == "hundred":
                v *= 100
                i += 1
            out.append(str(v))
        elif t not in ("a", "an", "the"):
            out.append(t.split("'")[0] if t.endswith("'s") else t)
        i += 1
    return " ".join(out)


def numbers_in(text: str) -> list[int]:
    return [int(t) for t in normalize_answer(text).split() if t.isdigit()]


def has_number_or_name(sentence: str) -> bool:
    if _DIGIT.search(sentence):
        return True
    # a capitalised word that is not the first word of the sentence: a likely name
    return bool(_NAME.search(sentence))
