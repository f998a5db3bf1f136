"""Errors a user can cause and fix. The CLI prints them as one line naming the thing and the fix.

`UserError.exit_code` is the command's exit status: 2 for a misuse (bad input or configuration), 1 for a failure
of the machine around the run (`StorageFailure`: disk full, a read-only folder, a file another process holds)."""

from __future__ import annotations

import errno
import re


class UserError(Exception):
    exit_code = 2


class DataError(UserError):
    """Malformed or missing dataset input."""


class ConfigError(UserError):
    """Invalid experiment configuration."""


class StorageFailure(UserError):
    """Writing results, checkpoints or shards failed for a reason outside the command: disk full, read-only or
    not permitted, or another process holds the file. `kind` is one of full, too_large, readonly, denied, locked, io,
    damaged; the message is `<action> failed: <why>; <safe>; <fix>` (see `storage_failure`)."""

    exit_code = 1

    def __init__(self, action: str, why: str, kind: str = "io", safe: str = "", fix: str = "") -> None:
        self.action, self.why, self.kind, self.safe = action, why, kind, safe
        self.fix = fix or FIXES.get(kind, FIXES["io"])
        super().__init__("; ".join(p for p in (f"{action} failed: {why}", safe, self.fix) if p))

    def with_safe(self, safe: str, fix: str = "") -> StorageFailure:
        """The same failure saying what is safe (what was written, where) and, optionally, another next step."""
        return StorageFailure(self.action, self.why, self.kind, safe, fix or self.fix)


_ERRNO_KINDS = {errno.ENOSPC: "full", errno.EDQUOT: "full", errno.EFBIG: "too_large", errno.EROFS: "readonly",
                errno.EACCES: "denied", errno.EPERM: "denied"}
# what DuckDB, SQLite and pyarrow say (their exceptions carry no errno), lower-cased
_TEXT_KINDS = (
    ("no space left", "full"), ("disk is full", "full"), ("database or disk is full", "full"),
    ("file too large", "too_large"), ("disk quota", "full"),
    ("read-only file system", "readonly"), ("readonly database", "readonly"), ("read-only", "readonly"),
    ("permission denied", "denied"), ("operation not permitted", "denied"),
    ("could not set lock", "locked"), ("conflicting lock", "locked"), ("database is locked", "locked"),
    # a damaged file: truncated, zeroed, garbled blocks (DuckDB) or a malformed SQLite image
    ("corrupt database file", "damaged"), ("could not read enough bytes", "damaged"),
    ("does not match stored checksum", "damaged"), ("not a valid duckdb database", "damaged"),
    ("database disk image is malformed", "damaged"), ("file is not a database", "damaged"),
)
WORDS = {"full": "no space left on the device",
         "too_large": "the file reached the file-size limit of this process (ulimit -f)", "readonly": "the file system is read-only",
         "denied": "permission denied", "locked": "another process holds it", "io": "an I/O error",
         "damaged": "the file is damaged"}


def io_kind(exc: BaseException) -> str | None:
    """The kind of I/O failure behind `exc` or any exception it was raised from (full, readonly, denied, locked),
    or None when none of them is one."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, StorageFailure):
            return cur.kind
        if isinstance(cur, OSError) and cur.errno in _ERRNO_KINDS:
            return _ERRNO_KINDS[cur.errno]
        text = str(cur).lower()
        for needle, kind in _TEXT_KINDS:
            if needle in text:
                return kind
        cur = cur.__cause__ or cur.__context__
    return None


def lock_holder(exc: BaseException) -> str:
    """" (PID n)" when DuckDB's lock error names the process that holds the file, else ""."""
    m = re.search(r"PID (\d+)", str(exc))
    return f" (PID {m.group(1)})" if m else ""


FIXES = {"full": "free disk space, then re-run the same command",
         "too_large": "raise the limit (ulimit -f unlimited) or write to another output.dir=..., then re-run the same "
                      "command (the questions stored are kept)",
         "readonly": "make it writable or choose another output.dir=..., then re-run the same command",
         "denied": "make it writable or choose another output.dir=..., then re-run the same command",
         "locked": "wait for the other process to finish (or stop it), then re-run the same command",
         "io": "check the disk, then re-run the same command",
         "damaged": "move the file aside (keep it for recovery), then re-run the same command: it starts a fresh "
                    "file at the same path (or pass another path)"}


def storage_failure(exc: BaseException, action: str, *, safe: str = "", fix: str = "") -> StorageFailure:
    """The StorageFailure for `exc` raised while doing `action` ("writing results to X"): why in a few words,
    what is `safe`, and the next step (`fix`, else the kind's default)."""
    if isinstance(exc, StorageFailure):
        return exc
    kind = io_kind(exc) or "io"
    why = WORDS[kind] + (lock_holder(exc) if kind == "locked" else "")
    if kind in ("io", "damaged"):
        why = f"{WORDS[kind]} ({' '.join(str(exc).split())[:160]})"
    return StorageFailure(action, why, kind, safe, fix)
