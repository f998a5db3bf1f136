"""Ingestion checkpoints: the memory state after replaying one haystack, plus everything measured during the
replay, saved under a key that excludes the actor and judge.

Writes are atomic and durable (bench.fsio: temporary, fsync, rename), so a crash mid-write leaves the old file or
none; temporaries of writers that were killed are deleted when the store opens. Reads trust nothing: a file is
used only when it parses, carries `CHECKPOINT_FORMAT`, holds the question it is named after, and its parts pass
the caller's typed parse (`restore`). Anything else is discarded with one warning line (console and run log) and
the question is replayed; a folder of another format gets one line for the whole folder."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, TypeVar

from bench import notices
from bench.errors import storage_failure
from bench.fsio import TMP_PREFIX, atomic_write_bytes, remove_orphans

# 1: versioned payloads; calls stored as CallRow fields (before: CallRecord fields, no version).
# 2: payloads keep "outputs", the Observer/Reflector calls grouped by how om_core's output guards judged them.
CHECKPOINT_FORMAT = 2
LEGACY_TMP_AGE_S = 3600  # temporaries of older versions carry no pid: removed once untouched this long

T = TypeVar("T")


class InvalidCheckpoint(ValueError):
    """A checkpoint that cannot be used; the message says why (one clause)."""


class CheckpointStore:
    """The checkpoints of one ingestion key: `<root>/<ingest_key>/<question_id>.json`."""

    def __init__(self, root: str | Path, ingest_key: str) -> None:
        self.dir = Path(root) / ingest_key
        self.orphans_removed = remove_orphans(self.dir) + _remove_legacy_temps(self.dir)

    def _path(self, question_id: str) -> Path:
        return self.dir / f"{question_id}.json"

    def load(self, question_id: str) -> dict[str, Any] | None:
        """The saved payload, or None when there is none or it cannot be used (damaged, another format, another
        question's): then one warning line says so and the question is recomputed."""
        p = self._path(question_id)
        try:
            raw = p.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._discard(question_id, f"it cannot be read ({exc.strerror or exc})")
            return None
        try:
            payload = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            self._discard(question_id, "it is not valid JSON (truncated or damaged)")
            return None
        if not isinstance(payload, dict):
            self._discard(question_id, f"it holds a JSON {type(payload).__name__}, not an object")
            return None
        found = payload.get("format_version")
        if found is None and "question_id" not in payload:
            self._discard(question_id, "it holds no checkpoint (neither a format_version nor a question_id)")
            return None
        if found != CHECKPOINT_FORMAT:
            notices.warn(f"checkpoints in {self.dir} have format {found or 0}, this om-bench writes format "
                         f"{CHECKPOINT_FORMAT}: recomputing them", once=f"checkpoint-format:{self.dir}")
            return None
        if payload.get("question_id") != question_id:
            self._discard(question_id, f"it holds question {payload.get('question_id')!r}")
            return None
        return payload

    def restore(self, question_id: str, parse: Callable[[dict[str, Any]], T]) -> T | None:
        """`parse(payload)` of the saved checkpoint, or None when there is none or it is unusable, including
        when `parse` raises ValueError, TypeError, KeyError or AttributeError (a missing or wrong-typed part)."""
        payload = self.load(question_id)
        if payload is None:
            return None
        try:
            return parse(payload)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            self._discard(question_id, _reason(exc))
            return None

    def _discard(self, question_id: str, reason: str) -> None:
        notices.warn(f"checkpoint {self._path(question_id)} is unusable: {reason}; discarded, replaying "
                     f"question {question_id}")
        return None

    def save(self, question_id: str, payload: dict[str, Any]) -> Path:
        """Write the payload atomically (stamped with CHECKPOINT_FORMAT). Raises StorageFailure when the disk
        is full or the folder cannot be written."""
        data = json.dumps({**payload, "format_version": CHECKPOINT_FORMAT}, default=str).encode()
        try:
            return atomic_write_bytes(self._path(question_id), data)
        except OSError as exc:
            raise storage_failure(exc, f"writing the checkpoint of question {question_id} to {self.dir}") from exc


def _reason(exc: BaseException) -> str:
    """One clause for why a parse failed: pydantic's first error, or the exception's own text."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            return f"{where}: {first.get('msg', 'invalid')}" if where else str(first.get("msg", "invalid"))
        except Exception:  # not pydantic's shape after all
            pass
    if isinstance(exc, KeyError):
        return f"the part {exc.args[0]!r} is missing"
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:200]


def _remove_legacy_temps(folder: Path) -> int:
    """Temporaries named by earlier versions (`.tmp-<random>.json`, no pid) untouched for LEGACY_TMP_AGE_S."""
    if not folder.is_dir():
        return 0
    n = 0
    cutoff = time.time() - LEGACY_TMP_AGE_S
    for p in folder.glob(f"{TMP_PREFIX}*.json"):
        try:
            if not p.name[len(TMP_PREFIX):].split("-", 1)[0].isdigit() and p.stat().st_mtime < cutoff:
                p.unlink()
                n += 1
        except FileNotFoundError:
            pass
    return n
