"""Offline Reflector: condenses an observation log by rule, harder at each compression level.

Level 0 drops exact duplicates; each level above drops more low-priority lines (🟢, then sub-bullets, then
older 🟡, then all 🟡 and finally 🔴 questions), drops superseded near-duplicates and truncates long lines
more. Date headers with surviving lines, thread tags and 🔴 statements are kept longest. A request is answered
at the first level whose output keeps the share its guidance asks for and fits its output cap; when level 4 does
not, the oldest lines left are dropped until it does (`reflect`). Not an LLM.

The request is read with om_core's own functions (`observations_from_prompt`, `compression_level_in_prompt`),
and lines are told apart by om_core's markers, so a change of om_core's prompts reaches this engine.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

from om_core import default_counter
from om_core.formats import (
    COMPLETED,
    DATE_HEADER_PREFIX,
    PRIORITY_HIGH,
    PRIORITY_LOW,
    PRIORITY_MEDIUM,
    SUB_BULLET,
    compression_level_in_prompt,
    format_observer_output,
    observation_text,
    observations_from_prompt,
)

from bench.offline.text import content_words

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
NEAR_DUP_MIN = min(r.near_dup for r in RULES.values())  # the loosest near-duplicate share of any level


def observations_to_reflect(user_text: str) -> str:
    """The observations of the request (unwrapped when they come as an `<observations>` block)."""
    text = observations_from_prompt(user_text)
    m = _OBS_RE.search(text)
    return (m.group(1) if m else text).strip()


def _kind(line: str) -> str:
    s = line.strip()
    if s.startswith(DATE_HEADER_PREFIX):
        return "date"
    if s.startswith("<thread") or s.startswith("</thread"):
        return "tag"
    if s.startswith("<"):
        return "meta"  # <current-task> & co inside thread blocks: dropped, the reflection is observations only
    if line.startswith(("  ", "\t")) and s.startswith((f"* {SUB_BULLET}", f"- {SUB_BULLET}", SUB_BULLET, "*", "-")):
        return "sub"
    if PRIORITY_HIGH in s:
        return "red_q" if "User asked" in s else "red"
    if PRIORITY_MEDIUM in s or COMPLETED in s:
        return "yellow"
    if PRIORITY_LOW in s:
        return "green"
    return "other" if s else "blank"


def _signature(line: str) -> str:
    # emoji, time stamp and bullet do not make a line different
    return observation_text(line.strip(), arrow=False).lower()


@functools.lru_cache(maxsize=1 << 16)
def _line_words(line: str) -> tuple[str, frozenset[str]]:
    """(`_signature`, its content words) of one observation line. Memoised: a log reflected again is mostly the
    lines earlier reflections kept, so at M scale (a reflection every few observations) `analyse` would redo
    the same word work for most of its lines at every reflection."""
    sig = _signature(line)
    return sig, frozenset(content_words(sig))


def _truncate(line: str, max_chars: int) -> str:
    return line if len(line) <= max_chars else line[: max_chars - 2].rstrip() + " …"


def _needed(share: float, n: int) -> int:
    """The fewest of n words a later line must hold to hold at least `share` of them (by the rule's division)."""
    needed = max(0, math.ceil(share * n) - 1)
    while needed / n < share:
        needed += 1
    return needed


def _repeated_later(words: frozenset[str], later_sets: list[frozenset[str]], postings: dict[str, list[int]], share: float) -> bool:
    """Whether some later line (`later_sets`) holds at least `share` of `words`. Such a line must hold one of
    the len(words) - needed + 1 rarest words (else it holds fewer than `needed`), so only the lines in those
    words' postings are checked: a pairwise check made long logs quadratic."""
    n = len(words)
    needed = _needed(share, n)  # the least overlap that passes, by the same division as the rule
    if needed == 0:
        return bool(later_sets)  # every later line qualifies, even one sharing nothing
    if needed > n:
        return False
    rare = sorted(words, key=lambda w: len(postings.get(w, ())))[: n - needed + 1]
    candidates = {j for w in rare for j in postings.get(w, ())}
    return any(len(words & later_sets[j]) >= needed for j in candidates)


@dataclass(frozen=True)
class LogAnalysis:
    """What every compression level reads of one log the same way: each line's kind, and for the observation
    lines from newest to oldest, whether an equal line (by `_signature`) comes later and their content words.
    Computed once per request (`analyse`), so a request that climbs levels pays the text work once."""

    kinds: list[str]
    obs_idx: list[int]  # the observation lines (red, red_q, yellow, green, other), oldest first
    dup: frozenset[int]  # observation lines repeated exactly by a later one
    newest_first: list[tuple[int, frozenset[str]]]  # (line index, content words) of the others, newest first

    @functools.cached_property
    def overlaps(self) -> dict[int, tuple[int, int]]:
        """line index -> (most content words it shares with one later line, its number of content words), for
        the lines that could share NEAR_DUP_MIN of their words with a later one (`best_overlaps`); computed
        at the first level that has a near-duplicate rule."""
        return best_overlaps(self.newest_first, NEAR_DUP_MIN)


def analyse(lines: list[str]) -> LogAnalysis:
    kinds = [_kind(ln) for ln in lines]
    obs_idx = [i for i, k in enumerate(kinds) if k in ("red", "red_q", "yellow", "green", "other")]
    seen: set[str] = set()
    dup: set[int] = set()
    newest_first: list[tuple[int, frozenset[str]]] = []
    for i in reversed(obs_idx):
        sig, words = _line_words(lines[i])
        if sig in seen:
            dup.add(i)
            continue
        seen.add(sig)
        newest_first.append((i, words))
    return LogAnalysis(kinds, obs_idx, frozenset(dup), newest_first)


def best_overlaps(newest_first: list[tuple[int, frozenset[str]]], share: float) -> dict[int, tuple[int, int]]:
    """For each line of `newest_first` (newest first: (line index, content words)) that some later line might
    hold `share` of: (the most of its words one later line holds, its number of words). A line a later one
    holds at least `share` of must hold one of the n - needed + 1 rarest words (as in `_repeated_later`), so
    only the lines in those words' postings are compared; a line left out, or whose best is below needed, has
    no later line holding `share` of it. Exact for every share >= `share` (needed grows with the share), so one
    pass serves every level's near-duplicate rule: each level asks best >= _needed(its share, n). A pass per
    level cost 3-4 passes per reflection at M scale, where late reflections climb levels."""
    out: dict[int, tuple[int, int]] = {}
    later_sets: list[frozenset[str]] = []  # content words of the later lines seen so far
    postings: dict[str, list[int]] = {}  # word -> the later lines (index into later_sets) holding it
    for i, words in newest_first:
        if words and later_sets:
            n = len(words)
            rare = sorted(words, key=lambda w: len(postings.get(w, ())))[: n - _needed(share, n) + 1]
            candidates = {j for w in rare for j in postings.get(w, ())}
            if candidates:
                out[i] = (max(len(words & later_sets[j]) for j in candidates), n)
        for w in words:
            postings.setdefault(w, []).append(len(later_sets))
        later_sets.append(words)
    return out


def reflect_lines(lines: list[str], level: int, analysis: LogAnalysis | None = None) -> list[str]:
    """The log's lines kept at compression `level`. `analysis` (= analyse(lines)) may be passed in when the
    same lines are reflected at several levels."""
    rule = RULES[max(0, min(4, level))]
    a = analysis if analysis is not None else analyse(lines)
    kinds, obs_idx, dup = a.kinds, a.obs_idx, a.dup
    older_cut = obs_idx[len(obs_idx) // 2] if obs_idx else 0
    # superseded: an earlier line whose content words are mostly repeated by a later line
    superseded: set[int] = set()
    if rule.near_dup <= 1:
        superseded = {i for i, (best, n) in a.overlaps.items() if best >= _needed(rule.near_dup, n)}
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
        if ln.startswith(DATE_HEADER_PREFIX):
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if not nxt or nxt.startswith((DATE_HEADER_PREFIX, "<", "</")):
                continue
        out.append(ln)
    return out


# "aim for about N/10" of om_core's compression guidance (both profiles; bench reads om_core's own text through
# `compression_level_in_prompt`): the share of the input a level's output may keep. A request whose guidance
# names no share (Mastra's own text may word it differently) takes the packaged share of its level.
_AIM_RE = re.compile(r"aim for about (\d+)\s*/\s*10", re.I)
LEVEL_SHARE = {1: 0.8, 2: 0.6, 3: 0.4, 4: 0.2}


def requested_share(user_text: str, level: int) -> float | None:
    """The share of its input a Reflector request asks the output to keep (None at level 0: no guidance)."""
    if level <= 0:
        return None
    m = _AIM_RE.search(user_text.replace(observations_from_prompt(user_text), ""))  # the guidance, not the log
    return int(m.group(1)) / 10 if m else LEVEL_SHARE.get(min(level, max(LEVEL_SHARE)))


def share_limit(user_text: str) -> int | None:
    """The o200k tokens the compression guidance of a request asks the reflection to stay within ("aim for about
    8/10": 0.8 x the observations' tokens); None at level 0 (no guidance)."""
    share = requested_share(user_text, compression_level_in_prompt(user_text))
    if share is None:
        return None
    return max(1, int(share * len(default_counter().encode(observations_to_reflect(user_text)))))


def _tokens(text: str) -> int:
    """o200k tokens of a formatted log, exactly (`TokenCounter.count_joined` over its lines: a line the counter
    has seen, at an earlier level or in an earlier reflection, is a look-up, not a tokenisation)."""
    return default_counter().count_joined(text.splitlines(keepends=True))


def _drop_oldest(lines: list[str], limit: int, keep_newest: bool = False) -> list[str]:
    """`lines` without their oldest observation lines (sub-bullets count as lines) until the formatted log holds
    at most `limit` o200k tokens: date headers and thread tags stay while a line under them does. Empty when not
    even the newest line fits, unless `keep_newest`: then the newest observation line is never dropped (a reply
    to "aim for about 2/10" of a short log still says something)."""
    encode = default_counter().encode

    def size(kept: list[str]) -> int:
        return _tokens(format_observer_output("\n".join(kept)))

    cost = [len(encode(ln)) + 1 for ln in lines]  # + the newline: the joined text's count, estimated per line
    overhead = size(lines) - sum(cost)  # the <observations> wrapper and the estimate's error
    obs = [i for i, ln in enumerate(lines) if _kind(ln) not in ("date", "tag")]
    newest = obs[-1] if keep_newest and obs else -1
    goal = limit
    for _ in range(8):
        total, keep = sum(cost) + overhead, [True] * len(lines)
        for i in obs:
            if total <= goal or i == newest:
                break
            keep[i] = False
            total -= cost[i]
        out = _drop_empty_dates([ln for ln, k in zip(lines, keep) if k])
        if not any(_kind(ln) not in ("date", "tag") for ln in out):
            return []
        got = size(out)
        if got <= limit or (keep_newest and sum(keep[i] for i in obs) == 1):
            return out
        goal -= got - limit  # the estimate was short: aim lower by what it missed
    return []


def reflect(user_text: str, max_tokens: int | None = None) -> str:
    """The condensed log at the prompt's compression level, or at the first level above it whose output fits
    both the output cap `max_tokens` (o200k tokens) and the share of the input the compression guidance asks
    for (`share_limit`), the way a model told its output budget and "aim for about 6/10" writes a shorter log
    rather than one it cannot finish or one as long as its input. Without the share, a log at M scale came back
    nearly whole (m11: level 0, then level 1 dropping little), so the log grew to the 100,000-token cap on a
    500-session haystack with a 40,000 threshold; without the cap it came back cut at the cap (refused by
    om_core's truncation guard). When even level 4's rules miss both, the oldest observations are left out
    until the output fits the tighter of the two (newest kept): what level 4 leaves is 🔴 statements (and any
    unmarked lines), the highest priority, so age decides, as the guidance asks ("condense older observations
    more aggressively"; level 4: "fewer, more generic observations are better than many specific ones that
    exceed the budget"). Letting the share go at level 4 instead (until round six) brought late M-scale logs
    back at 82-86% of their input, so the log crept to the threshold and reflections came closer together
    (docs/performance.md, "Round six")."""
    level = compression_level_in_prompt(user_text)
    limits = [n for n in (max_tokens, share_limit(user_text)) if n]
    lines = observations_to_reflect(user_text).splitlines()
    analysis = analyse(lines)  # the same for every level tried below
    while True:
        kept = reflect_lines(lines, level, analysis)
        out = format_observer_output("\n".join(kept))
        if not limits or _tokens(out) <= min(limits):
            return out
        if level >= max(RULES):
            # the share is a goal ("aim for about"), so the newest line stays; the cap is not
            out = format_observer_output("\n".join(_drop_oldest(kept, min(limits), keep_newest=True)))
            if max_tokens and _tokens(out) > max_tokens:  # the newest line alone passes the cap
                out = format_observer_output("\n".join(_drop_oldest(kept, max_tokens)))
            return out
        level += 1
