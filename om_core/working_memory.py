"""Working memory: a short block of what is true about the user right now (name, preferences, current
projects), kept current by the Observer and shown to the Actor after the observations.

Not one of Mastra's Observational Memory knobs (its sources have no such option; a design write-up of OM
recommends keeping the user profile out of the system prompt, and this is that idea): off by default
(`OMConfig.working_memory`). The block belongs to a resource (the user), in either scope, and survives
reflections: the Reflector never sees or rewrites it.

This module owns its text format, so code that writes or reads it by rule (the benchmark's offline engine)
follows any change made here:

- the Observer's output section, `<working-memory>` with one `label: value` line per fact
  (`format_working_memory_section` writes it, `parse_working_memory_section` reads it, forgivingly: bullets,
  bold labels, unlabelled lines, an `_` in the tag and a missing closing tag are accepted);
- updates merge into the stored block: a new label is added, a changed value replaces the old one and moves
  to the end (most recently changed last), an unchanged line keeps its place, and a value such as `none`
  removes the label (`merge_entries`);
- a token cap drops the least recently changed lines first (`cap_entries`);
- the Observer prompt shows the current block under `WORKING_MEMORY_HEADING` (`working_memory_from_prompt`
  reads it back).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Iterable, Mapping, Sequence

from om_core.errors import InputError
from om_core.records import iso, parse_iso

Entry = tuple[str, str]
"""One line of working memory: (label, value); label "" is a line without a label (a free note)."""

WORKING_MEMORY_TAG = "working-memory"
WORKING_MEMORY_HEADING = "## Working Memory"  # the Observer prompt section holding the current block
EMPTY_BLOCK = "(empty)"  # what the Observer prompt shows when nothing is known yet
CLEAR_VALUES = frozenset({"none", "(none)", "n/a", "-", "—", "unknown", "null", "removed", "(removed)",
                          "cleared", "(cleared)", "no longer applies"})
MAX_LABEL_WORDS = 6
MAX_LABEL_CHARS = 48

# Tags count only at the start of a line (as the other output sections); the block ends at its closing tag,
# else at the next section tag on a line of its own, else at the end of the text.
_SECTION = re.compile(
    r"^[ \t]*<working[-_]memory>[ \t]*\n?(.*?)(?:^[ \t]*</working[-_]memory>[ \t]*$\n?|(?=^[ \t]*</?[a-z][\w-]*[ >])|\Z)",
    re.MULTILINE | re.DOTALL | re.IGNORECASE,
)
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_EMPHASIS = re.compile(r"\*\*|__|`")
_LABELLED = re.compile(r"^(?P<label>[^:]{1,%d}?)\s*:\s*(?P<value>.*)$" % MAX_LABEL_CHARS)
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class WorkingMemory:
    """The stored working memory of one resource: its lines in order (least recently changed first), their
    token count (of `text()`, in the configured encoding) and when it last changed."""

    resource_id: str
    entries: tuple[Entry, ...] = ()
    token_count: int = 0
    updated_at: datetime | None = None

    def text(self) -> str:
        """The block as `- label: value` lines ("" when empty)."""
        return format_entries(self.entries)

    def get(self, label: str) -> str | None:
        """The value of `label` (case-insensitive), or None."""
        key = label.strip().casefold()
        return next((v for lab, v in self.entries if lab and lab.casefold() == key), None)

    def to_dict(self) -> dict[str, Any]:
        return {"resource_id": self.resource_id, "entries": [list(e) for e in self.entries],
                "token_count": self.token_count, "updated_at": iso(self.updated_at)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "WorkingMemory":
        return cls(resource_id=d["resource_id"], entries=tuple((str(a), str(b)) for a, b in d.get("entries") or ()),
                   token_count=int(d.get("token_count") or 0), updated_at=parse_iso(d.get("updated_at")))


# ---- reading and writing the text ------------------------------------------------------------------


def _clean(text: str) -> str:
    return _SPACES.sub(" ", _EMPHASIS.sub("", text)).strip()


def parse_line(line: str) -> Entry | None:
    """One line as an entry: `- **Name**: Ana` -> ("Name", "Ana"); a line whose part before the first colon
    is not a short label (more than six words) is a note ("", line). None for blank lines and labels
    without a value."""
    text = _clean(_BULLET.sub("", line))
    if not text or text.casefold() == EMPTY_BLOCK:
        return None
    m = _LABELLED.match(text)
    if m and len(m.group("label").split()) <= MAX_LABEL_WORDS and not _not_a_label(m.group("label"), m.group("value")):
        label, value = m.group("label").strip(), m.group("value").strip()
        return (label, value) if value else None
    return ("", text)


def _not_a_label(label: str, value: str) -> bool:
    """A colon that is part of the text: a clock (`at 10:30`) or a URL (`https://...`)."""
    return value.startswith("//") or (label[-1:].isdigit() and value[:1].isdigit())


def parse_entries(body: str) -> list[Entry]:
    """Entries of a block's lines, in order (see `parse_line`)."""
    return [e for line in body.splitlines() if (e := parse_line(line)) is not None]


