"""The official judge script, `src/evaluation/evaluate_qa.py` of github.com/xiaowu0162/LongMemEval, found at
run time: in a user's checkout (`judge.official_repo`), else downloaded once at a pinned commit, checked
against its sha256 and cached in the user's cache folder. Its text is never stored in this repository; the
judge templates are read out of it (`bench.benchmarks.longmemeval.judge_templates.extract_official_templates`).
"""

from __future__ import annotations

import hashlib
import os
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from bench.errors import ConfigError

OFFICIAL_REPO_URL = "https://github.com/xiaowu0162/LongMemEval"
# the repository's HEAD when pinned (2026-05-11); evaluate_qa.py last changed in d6dc8b50 (2024-11-24)
OFFICIAL_COMMIT = "9e0b455f4ef0e2ab8f2e582289761153549043fc"
OFFICIAL_SHA256 = "ecce9c4c79dc89d99534ac17b383a5cbb5b9f0c69ee98adaf0684742e3d95251"  # of the file's bytes
OFFICIAL_REL = "src/evaluation/evaluate_qa.py"
RAW_BASE_URL = "https://raw.githubusercontent.com/xiaowu0162/LongMemEval"
BASE_URL_ENV = "OMBENCH_LONGMEMEVAL_BASE_URL"  # a mirror of raw.githubusercontent.com/xiaowu0162/LongMemEval
CACHE_ENV = "OMBENCH_CACHE_DIR"
DOWNLOAD_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class OfficialFile:
    """The official script as found: its text, where it came from, and whether it is the pinned file."""

    text: str
    path: Path
    sha256: str
    origin: str  # "checkout" | "download" | "cache"
    pinned_sha256: str = OFFICIAL_SHA256

    @property
    def pinned(self) -> bool:
        return self.sha256 == self.pinned_sha256

    def describe(self) -> str:
        """One phrase for summaries and manifests, e.g. `evaluate_qa.py @9e0b455 (pinned, sha256 ecce9c4c…)`."""
        state = f"pinned @{OFFICIAL_COMMIT[:7]}" if self.pinned else "NOT the pinned official file"
        where = f"checkout {self.path.parents[2]}" if self.origin == "checkout" else "downloaded"
        return f"LongMemEval {self.path.name} ({where}, {state}, sha256 {self.sha256[:12]})"


def cache_dir() -> Path:
    """$OMBENCH_CACHE_DIR, else $XDG_CACHE_HOME/om-bench, else ~/.cache/om-bench."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "om-bench"


def cached_path(commit: str = OFFICIAL_COMMIT, rel: str = OFFICIAL_REL) -> Path:
    return cache_dir() / "longmemeval" / commit / rel


def download_url(commit: str = OFFICIAL_COMMIT, base_url: str | None = None, rel: str = OFFICIAL_REL) -> str:
    base = (base_url or os.environ.get(BASE_URL_ENV) or RAW_BASE_URL).rstrip("/")
    return f"{base}/{commit}/{rel}"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _fetch(url: str, timeout_s: float) -> bytes:
    """The bytes at `url`; raises OSError. Runs in a daemon thread: name resolution ignores socket timeouts."""
    result: list[bytes | BaseException] = []

    def get() -> None:
        try:
            with urllib.request.urlopen(url, timeout=timeout_s) as resp:  # noqa: S310 (a fixed https URL or a mirror)
                result.append(resp.read())
        except BaseException as exc:  # handed to the caller's thread
            result.append(exc)

    thread = threading.Thread(target=get, daemon=True)
    thread.start()
    thread.join(timeout_s + 1.0)
    if not result:
        raise TimeoutError(f"no answer within {timeout_s:.0f} s")
    got = result[0]
    if isinstance(got, BaseException):
        raise got if isinstance(got, OSError) else OSError(str(got))
    return got


def _offline_hint(url: str, reason: str, target: Path, rel: str = OFFICIAL_REL,
                  what: str = "judge.source=official") -> str:
    return (f"{what}: cannot download {rel} of LongMemEval @{OFFICIAL_COMMIT[:7]} "
            f"from {url} ({reason}); set judge.official_repo=PATH to a local checkout "
            f"(git clone {OFFICIAL_REPO_URL}), or put the file at {target}")


def official_file(official_repo: str | Path | None = None, *, base_url: str | None = None,
                  commit: str = OFFICIAL_COMMIT, sha256: str | None = None,
                  timeout_s: float = DOWNLOAD_TIMEOUT_S, download: bool = True, rel: str = OFFICIAL_REL,
                  what: str = "judge.source=official") -> OfficialFile:
    """The official script: from `official_repo` (any content: a deliberate edit is the user's choice, and the
    file's hash keys the run), else from the cache, else (`download`) fetched from the pinned commit. A
    download (or a cached copy) whose sha256 is not `sha256` (default: the pinned OFFICIAL_SHA256) is rejected.
    `rel` picks another file of the repository (with its own pinned `sha256`); `what` names the option in errors.
    Raises ConfigError with one line."""
    sha256 = sha256 or OFFICIAL_SHA256
    if official_repo is not None:
        path = Path(official_repo).expanduser() / rel
        if not path.is_file():
            raise ConfigError(f"{path} not found; set judge.official_repo to the root of your LongMemEval checkout "
                              f"({OFFICIAL_REPO_URL}), or leave it null to download the pinned file")
        data = path.read_bytes()
        return OfficialFile(data.decode("utf-8"), path, _sha256(data), "checkout", sha256)
    target = cached_path(commit, rel)
    if target.is_file():
        data = target.read_bytes()
        if _sha256(data) == sha256:
            return OfficialFile(data.decode("utf-8"), target, sha256, "cache", sha256)
        target.unlink()  # a damaged or foreign copy: fetch it again
    url = download_url(commit, base_url, rel)
    if not download:
        raise ConfigError(_offline_hint(url, "not downloaded yet", target, rel, what))
    try:
        data = _fetch(url, timeout_s)
    except (OSError, urllib.error.URLError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise ConfigError(_offline_hint(url, f"{type(exc).__name__}: {reason}", target, rel, what)) from None
    got = _sha256(data)
    if got != sha256:
        raise ConfigError(f"{what}: {url} has sha256 {got[:12]}…, not the pinned {sha256[:12]}…; "
                          f"refusing it (a changed or wrong file); set judge.official_repo=PATH to a checkout you trust")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    tmp.write_bytes(data)
    tmp.replace(target)  # atomic: a concurrent run sees the whole file or none
    return OfficialFile(data.decode("utf-8"), target, got, "download", sha256)
