"""What a run owes its user besides results: one-line warnings (on the console and in the run log) and the exit
status of failures that happen where no exception can carry it (a Hydra callback).

A warning is one line `ombench: warning: ...` on stderr (a live rich progress display redirects stderr and
prints it above the bar) and one WARNING record on the `bench.run` logger, which Hydra's job logging writes to
the run log. `once=` keys a warning that would otherwise repeat (one per checkpoint folder, one per cache file).
"""

from __future__ import annotations

import logging
import sys
import threading

log = logging.getLogger("bench.run")

_lock = threading.Lock()
_seen: set[str] = set()
_exit_status = 0


def warn(text: str, *, once: str | None = None) -> bool:
    """Print and log one warning line; returns False (and says nothing) when `once` was already used."""
    line = " ".join(text.split())  # one line, whatever the message held
    with _lock:
        if once is not None:
            if once in _seen:
                return False
            _seen.add(once)
    if log.hasHandlers():  # the run log (Hydra's job logging); without one, logging's last resort would print it twice
        log.warning("%s", line)
    print(f"ombench: warning: {line}", file=sys.stderr, flush=True)
    return True


def fail(code: int) -> None:
    """Record a failure's exit status (the highest wins) for the command to return when it ends."""
    global _exit_status
    with _lock:
        _exit_status = max(_exit_status, int(code))


def exit_status() -> int:
    """The exit status recorded by `fail` (0: none), for the command's return."""
    return _exit_status


def reset() -> None:
    """Forget recorded warnings and failures (a new command in the same process, tests)."""
    global _exit_status
    with _lock:
        _seen.clear()
        _exit_status = 0
