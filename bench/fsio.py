"""Files the harness writes itself (checkpoints, shards): atomically, durably, and with the temporaries of a
killed writer cleaned up.

A file is written to a temporary beside it (`.tmp-<pid>-<random>-<name>`), flushed and fsynced, then renamed
over the target and the folder fsynced: a reader sees the old file or the whole new one, never a part, and a
machine that loses power keeps one of the two. A process killed mid-write leaves its temporary behind;
`remove_orphans` deletes those whose writer (the pid in the name) is gone, so a folder shared by parallel sweep
jobs never loses a temporary still being written.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Callable, IO

TMP_PREFIX = ".tmp-"
_TMP = re.compile(r"^\.tmp-(\d+)-")


def temp_path(path: Path) -> Path:
    """A fresh temporary file beside `path`, named with this process's id (created empty)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{TMP_PREFIX}{os.getpid()}-", suffix=f"-{path.name}")
    os.close(fd)
    return Path(tmp)


def atomic_write(path: str | Path, write: Callable[[IO[bytes]], object], *, durable: bool = True) -> Path:
    """Write `path` through `write(fh)` (a binary file) into a temporary, then rename it into place. `durable`
    fsyncs the file and its folder. Raises OSError (disk full, read-only, permission) with the target unchanged
    and no temporary left behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    try:
        with open(tmp, "wb") as fh:
            write(fh)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(path.parent)
    return path


def atomic_write_bytes(path: str | Path, data: bytes, *, durable: bool = True) -> Path:
    """`atomic_write` of a byte string."""
    return atomic_write(path, lambda fh: fh.write(data), durable=durable)


def fsync_dir(folder: Path) -> None:
    """Make a rename in `folder` durable (a no-op where folders cannot be opened, e.g. Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def remove_orphans(folder: str | Path, *, recursive: bool = False) -> int:
    """Delete the temporaries in `folder` (and below, with `recursive`) left by writers that no longer run;
    returns how many. A missing folder has none."""
    root = Path(folder)
    if not root.is_dir():
        return 0
    removed = 0
    for p in (root.rglob(f"{TMP_PREFIX}*") if recursive else root.glob(f"{TMP_PREFIX}*")):
        m = _TMP.match(p.name)
        if m is None or _alive(int(m.group(1))) or not p.is_file():
            continue
        try:
            p.unlink()
            removed += 1
        except FileNotFoundError:  # another process cleaned it first
            pass
    return removed
