"""Offline Reflector: condenses an observation log by rule, harder at each compression level.

Level 0 drops exact duplicates; each level above drops more low-priority lines (🟢, then sub-bullets, then
older 🟡, then all 🟡 and finally 🔴 questions), drops superseded near-duplicates and truncates long lines
more. Date headers with surviving lines, thread tags and 🔴 statements are kept longest. Not an LLM.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bench.gateway.offline.text import content_words

REFLECT_HEADER = "## OBSERVATIONS TO REFLECT ON"
_LEVEL_WORDS = [
    (4, "EXTREME COMPRESSION"),
    (3, "CRITICAL COMPRESSION"),
    (2, "AGGRESSIVE COMPRESSION"),
    (1, "COMPRESSION REQUIRED"),
]
_RULE_LINE = re.compile(r"^[ \t]*-{3,}[ \t]*$", re.M)
_LINE_PREFIX = re.compile(r"^[*\-\s]*(?:[🔴🟡🟢✅]\s*)?(?:\(\d{1,2}:\d{2}\)\s*)?")
_OBS_RE = re.compile(r"^[ \t]*<observations>(.*?)^[ \t]*</observations>", re.S | re.M)


@dataclass(frozen=True)
class LevelRule:
    max_chars: int
    max_subs: int  # sub-bullets kept per parent line
    drop_green: bool
    drop_yellow: str  # "none" | "older" | "all"
    drop_red_questions: bool
    near_dup: float  # content-word overlap at which an earlier line counts as superseded (>1: off)


RULES = {
    0: LevelRule(400, 99, False, "none", False, 1.1),
    1: LevelRule(200, 2, True, "none", False, 0.9),
    2: LevelRule(180, 1, True, "older", False, 0.8),
    3: LevelRule(140, 0, True, "all", False, 0.7),
    4: LevelRule(100, 0, True, "all", True, 0.6),
}


def compression_level(user_text: str) -> int:
    upper = user_text.upper()
    for level, words in _LEVEL_WORDS:
        if words in upper:
            return level
    return 0


def observations_to_reflect(user_text: str) -> str:
    i = user_text.find(REFLECT_HEADER)
    text = user_text[i + len(REFLECT_HEADER):] if i >= 0 else user_text
    # the prompt closes the block with a `---` line, then the request to condense and any guidance
    cut = _RULE_LINE.search(text)
    if cut:
        text = text[: cut.start()]
    m = _OBS_RE.search(text)
    return (m.group(1) if m else text).strip()


def _kind(line: str) -> str:
    s = line.strip()
    if s.startswith("Date:"):
        return "date"
    if s.startswith("<thread") or s.startswith("</thread"):
        return "tag"
    if s.startswith("<"):
        return "meta"  # <current-task> & co inside thread blocks: dropped, the reflection is observations only
    if line.startswith(("  ", "\t")) and s.startswith(("* ->", "- ->", "->", "*", "-")):
        return "sub"
    if "🔴" in s:
        return "red_q" if "User asked" in s else "red"
    if "🟡" in s or "✅" in s:
        return "yellow"
    if "🟢" in s:
        return "green"
    return "other" if s else "blank"


def _signature(line: str) -> str:
    # emoji, time stamp and bullet do not make a line different
    return _LINE_PREFIX.sub("", line.strip()).lower()


def _truncate(line: str, max_chars: int) -> str:
    return line if len(line) <= max_chars else line[: max_chars - 2].rstrip() + " …"


def reflect_lines(lines: list[str], level: int) -> list[str]:
    rule = RULES[max(0, min(4, level))]
    kinds = [_kind(ln) for ln in lines]
    obs_idx = [i for i, k in enumerate(kinds) if k in ("red", "red_q", "yellow", "green", "other")]
    older_cut = obs_idx[len(obs_idx) // 2] if obs_idx else 0
    # superseded: an earlier line whose content words are mostly repeated by a later line
    later_sets: list[set[str]] = []
    superseded: set[int] = set()
    seen: set[str] = set()
    dup: set[int] = set()
    for i in reversed(obs_idx):
        sig = _signature(lines[i])
        if sig in seen:
            dup.add(i)
            continue
        seen.add(sig)
        words = set(content_words(sig))
        if words and rule.near_dup <= 1 and any(len(words & w) / len(words) >= rule.near_dup for w in later_sets):
            superseded.add(i)
        later_sets.append(words)
    out: list[str] = []
    parent_kept = False
    subs = 0
    for i, (ln, k) in enumerate(zip(lines, kinds)):
        if k in ("blank", "meta"):
            continue
        if k in ("date", "tag"):
            out.append(ln.strip())
            continue
        if k == "sub":
            if parent_kept and subs < rule.max_subs:
                out.append(_truncate(ln.rstrip(), rule.max_chars))
                subs += 1
            continue
        drop = (
            i in dup
            or i in superseded
            or (k == "green" and rule.drop_green)
            or (k == "yellow" and (rule.drop_yellow == "all" or (rule.drop_yellow == "older" and i < older_cut)))
            or (k == "red_q" and rule.drop_red_questions)
        )
        parent_kept, subs = not drop, 0
        if not drop:
            out.append(_truncate(ln.rstrip(), rule.max_chars))
    return _drop_empty_dates(out)


def _drop_empty_dates(lines: list[str]) -> list[str]:
    out: list[str] = []
    for i, ln in enumerate(lines):
        if ln.startswith("Date:"):
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if not nxt or nxt.startswith(("Date:", "<", "</")):
                continue
        out.append(ln)
    return out


def reflect(user_text: str) -> str:
    level = compression_level(user_text)
    obs = observations_to_reflect(user_text)
    kept = reflect_lines(obs.splitlines(), level)
    return "<observations>\n" + "\n".join(kept) + "\n</observations>"
