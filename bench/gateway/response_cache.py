"""Content-addressed response cache in SQLite (stdlib), shared safely by tasks, threads and processes.

Key: sha256 of the canonical request — kind, model, messages (or embedding input), the call params sorted,
`epoch` (bump it to deliberately re-sample the same request), and for a self-hosted server (`api_base`) its
scrubbed base URL and the identity of the model it serves. Secrets, headers, timeouts and retries never enter
the key or the file. Only successful responses are stored (with their finish reason).

A hit reports the original usage and list cost; the gateway marks it `response_cache_hit` and pays 0.
Policies: "rw" read and write, "ro" read only, "off" no file at all.

A row is used only when it parses and its fields have their types, holds a reply (text or vectors), and was
stored for the same kind of request and model as the one asking. Anything else (a truncated row, a row copied
under another request's key) is a miss with one warning line: with "rw" the row is deleted and the fresh
response takes its place, so the same row never fails twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, TypeVar

from om_core.llm import Usage

from bench import notices
from bench.errors import ConfigError

KEY_VERSION = 1
# never part of a key: secrets, where the request went, and how patiently we asked
EXCLUDED_PARAMS = frozenset({
    "api_key", "api_base", "base_url", "api_version", "organization", "headers", "extra_headers", "timeout",
    "max_retries", "num_retries", "role", "epoch", "metadata", "drop_params", "aws_access_key_id",
    "aws_secret_access_key", "aws_session_token", "azure_ad_token", "vertex_credentials", "client",
})
_LOCK_RETRIES = 8
T = TypeVar("T")


def request_key(kind: str, model: str, payload: Any, params: dict[str, Any], epoch: int = 0, *,
                endpoint: dict[str, str] | None = None) -> str:
    """sha256 of the canonical request. `endpoint` (a self-hosted server: its scrubbed base URL and the served
    model's identity, bench.gateway.local) joins the key, so another server or another model loaded behind the
    same name never replays this answer; a provider's default endpoint adds nothing."""
    clean = {k: v for k, v in sorted(params.items()) if k not in EXCLUDED_PARAMS and v is not None}
    body: dict[str, Any] = {"v": KEY_VERSION, "kind": kind, "model": model, "input": payload, "params": clean,
                            "epoch": int(epoch)}
    if endpoint:
        body["endpoint"] = endpoint
    canonical = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass
class CachedResponse:
    text: str | None = None
    embeddings: list[list[float]] | None = None
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    cost_known: bool = True
    latency_s: float = 0.0  # of the original call
    response_model: str = ""
    created_at: str = ""
    finish_reason: str | None = None  # "stop", "length" (cut at the output cap or context window), ...

    def to_json(self) -> str:
        d = asdict(self)
        return json.dumps(d, ensure_ascii=False)

    @classmethod
    def from_json(cls, raw: str) -> "CachedResponse":
        """Parse and check a stored row; raises InvalidEntry (why, in a few words) for anything unusable."""
        from pydantic import TypeAdapter, ValidationError

        try:
            d = json.loads(raw)
        except (json.JSONDecodeError, TypeError) as exc:
            raise InvalidEntry("not valid JSON (truncated or damaged)") from exc
        if not isinstance(d, dict):
            raise InvalidEntry(f"a JSON {type(d).__name__}, not an object")
        global _ENTRY
        if _ENTRY is None:
            _ENTRY = TypeAdapter(cls)
        try:
            entry: CachedResponse = _ENTRY.validate_python({**d, "usage": d.get("usage") or {}})
        except ValidationError as exc:
            first = exc.errors()[0]
            raise InvalidEntry(f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from exc
        if entry.text is None and entry.embeddings is None:
            raise InvalidEntry("it holds no reply")
        return entry


class InvalidEntry(ValueError):
    """A stored response that cannot be used; the message says why."""


_ENTRY: Any = None  # pydantic's validator of CachedResponse, built on first use


class ResponseCache:
    def __init__(self, path: str | Path, policy: str = "rw", busy_timeout_s: float = 5.0) -> None:
        if policy not in ("rw", "ro"):
            raise ConfigError(f"response cache policy {policy!r} needs no cache object; use rw or ro")
        self.path = Path(path)
        self.policy = policy
        self.hits = 0
        self.misses = 0
        self.writes = 0
        self.lock_retries = 0
        self.discarded = 0  # unusable rows met (each a miss and one warning line)
        if policy == "ro" and not self.path.is_file():
            raise ConfigError(f"output.response_cache={str(path)!r} does not exist but output.response_cache_policy=ro; "
                              "fill it with a run under rw first, or set output.response_cache_policy=off")
        try:
            if policy == "ro":
                self._conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=busy_timeout_s,
                                             check_same_thread=False, isolation_level=None)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._conn = sqlite3.connect(str(self.path), timeout=busy_timeout_s, check_same_thread=False,
                                             isolation_level=None)
                self._retrying(self._init_schema)
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"output.response_cache={str(path)!r} is not a usable SQLite file ({exc}); "
                              "choose a writable path or set output.response_cache_policy=off") from exc
        self._lock = threading.Lock()  # one connection, used from worker threads one at a time

    def _init_schema(self) -> None:
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, kind TEXT NOT NULL, model TEXT NOT NULL,"
            " payload TEXT NOT NULL, created_at TEXT NOT NULL)"
        )

    def _retrying(self, op: Callable[[], T]) -> T:
        """Run an op, retrying a bounded number of times while another process holds the write lock."""
        for attempt in range(_LOCK_RETRIES):
            try:
                return op()
            except sqlite3.OperationalError as exc:
                msg = str(exc).lower()
                if ("locked" not in msg and "busy" not in msg) or attempt == _LOCK_RETRIES - 1:
                    raise
                self.lock_retries += 1
                time.sleep(min(1.0, 0.02 * 2**attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    def _get_sync(self, key: str, kind: str | None, model: str | None) -> CachedResponse | None:
        with self._lock:
            row = self._retrying(lambda: self._conn.execute(
                "SELECT kind, model, payload FROM responses WHERE key = ?", (key,)).fetchone())
        if not row:
            return None
        try:
            if (kind is not None and row[0] != kind) or (model is not None and row[1] != model):
                raise InvalidEntry(f"it was stored for a {row[0]} request to {row[1]}")
            return CachedResponse.from_json(row[2])
        except InvalidEntry as exc:
            self._discard(key, kind or str(row[0]), model or str(row[1]), str(exc))
            return None

    def _discard(self, key: str, kind: str, model: str, reason: str) -> None:
        """One warning line per unusable row; with "rw" the row goes, so the fresh response replaces it."""
        self.discarded += 1
        dropped = ""
        if self.policy == "rw":
            try:
                with self._lock:
                    self._retrying(lambda: self._conn.execute("DELETE FROM responses WHERE key = ?", (key,)))
                dropped = "discarded, "
            except sqlite3.Error:
                pass
        notices.warn(f"response cache {self.path}: the cached {kind} response of {model} (key {key[:12]}) is "
                     f"unusable: {reason}; {dropped}asking the model again", once=f"response-cache:{self.path}:{key}")

    def _put_sync(self, key: str, kind: str, model: str, entry: CachedResponse) -> None:
        entry.created_at = entry.created_at or datetime.now(timezone.utc).isoformat(timespec="seconds")
        with self._lock:
            self._retrying(lambda: self._conn.execute(
                "INSERT OR IGNORE INTO responses (key, kind, model, payload, created_at) VALUES (?, ?, ?, ?, ?)",
                (key, kind, model, entry.to_json(), entry.created_at)))

    async def get(self, key: str, kind: str | None = None, model: str | None = None) -> CachedResponse | None:
        """The stored response for `key`, or None (a miss). `kind` and `model` (the request's) must match the
        row's; an unusable row is a miss with one warning line (see the module's docstring)."""
        try:
            hit = await asyncio.to_thread(self._get_sync, key, kind, model)
        except sqlite3.Error:
            hit = None  # a cache that cannot be read is a miss, never a failed call
        if hit is None:
            self.misses += 1
        else:
            self.hits += 1
        return hit

    async def put(self, key: str, kind: str, model: str, entry: CachedResponse) -> bool:
        if self.policy != "rw":
            return False
        try:
            await asyncio.to_thread(self._put_sync, key, kind, model, entry)
        except sqlite3.Error:
            return False  # losing a cache write only costs a future re-request
        self.writes += 1
        return True

    def count(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()
