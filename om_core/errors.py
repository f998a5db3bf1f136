"""Every error om_core raises derives from `OMError`, so a caller can catch the library's failures with one
`except OMError` and let everything else (bugs, cancellation) through.

Each subclass also derives from the builtin exception that code before this hierarchy raised (`ValueError`
for bad input, `RuntimeError` for failures), so existing `except ValueError` handlers keep working. Messages
are one line that names the thing at fault and the fix.

    OMError
    ├── ConfigError            an OMConfig knob, prompt profile/folder or storage argument is invalid  (ValueError)
    ├── InputError             a call got an argument it cannot use: naive datetime, a message of another
    │                          thread, a recall cursor that does not exist...                           (ValueError)
    ├── StorageError           a storage backend failed (database error, closed connection)             (RuntimeError)
    │   └── FormatVersionError stored OM data (database, `export_state` snapshot) has another format
    │                          version than this om_core reads                                   (also ValueError)
    ├── ModelOutputError       a model's output cannot be used                                          (RuntimeError)
    │   └── RejectedOutputError    an output guard refused it after the retries the rules allow (`.reason`)
    │       ├── DegenerateOutputError  the Observer looped (repetition) again after one regeneration
    │       └── EmptyReflectionError   the Reflector produced nothing usable for non-empty observations
    └── TokenizerError         the tiktoken encoding is unavailable offline                             (RuntimeError)
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "DegenerateOutputError",
    "EmptyReflectionError",
    "FormatVersionError",
    "InputError",
    "ModelOutputError",
    "OMError",
    "RejectedOutputError",
    "StorageError",
    "TokenizerError",
]


class OMError(Exception):
    """Base class of every error om_core raises."""


class ConfigError(OMError, ValueError):
    """Invalid configuration: an `OMConfig` knob, a prompt profile or folder, a storage path or prefix."""


class InputError(OMError, ValueError):
    """An argument a call cannot use (naive datetime, a message of another thread or resource, a recall
    cursor that is not stored, a page out of range...)."""


class StorageError(OMError, RuntimeError):
    """A storage backend failed (database error, lost connection); the operation's transaction was rolled back."""


class FormatVersionError(StorageError, ValueError):
    """Stored OM data was written in a format version this om_core does not read.

    Raised when a SQLite file or PostgreSQL schema is opened (`found`/`expected` are the `format_version`
    stored in its `<prefix>meta` table and the one this om_core writes) and by `import_state` for a snapshot
    of another version. `where` names the file, database or snapshot.
    """

    def __init__(self, message: str, *, where: str = "", found: object = None, expected: object = None) -> None:
        super().__init__(message)
        self.where = where
        self.found = found
        self.expected = expected


class ModelOutputError(OMError, RuntimeError):
    """A model's output cannot be used (after the retries the rules allow)."""


class RejectedOutputError(ModelOutputError):
    """An Observer or Reflector output failed an output guard (`om_core.guards`) on every attempt the retry
    rules allow, so it must not become memory. `reason` is the guard's short reason ("degenerate_repetition",
    "empty_output", ...); `role` is "observer" or "reflector". The engine catches it: the messages stay
    unobserved (or the observations unreflected) and the turn records an `observation_rejected` /
    `reflection_rejected` event instead of failing."""

    def __init__(self, message: str, *, reason: str = "rejected", role: str = "") -> None:
        super().__init__(message)
        self.reason = reason
        self.role = role


class DegenerateOutputError(RejectedOutputError):
    """The Observer produced repetition-loop output again after one regeneration (mastra-ai/mastra,
    packages/memory/src/processors/observational-memory/observer-runner.ts; the rules of
    `om_core.degenerate.detect_degenerate_repetition`)."""

    def __init__(self, message: str, *, reason: str = "degenerate_repetition", role: str = "observer") -> None:
        super().__init__(message, reason=reason, role=role)


class EmptyReflectionError(RejectedOutputError):
    """The Reflector produced nothing usable for non-empty observations (every attempt empty or refused by a
    guard); committing would erase memory."""

    def __init__(self, message: str, *, reason: str = "empty_output", role: str = "reflector") -> None:
        super().__init__(message, reason=reason, role=role)


class TokenizerError(OMError, RuntimeError):
    """The tiktoken encoding cannot be loaded offline (install litellm, which ships the BPE files, or set
    TIKTOKEN_CACHE_DIR)."""
