"""Test doubles for code that uses om_core: deterministic Observer and Reflector models and a synthetic
conversation. No network, no keys, no LLM: meant for tests, demos and dry runs, not for memory quality.

* `ScriptedObserver` reads the message history out of the Observer prompt (either profile's format, single-
  or multi-thread) and answers with an `<observations>` block about 1/`ratio` of its size by words (each line
  keeps its first words), plus a `<current-task>` hint unless the call is a buffered one.
* `ScriptedReflector` merges observation lines two by two and cuts them to half their words (`Date:` headers
  and tags kept), so every reflection shrinks the log.
* `synthetic_turns(n)` gives `(time, user text, assistant text)` for a long deterministic conversation.

Both models are `om_core.ChatModel`s and record each call in `.calls` (the messages sent, params, sizes in
characters), so a test can assert how often and with what the engine called them:

    om = ObservationalMemory(OMConfig(), SQLiteStorage(), ScriptedObserver(), ScriptedReflector())
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from om_core.llm import Completion, Usage

__all__ = ["ScriptedObserver", "ScriptedReflector", "synthetic_turns"]

# the headings om_core.observer_prompt / om_core.reflector put before the text these models read
_HISTORY = "## New Message History to Observe\n\n"
_REFLECT = "## OBSERVATIONS TO REFLECT ON\n\n"
_M31_DATE = re.compile(r"^([A-Z][a-z]{2}) (\d{1,2}) (\d{4}):$")
_M31_LINE = re.compile(r"^([A-Z][A-Za-z ]*?)(?: \((\d{1,2}:\d{2}) ([AP]M)\))?: (.*)$")
_M11_HEAD = re.compile(r"^\*\*([A-Za-z ]+) \(([A-Z][a-z]{2}) (\d{1,2}), (\d{4}), (\d{1,2}:\d{2}) ([AP]M)\):\*\*$")
_THREAD = re.compile(r'<thread id="([^"]*)">\n(.*?)\n</thread>', re.DOTALL)


def _clock24(hm: str, ampm: str) -> str:
    h, m = (int(x) for x in hm.split(":"))
    h = h % 12 + (12 if ampm == "PM" else 0)
    return f"{h:02d}:{m:02d}"


def _shrink(text: str, ratio: float, keep_first: int = 1) -> str:
    words = text.split()
    n = max(keep_first, round(len(words) / ratio))
    return " ".join(words[:n])


def _observe_history(history: str, ratio: float) -> str:
    """Observation lines (with Date headers) for a formatted history in either profile's format."""
    out: list[str] = []
    date = None
    clock = "00:00"
    pending_role: str | None = None
    for raw in history.split("\n"):
        line = raw.strip()
        if not line or line == "---":
            continue
        m = _M31_DATE.match(line)
        if m:
            date = f"{m.group(1)} {m.group(2)}, {m.group(3)}"
            out.append(f"Date: {date}")
            continue
        m = _M11_HEAD.match(line)
        if m:
            d = f"{m.group(2)} {m.group(3)}, {m.group(4)}"
            if d != date:
                date = d
                out.append(f"Date: {date}")
            clock, pending_role = _clock24(m.group(5), m.group(6)), m.group(1)
            continue
        m = _M31_LINE.match(line)
        if m and pending_role is None:
            role, body = m.group(1), m.group(4)
            if m.group(2):
                clock = _clock24(m.group(2), m.group(3))
        else:
            role, body = pending_role or "User", line
        out.append(f"* 🔴 ({clock}) {role}: {_shrink(body, ratio)}")
    return "\n".join(out)


