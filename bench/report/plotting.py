"""What every report figure shares: the `Figure` record, matplotlib set up headless, saving."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

@dataclass
class Figure:
    """A figure of the report: its PNG path, or the one-line reason it was skipped (or failed)."""

    name: str
    title: str
    path: Path | None = None
    note: str = ""
    failed: bool = False


def plt() -> Any:
    """pyplot on the Agg backend (files only; the notebook uses its own inline backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot

    return pyplot


def save(fig: Any, out: Path, name: str) -> Path:
    path = out / f"{name}.png"
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt().close(fig)
    return path


def skip(f: Figure, note: str) -> Figure:
    f.note = note
    return f
