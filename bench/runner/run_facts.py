"""What the summary and its notes read from stored runs, shared by bench.runner.summary and the note modules
(window_notes, log_notes) that the summary calls: kept apart so those imports run one way."""

from __future__ import annotations

import json
import textwrap
from typing import Any

import pandas as pd

WIDTH = 100  # columns of the run summary and its notes


def event_counts(turns: pd.DataFrame, event: str) -> pd.Series:
    """How often `event` occurs in each turn's comma-separated events: an int Series on `turns`' index (empty,
    never a frame, when the strategy stored no turns)."""
    return pd.Series([str(e).split(",").count(event) if isinstance(e, str) else 0 for e in turns.events],
                     index=turns.index, dtype="int64")


def strategy_params(strategy: str, config: Any) -> dict[str, Any]:
    """strategies.<strategy>.params of a run's stored config ({} when absent or unreadable)."""
    try:
        cfg = json.loads(config) if isinstance(config, str) else (config or {})
        params = ((cfg.get("strategies") or {}).get(strategy) or {}).get("params") or {}
        return dict(params) if isinstance(params, dict) else {}
    except (ValueError, AttributeError):
        return {}


def wrap_note(note: str, width: int = WIDTH) -> str:
    """A summary note's lines wrapped to `width` (run names are long, the counts come last), continuation lines
    indented: wrapped, never cut."""
    return "\n".join("\n".join(textwrap.wrap(line, width, subsequent_indent="  ")) for line in note.split("\n"))
