"""Stable, readable run names: `<experiment>.<strategy>@<dataset>[.n<subset size>]-<6 hex of run_key>`
(the strategy left out when it is the experiment name, `@<dataset>` when the dataset is unknown).

A name depends only on the run's own manifest (never on which other runs share the file), so adding runs never
renames or renumbers one; the hash of the unique run_key makes it unique. Stored in the manifest's
`extra["run_name"]` when the run is written; derived the same way for runs stored before names existed. A run
written again (resumed, re-run under another experiment name) keeps the name it was stored with (`keep_name`).

A sweep job's experiment name holds its overrides (`exp[dataset=longmemeval_s,dataset.stratified=60,
strategies.om.params.message_tokens=10000,...]`, Hydra's override_dirname): a new run is named by `new_run_name`,
which keeps only what the rest of the name does not already say, by its last key segment
(`om_threshold_sweep_message_tokens=10000,observation_tokens=20000.om@longmemeval_s.n60-3fa2c1`, about 90
characters where the whole override list made about 190). Runs stored with the long form keep it.
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
    if dataset and subset_n:  # the label's own slug first: `S (cleaned)` gives `S_cleaned.n30`, not `S_cleaned_.n30`
        dataset = f"{_slug(dataset)}.n{subset_n}"
    h = hashlib.blake2b(run_key.encode(), digest_size=3).hexdigest()
    strat = _slug(strategy.removeprefix("external:"))
    base = _slug(name) if strat == _slug(name) else f"{_slug(name)}.{strat}"
    return f"{base}@{_slug(dataset)}-{h}" if dataset else f"{base}-{h}"


def _split(overrides: str) -> list[str]:
    """Hydra's override_dirname split at the commas between overrides (not those inside [..], {..}, (..), quotes)."""
    out, cur, depth, quote = [], "", 0, ""
    for ch in overrides:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        cur += ch
    return [x for x in [*out, cur] if x]


_SHOWN_SUBSET = ("dataset.stratified", "dataset.limit", "dataset.sample")  # a size the name shows as `.n<N>`


def short_experiment(name: str, subset_n: int | None = None) -> str:
    """A sweep job's experiment name (`exp[a.b.c=1,dataset=x,dataset.stratified=60]`) with only the overrides the
    run name does not already show (`dataset=` is `@<dataset>`, a stratified/limit/sample size equal to the
    subset is `.n<N>`, `run_strategies` is `.<strategy>`), each by its last key segment unless two kept ones share it: `exp[c=1]`; `exp` when none
    is left. A name without a sweep suffix is returned as it is."""
    m = re.fullmatch(r"(.*?)\[(.*)\]", name or "")
    if not m:
        return name
    kept: list[tuple[str, str]] = []
    for o in _split(m.group(2)):
        key, eq, value = o.partition("=")
        key = key.lstrip("+~")
        # `run_strategies` picks which runs a job makes, never what one run is: its strategy is `.<strategy>`
        if key in ("dataset", "run_strategies") or (key in _SHOWN_SUBSET and subset_n is not None and value == str(subset_n)):
            continue
        kept.append((key, f"{eq}{value}"))
    leaves = [k.rsplit(".", 1)[-1] for k, _ in kept]
    parts = [(leaf if leaves.count(leaf) == 1 else k) + v for (k, v), leaf in zip(kept, leaves)]
    return f"{m.group(1)}[{','.join(parts)}]" if parts else m.group(1)


def new_run_name(run_key: str, experiment_name: str, strategy: str, dataset: str | None,
                 subset_n: int | None = None) -> str:
    """The name a run gets when it is first written: `run_name` of its `short_experiment` name."""
    return run_name(run_key, short_experiment(experiment_name, subset_n), strategy, dataset, subset_n)


def keep_name(new_extra: Any, stored: Mapping[str, Any] | None) -> Any:
    """`new_extra` (the manifest's extra, a dict or JSON text) with the name `stored` (the results file's `runs`
    row of the same run key, or None) already has: a stored run is never renamed by being written again."""
    if not stored:
        return new_extra
    import json

    old = name_of(stored)
    as_text = new_extra is None or isinstance(new_extra, str)  # None: the runs column's empty JSON text
    extra = json.loads(new_extra) if as_text and new_extra else (dict(new_extra) if new_extra else {})
    if not isinstance(extra, dict) or extra.get("run_name") == old:
        return new_extra
    extra["run_name"] = old
    if as_text:
        from bench.store.rows import to_json

        return to_json(extra)
    return extra


def stored_run(con: Any, run_key: str) -> dict[str, Any] | None:
    """The columns of a results file's `runs` row that its name is derived from (`name_of`), or None."""
    from bench.store.db import sql

    cols = ["run_key", "name", "strategy", "dataset_split", "dataset_name", "extra"]
    got = sql(con, f"SELECT {', '.join(cols)} FROM runs WHERE run_key = ?", [run_key])
    return dict(zip(cols, got[0])) if got else None


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
