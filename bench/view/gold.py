"""The gold evidence sessions of the viewed questions, for the human (`Benchmark.gold_sessions`): read once per
dataset from each run's recorded dataset (its path, else its name), for every question of the runs on it."""

from __future__ import annotations

import json
from typing import Any


def _source(extra: Any, dataset_name: str | None) -> str | None:
    """A run's dataset: the file it read (runs.extra `dataset_path`), else its name (the synthetic sample)."""
    e = extra if isinstance(extra, dict) else (json.loads(extra) if isinstance(extra, str) and extra else {})
    return e.get("dataset_path") or dataset_name


def gold_by_run(res: Any, run_keys: list[str], benchmark: Any) -> tuple[dict[str, dict[str, list[Any]]], list[str]]:
    """(run_key -> question id -> its `GoldSession`s, notes on what could not be read). A benchmark without
    `gold_sessions`, or a dataset that is gone, leaves those runs out with a note."""
    from bench.errors import UserError

    load = getattr(benchmark, "gold_sessions", None)
    if load is None:
        return {}, []
    runs = res.runs()
    wanted: dict[str, set[str]] = {}
    source_of: dict[str, str] = {}
    for r in runs.to_dict("records"):
        key = str(r["run_key"])
        src = _source(r.get("extra"), r.get("dataset_name"))
        if key in run_keys and src:
            source_of[key] = src
            wanted.setdefault(src, set()).update(str(q) for q in res.samples(key).question_id)
    loaded: dict[str, dict[str, list[Any]]] = {}
    notes = []
    for src, ids in wanted.items():
        try:
            loaded[src] = load(src, ids)
        except (UserError, OSError, ValueError) as exc:
            notes.append(f"gold evidence sessions not shown for runs on {src}: {str(exc).splitlines()[0]}")
    return {k: loaded[s] for k, s in source_of.items() if s in loaded}, notes
