"""A set of judge templates: its texts, where they came from, and the hash of their text (it keys the run)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass


@dataclass(frozen=True)
class TemplateSet:
    """The judge templates a run uses (name -> a str.format text with the fields {question}, {answer},
    {response}), where they came from, and the hash of their text."""

    texts: dict[str, str]
    source: str  # builtin | official
    description: str  # e.g. "om-bench builtin wording" or "LongMemEval evaluate_qa.py (downloaded, pinned ...)"
    ask_reason: bool = False

    @property
    def sha256(self) -> str:
        """Hash of the exact template texts (after `ask_reason`): one changed character changes it."""
        return hashlib.sha256(json.dumps(self.texts, sort_keys=True).encode("utf-8")).hexdigest()

    def describe(self) -> str:
        extra = " + a reason after a no (Mastra)" if self.ask_reason else ""
        return f"{self.description}{extra}, text sha256 {self.sha256[:12]}"


__all__ = ["TemplateSet"]
