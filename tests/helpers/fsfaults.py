"""Real file-system failures for subprocess tests: a command run in its own user and mount namespace
(`unshare -rm`, no root needed where unprivileged namespaces are allowed) over a tiny tmpfs (disk full), a
read-only tmpfs, or one file bind-mounted read-only. The mounts exist only for that command.

Root ignores file modes, so `chmod` cannot make a read-only file for a test run as root; a read-only mount
refuses everyone (EROFS)."""

from __future__ import annotations

import functools
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest


@functools.cache
def can_unshare() -> bool:
    """Whether this machine lets a process mount a tmpfs in its own namespaces."""
    if shutil.which("unshare") is None:
        return False
    try:
        got = subprocess.run(["unshare", "-rm", "sh", "-c", 'mount -t tmpfs -o size=64k tmpfs "$(mktemp -d)"'],
                             capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return got.returncode == 0


requires_unshare = pytest.mark.skipif(
    not can_unshare(), reason="needs `unshare -rm` (user and mount namespaces) to mount a tiny or read-only tmpfs")


def in_namespace(setup: list[str], cmd: list[str]) -> list[str]:
    """`cmd` run after the shell lines `setup` (mounts) inside a private user+mount namespace."""
    script = " && ".join([*setup, 'exec "$@"'])
    return ["unshare", "-rm", "sh", "-c", script, "sh", *cmd]


def tmpfs(mountpoint: Path, size: str, *, read_only: bool = False, fill_to_kb: int | None = None) -> list[str]:
    """Setup lines: a tmpfs of `size` at `mountpoint` (created beforehand), optionally read-only, optionally
    left with only `fill_to_kb` KiB free by a filler file."""
    q = shlex.quote(str(mountpoint))
    lines = [f"mount -t tmpfs -o size={size} tmpfs {q}"]
    if fill_to_kb is not None:
        lines.append(f"dd if=/dev/zero of={q}/.filler bs=1k count=$(( $(df -k --output=avail {q} | tail -1) - "
                     f"{int(fill_to_kb)} )) 2>/dev/null")
    if read_only:
        lines.append(f"mount -o remount,ro {q}")
    return lines


def seeded_tmpfs(mountpoint: Path, size: str, seed: Path, *, read_only: bool = False,
                 fill_to_kb: int | None = None) -> list[str]:
    """Like `tmpfs`, holding a copy of the folder `seed` (made before it is filled or turned read-only)."""
    q = shlex.quote(str(mountpoint))
    lines = tmpfs(mountpoint, size)
    lines.append(f"cp -a {shlex.quote(str(seed))}/. {q}/")
    if fill_to_kb is not None:
        lines += tmpfs(mountpoint, size, fill_to_kb=fill_to_kb)[1:]
    if read_only:
        lines.append(f"mount -o remount,ro {q}")
    return lines


def read_only_file(path: Path) -> list[str]:
    """Setup lines: `path` (an existing file) bind-mounted read-only over itself; its folder stays writable."""
    q = shlex.quote(str(path))
    return [f"mount --bind {q} {q}", f"mount -o remount,bind,ro {q}"]
