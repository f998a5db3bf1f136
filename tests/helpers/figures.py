"""The figures a results file holds, for comparing two runs of the same work (a clean run against a crashed and
resumed one, or one under injected faults): every question table, sorted, without what legitimately differs
between two runs (timestamps, latencies, retries, response-cache hits, whether a checkpoint was restored)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from bench.store.schema import QUESTION_TABLES, columns

VOLATILE = frozenset({"run_key", "answered_at", "checkpoint_restored", "latency_s", "retries", "response_cache_hit"})
COMPARED = {t: [c for c in columns(t) if c not in VOLATILE] for t in QUESTION_TABLES}


def figures(db: str | Path, tables: tuple[str, ...] = QUESTION_TABLES) -> dict[str, list[tuple[Any, ...]]]:
    """table -> its rows (the COMPARED columns, with the run's strategy first), sorted."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        out = {}
        for t in tables:
            cols = ", ".join(f"x.{c}" for c in COMPARED[t])
            rows = con.execute(f"SELECT r.strategy, {cols} FROM {t} x JOIN runs r USING (run_key)").fetchall()
            out[t] = sorted(rows, key=repr)
        return out
    finally:
        con.close()


def differences(a: dict[str, list[tuple[Any, ...]]], b: dict[str, list[tuple[Any, ...]]]) -> list[str]:
    """One line per table whose rows differ (row counts, and the first differing row)."""
    out = []
    for t in a:
        if a[t] != b.get(t):
            first = next((i for i, (x, y) in enumerate(zip(a[t], b.get(t, []))) if x != y), None)
            where = f"; first difference at row {first}: {_short(a[t][first])} != {_short(b[t][first])}" \
                if first is not None else ""
            out.append(f"{t}: {len(a[t])} vs {len(b.get(t, []))} rows{where}")
    return out


def _short(row: tuple[Any, ...]) -> str:
    return repr(tuple(v[:8] + b"..." if isinstance(v, bytes) else v for v in row))[:300]
