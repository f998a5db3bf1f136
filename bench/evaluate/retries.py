"""Retries of a wrong answer on a fresh question thread, counted as Mastra's LongMemEval runner counts them.

Upstream rule (mastra-ai/mastra `explorations/longmemeval/src/commands/run.ts`): a question whose first answer the
judge marks wrong, and which its `meta.json` flags `requiresRetry`, is asked again on a fresh thread up to
`maxRetries = 2` more times, and counts correct if any try passes. OM is read-only at question time there, and a
fresh thread holds only the question, so each try sends the same context: only the model's sampling differs.

Here: `answer.retries.max` tries after a wrong first answer (stop at the first pass); with
`answer.retries.flags_file` only the listed question ids retry (the runner's flag list is not public: bring your
own), without one every wrong answer retries. The single-try label stays the headline; the "with retries" label is
the first try's OR any retry's. Only strategies that ask the question in a question thread of their own (a
`question_thread` param, e.g. om) retry.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.errors import ConfigError


def load_flags(path: str | Path) -> frozenset[str]:
    """The question ids of a flags file: a JSON array of strings, or text with one id per line (blank lines and
    `#` comments skipped). Raises ConfigError (one line) for a missing, unreadable, empty or malformed file."""
    p = Path(path)
    key = f"answer.retries.flags_file={str(path)!r}"
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{key}: no such file; give a JSON list or one question id per line, or null "
                          "(every wrong answer retries)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{key}: cannot be read ({exc}); fix the path or its permissions") from None
    if text.lstrip().startswith(("{", '"')):  # JSON, but not an array: one "id" would be read as a line
        raise ConfigError(f"{key}: holds a JSON object or string, not a list; write a JSON array of question ids "
                          "or one id per line")
    if text.lstrip().startswith("["):
        try:
            got = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"{key}: not valid JSON ({exc}); write a JSON array of question ids") from None
        if not isinstance(got, list) or not all(isinstance(x, str) and x.strip() for x in got):
            raise ConfigError(f"{key}: the JSON array must hold question ids (non-empty strings) only")
        ids = [x.strip() for x in got]
    else:
        ids = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if not ids:
        raise ConfigError(f"{key}: lists no question id; give at least one, or set it to null "
                          "(every wrong answer retries)")
    return frozenset(ids)


@dataclass(frozen=True)
class RetryPolicy:
    """Which wrong answers are asked again, and how often. `flags` None: every question may retry."""

    max: int = 0
    flags: frozenset[str] | None = None
    flags_file: str | None = None

    @classmethod
    def of(cls, cfg: Any) -> RetryPolicy:
        """From `answer.retries` (a RetriesCfg); the flags file is read here (ConfigError when it is bad)."""
        path = cfg.flags_file
        return cls(int(cfg.max), load_flags(path) if path is not None and cfg.max > 0 else None,
                   None if path is None else str(path))

    @property
    def enabled(self) -> bool:
        return self.max > 0

    def may_retry(self, question_id: str) -> bool:
        return self.enabled and (self.flags is None or question_id in self.flags)

    def spec(self) -> dict[str, Any]:
        """What the run key and the run's notes keep: the count, and the flag list by its hash and size (the
        file's path is not part of what ran)."""
        flags = None if self.flags is None else hashlib.sha256("\n".join(sorted(self.flags)).encode()).hexdigest()
        return {"max": self.max, "flags_sha256": flags, "n_flagged": None if self.flags is None else len(self.flags)}


def strategy_retries(params: Any) -> bool:
    """Whether a strategy asks its question in a question thread of its own (a `question_thread` param), so a
    retry on a fresh thread means what it means in Mastra's runner."""
    return hasattr(params, "question_thread")


def with_retries(first: bool | None, retries: list[bool | None]) -> bool | None:
    """Mastra runner's count for one question: correct when the first try or any retry passed; None (not judged)
    when the first try was not judged."""
    if first is None:
        return None
    return bool(first) or any(bool(r) for r in retries)
