"""Stable, readable run names: `<experiment>.<strategy>@<dataset>[.n<subset size>]-<6 hex of run_key>`
(the strategy left out when it is the experiment name, `@<dataset>` when the dataset is unknown).

A name depends only on the run's own manifest (never on which other runs share the file), so adding runs never
renames or renumbers one; the hash of the unique run_key makes it unique. Stored in the manifest's
`extra["run_name"]` when the run is written; derived the same way for runs stored before names existed.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Mapping

_UNSAFE = re.compile(r"[^A-Za-z0-9_.:=,+-]+")


def _slug(s: str) -> str:
    return _UNSAFE.sub("_", s).strip("_") or "-"


def run_name(run_key: str, name: str, strategy: str, dataset: str | None, subset_n: int | None = None) -> str:
    """The run's name, e.g. `quick.om@oracle.n30-3fa2c1` (`.n30`: a subset of 30 questions). Pure: same inputs,
    same name."""
    if dataset and subset_n:
        dataset = f"{dataset}.n{subset_n}"
    h = hashlib.blake2b(run_key.encode(), digest_size=3).hexdigest()
    strat = _slug(strategy.removeprefix("external:"))
    base = _slug(name) if strat == _slug(name) else f"{_slug(name)}.{strat}"
    return f"{base}@{_slug(dataset)}-{h}" if dataset else f"{base}-{h}"


def name_of(row: Mapping[str, Any]) -> str:
    """The stored name of a `runs` row (extra already decoded or not), else the derived one."""
    extra = row.get("extra") or {}
    if isinstance(extra, str):
        import json

        extra = json.loads(extra) if extra else {}
    stored = extra.get("run_name") if isinstance(extra, Mapping) else None
    if stored:
        return str(stored)
    subset = extra.get("subset_ids") if isinstance(extra, Mapping) else None
    return run_name(str(row["run_key"]), _text(row.get("name")), _text(row.get("strategy")),
                    _text(row.get("dataset_split")) or _text(row.get("dataset_name")) or None,
                    len(subset) if isinstance(subset, list) and subset else None)


def _text(v: Any) -> str:
    """A text column's value, "" for None or a missing value as pandas reads it (NaN)."""
    return v if isinstance(v, str) else ""
