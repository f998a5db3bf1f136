"""Ingestion checkpoints: the memory state after replaying one haystack, plus everything measured during the
replay, saved atomically under a key that excludes the actor and judge. A crash mid-write leaves no file."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


class CheckpointStore:
    def __init__(self, root: str | Path, ingest_key: str) -> None:
        self.dir = Path(root) / ingest_key

    def _path(self, question_id: str) -> Path:
        return self.dir / f"{question_id}.json"

    def load(self, question_id: str) -> dict[str, Any] | None:
        p = self._path(question_id)
        if not p.exists():
            return None
        try:
            return json.loads(p.read_text())
        except (OSError, json.JSONDecodeError):
            return None  # a damaged checkpoint is recomputed, never trusted

    def save(self, question_id: str, payload: dict[str, Any]) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w") as fh:
            json.dump(payload, fh, default=str)
        final = self._path(question_id)
        os.replace(tmp, final)
        return final