def parse_working_memory_section(text: str) -> list[Entry] | None:
    """The updates in an Observer output's `<working-memory>` section(s), in order; None when the output has
    no such section (nothing to change), [] when it has an empty one."""
    found = list(_SECTION.finditer(text))
    if not found:
        return None
    return [e for m in found for e in parse_entries(m.group(1))]


def strip_working_memory_section(text: str) -> str:
    """`text` without its `<working-memory>` sections (so their lines never read as observations)."""
    return _SECTION.sub("", text)


def format_entries(entries: Iterable[Entry]) -> str:
    """Entries as `- label: value` lines (a note as `- value`), one per line."""
    return "\n".join(f"- {label}: {value}" if label else f"- {value}" for label, value in entries)


def format_working_memory_section(entries: Iterable[Entry]) -> str:
    """An Observer output section `parse_working_memory_section` reads back."""
    return f"<{WORKING_MEMORY_TAG}>\n{format_entries(entries)}\n</{WORKING_MEMORY_TAG}>"


def working_memory_from_prompt(text: str) -> list[Entry] | None:
    """The current block an Observer request shows (its user messages' text joined): the entries under
    `WORKING_MEMORY_HEADING` up to the next `## ` heading; None when the request does not ask for working
    memory (no such heading)."""
    i = text.find(WORKING_MEMORY_HEADING + "\n")
    if i < 0:
        return None
    rest = text[i + len(WORKING_MEMORY_HEADING):]
    j = rest.find("\n## ")
    body = rest if j < 0 else rest[:j]
    # the section's intro (prose) precedes the block: only list lines are entries
    return [e for line in body.splitlines() if _BULLET.match(line) and (e := parse_line(line)) is not None]


# ---- merging and capping ----------------------------------------------------------------------------


def _key(entry: Entry) -> tuple[str, str]:
    label, value = entry
    return ("label", label.casefold()) if label else ("note", value.casefold())


def is_clear_value(value: str) -> bool:
    return value.strip().rstrip(".").casefold() in CLEAR_VALUES


def merge_entries(current: Sequence[Entry], updates: Iterable[Entry]) -> tuple[Entry, ...]:
    """`current` with `updates` applied in order: a new label is appended; a changed value replaces the old
    line and moves to the end; an unchanged line keeps its place (so a model that repeats the whole block
    changes nothing; a change of letter case only is no change); a clear value (`none`, `n/a`, `removed`...) removes the label."""
    out = list(current)
    for label, value in updates:
        entry = (label.strip(), value.strip())
        key = _key(entry)
        at = next((i for i, e in enumerate(out) if _key(e) == key), None)
        if entry[0] and is_clear_value(entry[1]):
            if at is not None:
                out.pop(at)
            continue
        if at is not None:
            if out[at][1].casefold() == entry[1].casefold():
                continue  # the same line (perhaps spelt in another case): kept as it is, in its place
            out.pop(at)
        out.append(entry)
    return tuple(out)


def cap_entries(entries: Sequence[Entry], max_tokens: int, count: Callable[[str], int],
                truncate: Callable[[str, int], tuple[str, int]] | None = None) -> tuple[Entry, ...]:
    """The entries whose block fits `max_tokens` (as counted by `count`): the least recently changed lines are
    dropped first; a last line that alone is too long is cut with `truncate(text, tokens)` when given."""
    if max_tokens <= 0:
        raise InputError(f"max_tokens: must be a positive number of tokens, got {max_tokens}")
    out = list(entries)
    while len(out) > 1 and count(format_entries(out)) > max_tokens:
        out.pop(0)
    if out and truncate is not None and count(format_entries(out)) > max_tokens:
        label, value = out[0]
        room = max(1, max_tokens - count(format_entries([(label, "")])) - 1)  # 1: the ellipsis
        out[0] = (label, truncate(value, room)[0].rstrip() + " …")
    return tuple(out)


def update_working_memory(current: WorkingMemory | None, resource_id: str, updates: Iterable[Entry], *,
                          max_tokens: int, count: Callable[[str], int],
                          truncate: Callable[[str, int], tuple[str, int]] | None = None,
                          now: datetime) -> WorkingMemory | None:
    """The resource's working memory after `updates` (merged, then capped at `max_tokens`), or None when
    nothing changed."""
    before = current.entries if current is not None else ()
    entries = cap_entries(merge_entries(before, updates), max_tokens, count, truncate)
    if entries == before:
        return None
    return WorkingMemory(resource_id, entries, count(format_entries(entries)) if entries else 0, now)
