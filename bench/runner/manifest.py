"""The reproducibility manifest stored with every run: code, packages, data, tokenizer, prices, config."""

from __future__ import annotations

import importlib.metadata as md
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

_PACKAGES = ("om-bench", "litellm", "tiktoken", "duckdb", "hydra-core", "pandas", "matplotlib", "rank-bm25")


def git_state(root: Path | None = None) -> dict[str, Any]:
    root = root or Path(__file__).resolve().parents[2]
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                    capture_output=True, text=True, timeout=10).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": sha or None, "dirty": dirty if sha else None}


def package_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for p in _PACKAGES:
        try:
            out[p] = md.version(p)
        except md.PackageNotFoundError:
            out[p] = None
    return out


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
