"""How the decay strategy scores a new memory: seed 004's rule-based evaluator, or the `evaluator` model role
with a JSON request this module owns (the request, the read-back the offline engine uses, and a tolerant
parser of what real models answer).

Scores: `importance` (0-1, how much the item matters later), `volatility` (0-1, how soon it goes out of date)
and `entities` (lower-case names the item is about; items sharing one are related).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from bench.strategies.bm25 import STOPWORDS

# ---- seed 004's rule-based evaluator -------------------------------------------------------------------------

# The seed's cue words, in English: secrets, preferences and lasting habits raise importance; words that tie a
# statement to the moment raise volatility.
IMPORTANT_CUES = ("password", "api key", "my name is", "allergic", "prefer", "favorite", "favourite", "hate",
                  "can't stand", "always", "never", "forever")
VOLATILE_CUES = ("today", "right now", "at the moment", "currently", "immediately", "current price",
                 "real-time", "temporarily", "for now", "this week")
BASE_IMPORTANCE, BASE_VOLATILITY = 0.3, 0.5
CUE_IMPORTANCE, CUE_VOLATILITY = 0.3, 0.4
USER_BONUS, LONG_BONUS, LONG_CHARS = 0.1, 0.05, 100
FLOOR = 0.1
MAX_ENTITIES = 8

_IMPORTANT = [(c, re.compile(rf"\b{re.escape(c)}\b", re.I)) for c in IMPORTANT_CUES]
_VOLATILE = [(c, re.compile(rf"\b{re.escape(c)}\b", re.I)) for c in VOLATILE_CUES]
# any cue of the kind: a text none of whose cues this finds needs no search per cue (re.I's equivalences outside
# ASCII, e.g. the Kelvin sign for "k", hold for the alternation as for each cue)
_ANY_IMPORTANT = re.compile("|".join(p.pattern for _, p in _IMPORTANT), re.I)
_ANY_VOLATILE = re.compile("|".join(p.pattern for _, p in _VOLATILE), re.I)
_QUOTED = re.compile(r"\"([^\"\n]{2,60})\"|\u201c([^\u201d\n]{2,60})\u201d")
# runs of capitalised words that follow a lower-case word or a comma: names, not sentence starts. (The look-behind
# follows the first capital, so the search skips to capitals instead of trying the look-behind everywhere.)
_NAME_RUN = re.compile(r"([A-Z](?<=[a-z,] [A-Z])[a-z]+(?: [A-Z][a-z]+)*)")
# capitalised words that are rarely names (function words, weekdays, words that open a clause)
_NOT_NAMES = STOPWORDS | frozenset(
    """im ok okay yes thanks please note also however use using remember tip example step monday tuesday
    wednesday thursday friday saturday sunday""".split()
)


@dataclass(frozen=True)
class Scores:
    importance: float
    volatility: float
    entities: list[str] = field(default_factory=list)


def extract_entities(text: str) -> list[str]:
    """Quoted phrases and mid-sentence capitalised names, lower-cased, in order, at most MAX_ENTITIES."""
    found: list[str] = []
    if '"' in text or "\u201c" in text:  # (_QUOTED needs one of them)
        for m in _QUOTED.finditer(text):
            found.append((m.group(1) or m.group(2)).strip())
        text = _QUOTED.sub(" ", text)
    found.extend(m.group(1) for m in _NAME_RUN.finditer(text))  # names outside quotes
    out = [e.lower() for e in found if e.lower() not in _NOT_NAMES]
    return list(dict.fromkeys(out))[:MAX_ENTITIES]


def rule_scores(content: str, source: str) -> Scores:
    """Seed 004's keyword and source rules: base 0.3 importance / 0.5 volatility; +0.3 importance per
    important cue and +0.4 volatility per volatile cue (each capped at 1); +0.1 importance for what the user
    said; +0.05 for a message over 100 characters; both floored at 0.1."""
    importance, volatility, entities = _rule_parts(content, source)
    return Scores(importance, volatility, list(entities))  # a fresh list: callers may keep it


# a replay scores each message twice (the strategy's fallback scores, then the offline evaluator's reply)
@functools.lru_cache(maxsize=4096)
def _rule_parts(content: str, source: str) -> tuple[float, float, tuple[str, ...]]:
    importance, volatility = BASE_IMPORTANCE, BASE_VOLATILITY
    # ASCII text matches a cue only where the lower-cased text holds it (re.I adds no other equivalences
    # there), so the substring test skips most regex searches; other text is searched for every cue only
    # when it holds some cue of the kind
    ascii_text = content.isascii()
    lowered = content.lower() if ascii_text else None
    if ascii_text or _ANY_IMPORTANT.search(content):
        for cue, pattern in _IMPORTANT:
            if (lowered is None or cue in lowered) and pattern.search(content):
                importance = min(1.0, importance + CUE_IMPORTANCE)
    if ascii_text or _ANY_VOLATILE.search(content):
        for cue, pattern in _VOLATILE:
            if (lowered is None or cue in lowered) and pattern.search(content):
                volatility = min(1.0, volatility + CUE_VOLATILITY)
    if source == "user":
        importance += USER_BONUS
    if len(content) > LONG_CHARS:
        importance += LONG_BONUS
    clamp = _clamp_floor
    return clamp(importance), clamp(volatility), tuple(extract_entities(content))


def _clamp_floor(x: float) -> float:
    return max(FLOOR, min(1.0, x))


# ---- the evaluator model's request and its read-back ---------------------------------------------------------

EVALUATOR_SYSTEM = (
    "You decide how long an assistant should remember things from its conversations with one user. Each "
    "memory below is one message, marked with its id, who said it and when. For every memory give: "
    "importance, from 0 to 1: how much it would help to recall it in a later conversation (who the user is, "
    "their preferences, plans, possessions, commitments and facts they rely on score high; greetings, small "
    "talk and generic advice score low); volatility, from 0 to 1: how soon it stops being true or useful (a "
    "passing state such as today's weather, a price right now or a temporary arrangement scores high; lasting "
    "facts score low); entities: the specific people, places, products, pets, organisations or topics it is "
    "about, as short lower-case names. Reply with JSON only, no prose, in this shape: "
    '{"memories": [{"id": 1, "importance": 0.8, "volatility": 0.2, "entities": ["name"]}]}, '
    "with one entry for every memory id."
)
EVALUATOR_REQUEST = "Score these memories:\n"
_MEMORY = re.compile(r'<memory id="(\d+)" source="(\w+)" date="([^"]*)">\n(.*?)\n</memory>', re.S)


def evaluator_request(items: Iterable[tuple[int, str, str, str]]) -> list[dict[str, str]]:
    """Chat messages asking the evaluator to score `items` given as (id, source, date string, content)."""
    body = "\n".join(f'<memory id="{i}" source="{src}" date="{date}">\n{text}\n</memory>'
                     for i, src, date, text in items)
    return [{"role": "system", "content": EVALUATOR_SYSTEM}, {"role": "user", "content": EVALUATOR_REQUEST + body}]


_MEMORY_HEAD = re.compile(r'<memory id="(\d+)" source="(\w+)" date="([^"]*)">\n')  # _MEMORY up to its content
_MEMORY_END = "\n</memory>"


def items_from_request(text: str) -> list[tuple[int, str, str]]:
    """The (id, source, content) of every memory in an evaluator request's text (inverse of evaluator_request):
    _MEMORY's matches. Its lazy content ends at the first `_MEMORY_END` after the head, found with str.find
    (the regex tries the end at every character); a head with no end after it has none after a later head either,
    so the matches stop there."""
    out = []
    search, find, pos = _MEMORY_HEAD.search, text.find, 0
    while (m := search(text, pos)) is not None:
        start = m.end()
        end = find(_MEMORY_END, start)
        if end < 0:
            break
        out.append((int(m.group(1)), m.group(2), text[start:end]))
        pos = end + len(_MEMORY_END)
    return out


def render_scores(scores: dict[int, Scores]) -> str:
    """The JSON reply the request asks for (what the offline engine answers)."""
    return json.dumps({"memories": [
        {"id": i, "importance": round(s.importance, 3), "volatility": round(s.volatility, 3),
         "entities": s.entities} for i, s in scores.items()
    ]}, ensure_ascii=False)


# ---- tolerant parsing of a real model's reply ----------------------------------------------------------------

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)
_FLAT_OBJECT = re.compile(r"\{[^{}]*\}", re.S)
_LIST_KEYS = ("memories", "items", "results", "scores", "evaluations")
_IMPORTANCE_KEYS = ("importance", "importance_score", "importanceScore")
_VOLATILITY_KEYS = ("volatility", "volatility_score", "volatilityScore")
_ENTITY_KEYS = ("entities", "related_entities", "relatedEntities")


def parse_scores(text: str, ids: list[int]) -> tuple[dict[int, Scores], str | None]:
    """The scores a reply gives for `ids`, and a one-line problem (None when every id was scored).

    Accepts code fences, prose around the JSON, a bare list, an object keyed by id, numbers as strings, scores on
    a 0-10 or 0-100 scale (judged from the largest score of the reply), entities as a comma-separated string, and a reply cut off mid-list (the complete
    entries are kept). Ids not asked for are ignored; a missing score is a missing entry."""
    entries = _entries(_decode(text))
    if entries is None:
        entries = _salvage(text)
    wanted = set(ids)
    raw: dict[int, Scores] = {}
    for e in entries:
        parsed = _entry(e)
        if parsed is not None and parsed[0] in wanted and parsed[0] not in raw:
            raw[parsed[0]] = parsed[1]
    # one scale for the whole reply: 0-1, 0-10 or 0-100 (a 10 means 1.0 or 0.1 depending on the others)
    top = max((max(x.importance, x.volatility) for x in raw.values()), default=0.0)
    scale = 100.0 if top > 10 else 10.0 if top > 1 else 1.0
    got = {i: Scores(_unit(x.importance / scale), _unit(x.volatility / scale), x.entities) for i, x in raw.items()}
    if len(got) == len(wanted):
        return got, None
    if not got:
        snippet = " ".join(text.split())[:60]
        return got, f"evaluator reply has no usable scores (starts {snippet!r})"
    missing = [i for i in ids if i not in got]
    return got, f"evaluator reply misses memories {', '.join(map(str, missing[:10]))}" + (
        f" and {len(missing) - 10} more" if len(missing) > 10 else "")


def _decode(text: str) -> Any:
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for cand in candidates:
        for start, ch in enumerate(cand):
            if ch in "[{":
                try:
                    value, _ = decoder.raw_decode(cand, start)
                except json.JSONDecodeError:
                    continue
                if isinstance(value, (list, dict)):
                    return value
    return None


def _entries(value: Any) -> list[Any] | None:
    if isinstance(value, list):
        return value
    if not isinstance(value, dict):
        return None
    for key in _LIST_KEYS:
        if isinstance(value.get(key), list):
            return list(value[key])
    if "id" in value:
        return [value]
    if value and all(isinstance(v, dict) for v in value.values()):  # {"1": {...}, "2": {...}}
        return [{"id": k, **v} for k, v in value.items()]
    return None


def _salvage(text: str) -> list[Any]:
    """Complete flat objects of a reply that is not valid JSON as a whole (e.g. cut off by max_tokens)."""
    out = []
    for m in _FLAT_OBJECT.finditer(text):
        try:
            out.append(json.loads(m.group(0)))
        except json.JSONDecodeError:
            continue
    return out


def _entry(e: Any) -> tuple[int, Scores] | None:
    if not isinstance(e, dict):
        return None
    try:
        item_id = int(str(e.get("id")).strip().strip("#"))
    except ValueError:
        return None
    importance, volatility = _score(e, _IMPORTANCE_KEYS), _score(e, _VOLATILITY_KEYS)
    if importance is None or volatility is None:
        return None
    raw: Any = next((e[k] for k in _ENTITY_KEYS if k in e), [])
    names = raw.split(",") if isinstance(raw, str) else raw if isinstance(raw, list) else []
    entities = list(dict.fromkeys(str(n).strip().lower() for n in names if str(n).strip()))[:MAX_ENTITIES]
    return item_id, Scores(importance, volatility, entities)


def _score(e: dict[str, Any], keys: tuple[str, ...]) -> float | None:
    raw = next((e[k] for k in keys if k in e), None)
    if isinstance(raw, bool) or raw is None:
        return None
    try:
        x = float(str(raw).strip().rstrip("%")) if isinstance(raw, str) else float(raw)
    except ValueError:
        return None
    return None if x != x else x  # NaN is no score


def _unit(x: float) -> float:
    return max(0.0, min(1.0, x))
