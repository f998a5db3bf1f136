"""Ingestion checkpoints: the memory state after replaying one haystack, plus everything measured during the
replay, saved atomically under a key that excludes the actor and judge. A crash mid-write leaves no file.

Every checkpoint carries `CHECKPOINT_FORMAT`; one of another format (or damaged) is discarded and recomputed,
with one warning per checkpoint folder."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

# 1: versioned payloads; calls stored as CallRow fields (before: CallRecord fields, no version).
# 2: payloads keep "outputs", the Observer/Reflector calls grouped by how om_core's output guards judged them.
CHECKPOINT_FORMAT = 2


class CheckpointStore:
    def __init__(self, root: str | Path, ingest_key: str) -> None:
        self.dir = Path(root) / ingest_key
        self._warned = False

    def _path(self, question_id: str) -> Path:
        return self.dir / f"{question_id}.json"

    def load(self, question_id: str) -> dict[str, Any] | None:
        """The saved payload, or None when there is none, it is damaged or of another format (recompute it)."""
        p = self._path(question_id)
        if not p.exists():
            return None
        try:
            payload = json.loads(p.read_text())
        except (OSError, json.JSONDecodeError):
            return None  # a damaged checkpoint is recomputed, never trusted
        found = payload.get("format_version") if isinstance(payload, dict) else None
        if not isinstance(payload, dict) or found != CHECKPOINT_FORMAT:
            if not self._warned:
                self._warned = True
                print(f"warning: checkpoints in {self.dir} have format {found or 0}, this om-bench writes format "
                      f"{CHECKPOINT_FORMAT}: recomputing them", file=sys.stderr)
            return None
        return payload

    def save(self, question_id: str, payload: dict[str, Any]) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w") as fh:
            json.dump({**payload, "format_version": CHECKPOINT_FORMAT}, fh, default=str)
        final = self._path(question_id)
        os.replace(tmp, final)
        return final
