"""The gold evidence sessions of the viewed questions, for the human (`Benchmark.gold_sessions`): read once per
dataset from each run's recorded dataset (its path, else its name), for every question of the runs on it."""

from __future__ import annotations

import json
from typing import Any


def _source(extra: Any, dataset_name: str | None) -> str | None:
    """A run's dataset: the file it read (runs.extra `dataset_path`), else its name (the synthetic sample)."""
    try:
        e = extra if isinstance(extra, dict) else (json.loads(extra) if isinstance(extra, str) and extra else {})
    except ValueError:
        e = {}
    got = (e.get("dataset_path") if isinstance(e, dict) else None) or dataset_name
    return got if isinstance(got, str) and got else None  # a NULL name reads as NaN


def gold_by_run(res: Any, run_keys: list[str], benchmark: Any) -> tuple[dict[str, dict[str, list[Any]]], list[str]]:
    """(run_key -> question id -> its `GoldSession`s, notes on what could not be read). A benchmark without
    `gold_sessions` leaves every run out; a dataset that cannot be read (gone, moved, another format) leaves its
    runs out with a note: the viewer never fails for want of them."""
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
        except Exception as exc:  # the pages are written without them; the note says why
            why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            notes.append(f"gold evidence sessions not shown for runs on {src}: {why}")
    return {k: loaded[s] for k, s in source_of.items() if s in loaded}, notes
