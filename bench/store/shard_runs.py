"""One `runs` row for a run split into question shards (`dataset.shard=i/n`): every shard writes its own row under
the same run key, and `merge_shards` combines them instead of keeping whichever was merged last.

The combined row: `started_at` the earliest shard's start, `finished_at` the latest shard's end (None while a merged
shard has not finished or a shard is missing), `status` finished only when all n shards are merged and finished
(else stopped, or running while a merged shard is), `n_questions_planned` the whole run's, and in `extra`:

- `shards`: {"i/n": {status, started_at, finished_at, stopped, n_failures, failures}} per merged shard, kept from
  the results file's row for shards not in this merge (merging shards in several goes gives the same row);
- `stopped`: why the run is not finished ("shard 2/4: error: ..."; "shards not merged yet: 3/4, 4/4"), or None;
- `failures` (at most MAX_FAILURES, from every shard) and `n_failures` (the sum), as a single run writes them.

Rows are dicts of the `runs` columns (bench.store.schema); timestamps are datetimes, `extra` a JSON text.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from bench.store.rows import to_json

MAX_FAILURES = 100  # as bench.runner.experiment.MAX_FAILURES_NOTED
Row = dict[str, Any]


def shard_of(row: Row) -> str | None:
    """The "i/n" a run row was written by (manifest `extra.shard`), None for an unsplit run's row."""
    return _extra(row).get("shard")


def combine(rows: list[Row], existing_extra: str | None = None) -> Row:
    """The run row of one run key from the rows its shard files hold (and the results file's row, `existing_extra`,
    for shards merged earlier). Rows without a shard: the latest written stands (a re-run job's row)."""
    if not any(shard_of(r) for r in rows):
        return max(rows, key=lambda r: (_ts(r.get("finished_at")), _ts(r.get("started_at"))))
    parts: dict[str, dict[str, Any]] = dict(_extra({"extra": existing_extra}).get("shards") or {})
    for r in sorted(rows, key=lambda r: _ts(r.get("started_at"))):
        e = _extra(r)
        parts[str(e["shard"])] = {
            "status": r.get("status"), "started_at": _iso(r.get("started_at")),
            "finished_at": _iso(r.get("finished_at")), "stopped": e.get("stopped"),
            "n_failures": int(e.get("n_failures") or 0), "failures": list(e.get("failures") or [])[:MAX_FAILURES]}
    parts = dict(sorted(parts.items(), key=lambda kv: _index(kv[0])))
    n = max(_count(k) for k in parts)
    missing = [f"{i}/{n}" for i in range(1, n + 1) if f"{i}/{n}" not in parts]
    states = [p["status"] for p in parts.values()]
    status = ("running" if "running" in states else
              "finished" if not missing and all(s == "finished" for s in states) else "stopped")
    stops = [f"shard {k}: {p['stopped']}" for k, p in parts.items() if p.get("stopped")]
    if missing:
        stops.append(f"shards not merged yet: {', '.join(missing)}")
    base = max(rows, key=lambda r: _ts(r.get("started_at")))
    extra = {k: v for k, v in _extra(base).items() if k != "shard"}
    extra.update(shards=parts, stopped="; ".join(stops) or None, n_failures=sum(p["n_failures"] for p in parts.values()),
                 failures=[f for p in parts.values() for f in p["failures"]][:MAX_FAILURES])
    starts = [p["started_at"] for p in parts.values() if p["started_at"]]
    ends = [p["finished_at"] for p in parts.values()]
    return {**base, "extra": to_json(extra), "status": status,
            "started_at": min(map(datetime.fromisoformat, starts)) if starts else base.get("started_at"),
            "finished_at": max(datetime.fromisoformat(e) for e in ends if e)
            if status != "running" and not missing and all(ends) else None,
            "n_questions_planned": max((r.get("n_questions_planned") or 0) for r in rows) or None}


def _extra(row: Row) -> dict[str, Any]:
    raw = row.get("extra")
    if not raw:
        return {}
    got = json.loads(raw) if isinstance(raw, str) else raw
    return got if isinstance(got, dict) else {}


def _ts(v: Any) -> datetime:
    return v if isinstance(v, datetime) else datetime.min


def _iso(v: Any) -> str | None:
    return v.isoformat() if isinstance(v, datetime) else None


def _index(label: str) -> int:
    return int(label.partition("/")[0])


def _count(label: str) -> int:
    return int(label.partition("/")[2])
