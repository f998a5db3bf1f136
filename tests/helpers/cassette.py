"""Replay a cassette of recorded model calls (shared/cassettes/*.jsonl: role, request, response_text,
finish_reason, usage) from the fake OpenAI-compatible server, keyed by request.

Matching, per incoming chat request:
1. exact: the same messages as a recorded request (any params) -> that record;
2. else the nearest recorded request of the same role: the role is read from the request's first message (its
   first 80 characters are those of the recorded requests of one role: the Observer's, the Reflector's and the
   Actor's system prompts, the judge's template), and the nearest is the record whose user text shares the most
   8-word runs with the request's (Jaccard), earliest on ties;
3. a request of no recorded role gets the nearest record of any role.
Each answer carries the record's finish reason. `log` keeps (role, record index, exact?) per request.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_WORD = re.compile(r"\w+")
SIGNATURE_CHARS = 80


def _messages_key(messages: Any) -> str:
    return json.dumps(messages, sort_keys=True, ensure_ascii=False)


def _user_text(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")


def _shingles(text: str, k: int = 8) -> frozenset[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return frozenset(tuple(words[i: i + k]) for i in range(max(1, len(words) - k + 1)))


def _signature(messages: list[dict[str, Any]]) -> str:
    return str(messages[0].get("content") or "")[:SIGNATURE_CHARS] if messages else ""


@dataclass
class Cassette:
    """A responder (`FakeOpenAIServer(responder=cassette, finish_reason=cassette.finish_reason)`) replaying
    recorded calls; `roles` limits the records to those roles (default: every role but hand-sent probes)."""

    path: Path
    roles: tuple[str, ...] = ("observer", "reflector", "actor", "judge")
    log: list[tuple[str, int, bool]] = field(default_factory=list)

    def __post_init__(self) -> None:
        rows = [json.loads(line) for line in Path(self.path).read_text().splitlines() if line.strip()]
        self.records = [(i, r) for i, r in enumerate(rows) if r["role"] in self.roles]
        self._exact = {_messages_key(r["request"]["messages"]): i for i, r in self.records}
        self._role_of = {_signature(r["request"]["messages"]): r["role"] for _, r in self.records}
        self._shingles = {i: _shingles(_user_text(r["request"]["messages"])) for i, r in self.records}
        self._rows = dict(self.records)
        self._lock = threading.Lock()
        self._last: dict[str, int] = {}  # request key -> record chosen (the finish reason follows the reply)

    def match(self, body: dict[str, Any]) -> tuple[str, int, bool]:
        """(role, record index, exact) for a request body."""
        messages = body.get("messages") or []
        key = _messages_key(messages)
        if key in self._exact:
            i = self._exact[key]
            return self._rows[i]["role"], i, True
        role = self._role_of.get(_signature(messages))
        pool = [i for i, r in self.records if role is None or r["role"] == role]
        want = _shingles(_user_text(messages))

        def score(i: int) -> float:
            have = self._shingles[i]
            return len(want & have) / (len(want | have) or 1)

        best = max(pool, key=lambda i: (score(i), -i))
        return role or self._rows[best]["role"], best, False

    def __call__(self, body: dict[str, Any]) -> str:
        role, i, exact = self.match(body)
        with self._lock:
            self.log.append((role, i, exact))
            self._last[_messages_key(body.get("messages"))] = i
        return str(self._rows[i]["response_text"])

    def finish_reason(self, body: dict[str, Any]) -> str:
        with self._lock:
            i = self._last.get(_messages_key(body.get("messages")))
        return str(self._rows[i].get("finish_reason") or "stop") if i is not None else "stop"

    def served_model(self) -> str:
        return str(self.records[0][1]["request"].get("model") or "cassette-model")

    def stats(self) -> dict[str, dict[str, int]]:
        """Per role: requests answered, how many matched a recorded request exactly."""
        out: dict[str, dict[str, int]] = {}
        for role, _, exact in self.log:
            s = out.setdefault(role, {"requests": 0, "exact": 0})
            s["requests"] += 1
            s["exact"] += exact
        return out
