"""Offline Observer, working-memory part: the user's name and stated preferences, found by rule.

When an Observer request asks for working memory (om_core's `WORKING_MEMORY_HEADING` is in it), the user's
own first-person statements are matched against a few patterns (name, home, job, diet, allergies, likes,
dislikes and preferences, interests, plans, what they are learning or studied, favourites, pets, current
projects) and the labels that change come back as a `<working-memory>`
section written with om_core's `format_working_memory_section`. List-valued labels (likes, dislikes,
allergies, current projects) keep their newest few items, merged with what the request shows. Not an LLM:
it misses anything the patterns do not spell out, by design.
"""

from __future__ import annotations

import re
from typing import Iterable

from om_core.formats import WorkingMemoryEntry as Entry

MAX_ITEMS = 4  # newest items kept in a list-valued label (likes, dislikes, allergies, projects, ...)
MAX_WORDS = 8  # words kept of one item

_STOP = r"(?=\s+(?:and|but|because|since|so|when|while|which|though)\b|[.,!?;:()]|$)"
_ITEM = r"([A-Za-z0-9][\w'’&/ -]{1,60}?)" + _STOP
_PRONOUN_OBJECT = re.compile(r"^(?:it|that|this|them|those|these|you|your|him|her|to know|to ask|the idea)\b", re.I)

# (label, pattern, list-valued): the first group is the value ("favorite" patterns: the thing, then the value)
_RULES: tuple[tuple[str, re.Pattern[str], bool], ...] = (
    ("name", re.compile(r"\b(?i:my name is|call me|I go by)\s+([A-Z][a-z]+(?:\s[A-Z][a-z]+)?)\b"), False),
    ("lives in", re.compile(r"\bI(?:'m| am)?\s+(?:currently\s+)?(?:live|living|based|located)\s+in\s+"
                            r"([A-Z][\w.-]*(?:,?\s[A-Z][\w.-]*){0,3})"), False),
    ("job", re.compile(r"\bI\s+(?:currently\s+)?work\s+as\s+(?:an?\s+)?" + _ITEM, re.I), False),
    ("diet", re.compile(r"\bI(?:'m| am|'ve been| have been)\s+(?:a\s+|now\s+a\s+)?(vegetarian|vegan|pescatarian|"
                        r"gluten[- ]free|lactose[- ]intolerant|on a keto diet)\b", re.I), False),
    ("allergies", re.compile(r"\bI(?:'m| am)\s+allergic\s+to\s+" + _ITEM, re.I), True),
    ("likes", re.compile(r"\bI\s+(?:really\s+|absolutely\s+|just\s+|mostly\s+)?(?:love|like|enjoy|prefer|adore|"
                         r"listen to)\s+" + _ITEM), True),
    ("likes", re.compile(r"\bI(?:'m| am)\s+(?:obsessed with|(?:a\s+)?(?:big\s+|huge\s+)?fan of|into)\s+" + _ITEM),
     True),
    ("prefers", re.compile(r"\bI(?:'d| would)\s+(?:much\s+)?rather\s+(?:be\s+)?" + _ITEM), True),
    ("learning", re.compile(r"\bI(?:'ve| have)\s+been\s+(?:teaching myself|learning)\s+(?:how\s+)?(?:to\s+|the\s+)?"
                            + _ITEM), True),
    ("studied", re.compile(r"\bI\s+majored\s+in\s+" + _ITEM), False),
    ("dislikes", re.compile(r"\bI\s+(?:really\s+)?(?:hate|dislike|can't stand|cannot stand|don't like|do not like)\s+"
                            + _ITEM), True),
    ("interests", re.compile(r"\bI(?:'ve| have)\s+been\s+(?:getting into|trying out|into)\s+" + _ITEM), True),
    ("interests", re.compile(r"\bI(?:'m| am)\s+(?:also\s+|really\s+)?interested in\s+" + _ITEM), True),
    ("plans", re.compile(r"\bI(?:'m| am)\s+(?:also\s+|actually\s+)?(?:planning|thinking of|considering)\s+(?:to\s+)?"
                         + _ITEM), True),
    ("plans", re.compile(r"\bI(?:'ve| have)\s+always\s+wanted\s+to\s+" + _ITEM), True),
    ("current projects", re.compile(r"\bI(?:'m| am)\s+(?:currently\s+)?working\s+on\s+" + _ITEM), True),
    ("pets", re.compile(r"\b(?i:my)\s+((?:dog|cat|puppy|kitten|parrot|rabbit|hamster)(?:'s name is|,| named| called)?\s+"
                        r"[A-Z][a-z]+)\b"), True),
)
_FAVORITE = re.compile(r"\bmy\s+favou?rite\s+([a-z][a-z ]{1,30}?)\s+(?:is|are)\s+" + _ITEM, re.I)


def _short(text: str) -> str:
    return " ".join(text.split()[:MAX_WORDS]).strip(" -'’.,;:")


def statements(texts: Iterable[str]) -> list[Entry]:
    """(label, value) for every pattern match in the user's messages, in order."""
    out: list[Entry] = []
    for text in texts:
        for sentence in re.split(r"(?<=[.!?])\s+|\n+", text):
            for label, pattern, _ in _RULES:
                for m in pattern.finditer(sentence):
                    value = _short(m.group(1))
                    if value and not _PRONOUN_OBJECT.match(value):
                        out.append((label, value))
            for m in _FAVORITE.finditer(sentence):
                thing, value = _short(m.group(1)), _short(m.group(2))
                if thing and value:
                    out.append((f"favorite {thing.lower()}", value))
    return out


def _list_valued(label: str) -> bool:
    return any(label == lab and many for lab, _, many in _RULES)


def profile_updates(current: Iterable[Entry], user_texts: Iterable[str]) -> list[Entry]:
    """The working-memory lines that change, given the block the request shows (`current`) and the user's
    messages in order: a single-valued label takes its newest value; a list-valued label its newest
    MAX_ITEMS distinct items, joined with "; ". Lines equal to what `current` holds are left out."""
    shown = {label.casefold(): value for label, value in current if label}
    values: dict[str, str] = {}
    for label, value in statements(user_texts):
        if not _list_valued(label):
            values[label] = value
            continue
        before = values.get(label, shown.get(label, ""))
        items = [i for i in before.split("; ") if i and i.casefold() != value.casefold()]
        values[label] = "; ".join([*items, value][-MAX_ITEMS:])
    return [(label, value) for label, value in values.items() if shown.get(label.casefold()) != value]