@dataclass
class ScriptedObserver:
    """Compresses the history it is shown about `ratio`× (by words) into observation lines."""

    ratio: float = 5.0
    calls: list[dict[str, Any]] = field(default_factory=list)

    async def complete(self, messages: list[dict[str, Any]], **params: Any) -> Completion:
        text = "\n\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
        start = text.find(_HISTORY)
        history = text[start + len(_HISTORY):] if start >= 0 else text
        end = history.find("\n\n## Your Task")
        history = history[:end] if end >= 0 else history
        threads = _THREAD.findall(history)
        if threads:
            body = "\n".join(f'<thread id="{tid}">\n{_observe_history(h, self.ratio)}\n'
                             "<current-task>Primary: continue the conversation</current-task>\n</thread>"
                             for tid, h in threads)
        else:
            body = _observe_history(history, self.ratio)
        out = f"<observations>\n{body}\n</observations>"
        if "Output <observations> every time" not in text and not threads:
            out += "\n<current-task>\nPrimary: continue the conversation\n</current-task>"
        self.calls.append({"messages": messages, "params": params, "history_chars": len(history),
                           "output_chars": len(out)})
        return Completion(text=out, usage=Usage(prompt_tokens=len(text) // 4, completion_tokens=len(out) // 4),
                          model="scripted-observer")


@dataclass
class ScriptedReflector:
    """Halves the observations: lines are merged two by two and cut to half their words (Date headers kept)."""

    ratio: float = 2.0
    calls: list[dict[str, Any]] = field(default_factory=list)

    async def complete(self, messages: list[dict[str, Any]], **params: Any) -> Completion:
        text = "\n\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
        start = text.find(_REFLECT)
        body = text[start + len(_REFLECT):] if start >= 0 else text
        end = body.find("\n\n---\n\n")
        body = body[:end] if end >= 0 else body
        lines: list[str] = []
        pair: list[str] = []  # consecutive observation lines are merged two by two, then cut to half

        def flush() -> None:
            if pair:
                lines.append(_shrink(" ".join(pair), self.ratio * len(pair) / 2 if len(pair) > 1 else self.ratio))
                pair.clear()

        for line in body.split("\n"):
            s = line.strip()
            if not s or s.startswith("--- message boundary"):
                continue
            if s.startswith(("Date:", "<")):
                flush()
                lines.append(s)
                continue
            pair.append(s)
            if len(pair) == 2:
                flush()
        flush()
        out = "<observations>\n" + "\n".join(lines) + "\n</observations>"
        self.calls.append({"messages": messages, "params": params, "input_chars": len(body),
                           "output_chars": len(out)})
        return Completion(text=out, usage=Usage(prompt_tokens=len(text) // 4, completion_tokens=len(out) // 4),
                          model="scripted-reflector")


_VOCAB = (
    "garden river mountain coffee beagle vet recipe travel budget project meeting concert guitar marathon "
    "kitchen lantern harbor violin orchard bicycle festival museum library painting sailing pottery hiking "
    "chemistry invoice deadline sprint backlog release database schema migration rollback cluster latency "
    "teacher cousin neighbour doctor landlord colleague manager mentor partner sister brother grandmother "
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday morning evening weekend holiday birthday "
    "blue green amber silver quiet bright early late careful quick heavy gentle honest curious patient"
).split()


def synthetic_turns(n_turns: int, *, words: int = 450, turns_per_day: int = 30, seed: int = 7,
                    start: datetime | None = None, minutes_between: int = 10) -> list[tuple[datetime, str, str]]:
    """`n_turns` tuples (time, user text, assistant text) of a deterministic conversation: `words` random
    words per text (seeded by `seed`), `turns_per_day` turns `minutes_between` minutes apart each day from
    `start` (default 2026-03-01 08:00 UTC). Each text starts with a unique marker word `midNNNNN` (user
    even, assistant odd) so tests can trace every message through observations."""
    import random
    from datetime import timedelta, timezone

    rng = random.Random(seed)
    t0 = start or datetime(2026, 3, 1, 8, 0, tzinfo=timezone.utc)
    out = []
    for i in range(n_turns):
        at = t0 + timedelta(days=i // turns_per_day, minutes=(i % turns_per_day) * minutes_between)
        user = f"mid{2 * i:05d} " + " ".join(rng.choice(_VOCAB) for _ in range(words))
        assistant = f"mid{2 * i + 1:05d} " + " ".join(rng.choice(_VOCAB) for _ in range(words))
        out.append((at, user, assistant))
    return out
