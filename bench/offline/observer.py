"""Offline Observer: turns the history section of an Observer prompt into an observation log, by rule.

Extractive and deterministic: user statements in the first person become 🔴 "User stated …" lines (pronouns
turned to the third person), questions "User asked …" (🟡 in m11, 🔴 in m31), assistant messages a 🟡 line
with their first informative sentence plus up to five list items as `->` sub-bullets. Relative dates get
`(meaning …)` from the message date. Not an LLM: its recall and phrasing are crude by design.

When the request asks for working memory, a `<working-memory>` section follows with what the user's messages
state about them by rule (bench.offline.profile).

The prompt is read, and the log written, with om_core's own functions (`history_from_prompt`,
`split_thread_sections`, `parse_history`, `format_observation`, `format_observer_output`,
`working_memory_from_prompt`, `format_working_memory_section`, ...), so a change of om_core's format reaches
this engine instead of silently breaking it.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import date, time

from om_core.formats import (
    PRIORITY_HIGH,
    PRIORITY_LOW,
    PRIORITY_MEDIUM,
    HistoryEntry,
    ThreadSection,
    format_date_header,
    format_meaning,
    format_observation,
    format_observer_output,
    format_sub_observation,
    format_thread_sections,
    format_working_memory_section,
    history_from_prompt,
    history_profile,
    parse_history,
    split_thread_sections,
    working_memory_from_prompt,
)

from bench.offline.profile import profile_updates
from bench.offline.reldates import resolve_relative
from bench.offline.text import (
    STOPWORDS,
    has_number_or_name,
    sentences,
    truncate_words,
    words,
)

_FIRST_PERSON = re.compile(r"\b(I|I'm|I've|I'd|I'll|I am|my|me|mine|myself|we|we're|we've|our|us)\b", re.I)
_PRONOUNS = [
    (r"\bI am\b", "they are"), (r"\bI'm\b", "they're"), (r"\bI was\b", "they were"), (r"\bI've\b", "they've"),
    (r"\bI'd\b", "they'd"), (r"\bI'll\b", "they'll"), (r"\bI\b", "they"), (r"\bmyself\b", "themselves"),
    (r"\bmy\b", "their"), (r"\bMy\b", "Their"), (r"\bme\b", "them"), (r"\bmine\b", "theirs"),
    (r"\b[Ww]e're\b", "they're"), (r"\b[Ww]e've\b", "they've"), (r"\b[Ww]e'll\b", "they'll"),
    (r"\b[Ww]e\b", "they"), (r"\b[Oo]ur\b", "their"), (r"\bours\b", "theirs"), (r"\bus\b", "them"),
]
_PRONOUN_RES = [(re.compile(pat), rep) for pat, rep in _PRONOUNS]
# a word any of the _PRONOUNS patterns needs (case-sensitively, as they match)
_ANY_PRONOUN = re.compile(r"\b(?:I|myself|my|My|me|mine|[Ww]e|[Ww]e're|[Ww]e've|[Ww]e'll|[Oo]ur|ours|us)\b")
_MARKUP = re.compile(r"[*_`#]+")
_SPACES = re.compile(r"\s+")
_HEAD_CUT = re.compile(r":\s| - | – ")
_DISCOURSE = re.compile(r"^(?:by the way|btw|actually|also|anyway|oh|well|so|and|but|plus|speaking of which|"
                        r"on another note|oh and)\b[,:]?\s*", re.I)
_QUESTION_START = re.compile(
    r"^(what|which|who|whom|whose|when|where|why|how|can|could|would|will|should|is|are|do|does|did|any|"
    r"have|has)\b", re.I)
_REQUEST_START = re.compile(
    r"^(please|help|write|give|recommend|suggest|create|explain|list|tell|show|find|plan|make|generate|draft|"
    r"compare|summari[sz]e|describe|provide|i need|i want|i'd like|i would like)\b", re.I)
_LIST_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+(.+)")
_LOWERABLE = {"can", "could", "would", "will", "should", "please", "help", "write", "give", "recommend",
              "suggest", "create", "explain", "list", "tell", "show", "find", "plan", "make", "that", "this",
              "actually", "anyway", "also", "well", "so", "by", "speaking"}
_FILLER = {"thanks", "thank you", "ok", "okay", "great", "cool", "sure", "yes", "no", "got it", "sounds good"}

MAX_USER_LINES = 3
MAX_ITEMS = 4


def _clean(s: str) -> str:
    s = _MARKUP.sub("", s)  # markdown emphasis and headings
    return _SPACES.sub(" ", s).strip()


def third_person(s: str) -> str:
    if not _ANY_PRONOUN.search(s):  # (most sentences have none: skip the 19 substitutions)
        return s
    for pat, rep in _PRONOUN_RES:
        s = pat.sub(rep, s)
    return s


def _lower_first(s: str) -> str:
    """Lowercase a sentence-initial common word so it reads inside "User stated …"."""
    first = s.split(" ", 1)[0]
    if first in ("I",) or first.startswith("I'") or not first[1:].islower():
        return s
    if first.lower() in STOPWORDS | _LOWERABLE:
        return s[0].lower() + s[1:]
    return s


def _is_question(s: str) -> bool:
    return s.rstrip().endswith("?") or bool(_QUESTION_START.match(s) and len(s.split()) < 25 and "?" in s)


_MIDNIGHT = time(0, 0)


def _clock(m: HistoryEntry) -> time:
    return m.clock or _MIDNIGHT


def _meaning(text: str, day: date | None) -> str:
    if day is None:
        return ""
    when = resolve_relative(text, day)
    return f" {format_meaning(when)}" if when else ""


def _user_lines(m: HistoryEntry, asked_icon: str) -> list[str]:
    clock = _clock(m)
    sents = [_clean(s) for s in sentences(m.text)]
    sents = [s for s in sents if s and s.lower().strip(".!? ") not in _FILLER]
    stated: list[tuple[int, str]] = []
    asked: list[str] = []
    for i, s in enumerate(sents):
        body = _lower_first(truncate_words(_DISCOURSE.sub("", s) or s, 28).rstrip(".!"))
        if _is_question(s):
            asked.append(body)
        elif _FIRST_PERSON.search(s) and not _REQUEST_START.match(s):
            # rank: sentences with numbers, names or relative dates first, then by position
            rank = 0 if (has_number_or_name(s) or resolve_relative(s, date(2000, 1, 1))) else 1
            stated.append((rank * 1000 + i, f"User stated {third_person(body)}"))
        elif i == 0 or _REQUEST_START.match(s):
            asked.append(f"the assistant to {body[0].lower() + body[1:]}" if body else body)
    keep = sorted(sorted(stated)[: MAX_USER_LINES - (1 if asked else 0)], key=lambda t: t[0] % 1000)
    lines = [format_observation(f"{text}{_meaning(text, m.day)}", PRIORITY_HIGH, clock) for _, text in keep]
    if asked:
        q = asked[-1]  # the last question is usually the actual ask
        q = q if q.startswith("the assistant to") else f": {q}"
        said = f"User asked{'' if q.startswith(':') else ' '}{q}{_meaning(q, m.day)}"
        lines.append(format_observation(said, asked_icon, clock))
    return lines


def _assistant_lines(m: HistoryEntry) -> list[str]:
    clock = _clock(m)
    items: list[str] = []  # the first MAX_ITEMS list items (the only ones shown)
    # The first informative (5+ words) prose sentence that carries a number or a name, else the first
    # informative one: greetings rarely carry either. Sentences after the pick are not cleaned at all.
    picked: str | None = None
    first_informative = ""
    for raw in m.text.splitlines():
        li = _LIST_ITEM.match(raw)
        if li:
            if len(items) < MAX_ITEMS:
                head = _clean(li.group(1))
                head = _HEAD_CUT.split(head, maxsplit=1)[0] if len(head.split()) > 12 else head
                if head:
                    items.append(truncate_words(head, 8))
        elif picked is None and raw.strip() and not raw.lstrip().startswith("#"):
            for sent in sentences(raw):
                c = _clean(sent)
                if len(c.split()) >= 5:
                    first_informative = first_informative or c
                    if has_number_or_name(c):
                        picked = c
                        break
        elif picked is not None and len(items) >= MAX_ITEMS:
            break
    first = picked if picked is not None else first_informative
    lines: list[str] = []
    if first:
        lines.append(format_observation(f"Assistant said: {truncate_words(first, 25).rstrip('.')}", PRIORITY_MEDIUM, clock))
    elif items:
        lines.append(format_observation("Assistant listed:", PRIORITY_MEDIUM, clock))
    lines += [format_sub_observation(it) for it in items]
    return lines


def _tool_lines(m: HistoryEntry) -> list[str]:
    return [format_observation(f"{m.label}: {truncate_words(_clean(m.text), 15)}", PRIORITY_LOW, _clock(m))]


def _task_lines(msgs: list[HistoryEntry]) -> tuple[str, str]:
    last_user = next((m for m in reversed(msgs) if m.role == "user"), None)
    answered = bool(msgs) and msgs[-1].role != "user"
    if last_user is None:
        return "Primary: none — waiting for user", "Wait for the user's next message."
    sents = [_clean(s) for s in sentences(last_user.text)]
    ask = next((s for s in reversed(sents) if _is_question(s) or _REQUEST_START.match(s)), "")
    if not ask:
        return "Primary: none — waiting for user", "Acknowledge what the user shared and wait for their next message."
    ask = truncate_words(ask, 30)
    if answered:
        return (f"Primary: none — waiting for user (last request answered: {ask})",
                "Wait for the user's follow-up; refer back to the previous answer if asked.")
    topic = " ".join(w for w in words(ask) if len(w) > 3)[:80]
    return f"Primary: respond to the user's request: {ask}", f"Answer the user's request about {topic}."


_STAMP_RE = re.compile(r"\(\d{1,2}:\d{2}\)")


def observe_messages(msgs: list[HistoryEntry], profile: str) -> list[str]:
    asked_icon = PRIORITY_MEDIUM if profile == "m11" else PRIORITY_HIGH
    lines: list[str] = []
    seen: set[str] = set()  # an observer never repeats an observation (repeated chat lines would loop)
    current: date | None = None
    for m in msgs:
        if m.role == "reasoning" or not m.text.strip():
            continue
        if m.day is not None and m.day != current:
            current = m.day
            lines.append(format_date_header(m.day))
        if m.role == "user":
            new = _user_lines(m, asked_icon)
        elif m.role == "assistant":
            new = _assistant_lines(m)
        elif m.role == "tool":
            new = _tool_lines(m)
        else:
            new = []
        for line in new:
            body = _STAMP_RE.sub("", line).strip()
            if body not in seen:
                seen.add(body)
                lines.append(line)
    return lines


def _messages(history: str, profile: str) -> list[HistoryEntry]:
    """The history's messages, text stripped; an unknown layout reads as one user message per paragraph,
    so that the log is still useful."""
    msgs = [replace(e, text=e.text.strip()) for e in parse_history(history, profile)]
    if not msgs and history.strip():
        msgs = [HistoryEntry("user", "User", p.strip(), None, None) for p in history.split("\n\n") if p.strip()]
    return msgs


def observe(prompt: str) -> str:
    """Observation log for the history in `prompt` (the Observer's user messages joined), with a
    working-memory section when the request asks for one and the user's messages change it."""
    history = history_from_prompt(prompt)
    profile = history_profile(history)
    threads = split_thread_sections(history)
    every: list[HistoryEntry] = []
    if threads[0][0] is None:
        every = msgs = _messages(threads[0][1], profile)
        task, hint = _task_lines(msgs)
        body = "\n".join(observe_messages(msgs, profile))
        out = format_observer_output(body, current_task=task, suggested_response=hint)
    else:
        sections: dict[str, ThreadSection] = {}
        for tid, text in threads:
            msgs = _messages(text, profile)
            every += msgs
            task, hint = _task_lines(msgs)
            sections[str(tid)] = ThreadSection("\n".join(observe_messages(msgs, profile)), task, hint)
        out = format_observer_output(format_thread_sections(sections))
    current = working_memory_from_prompt(prompt)
    if current is None:
        return out
    updates = profile_updates(current, (m.text for m in every if m.role == "user"))
    return out + "\n\n" + format_working_memory_section(updates) if updates else out
