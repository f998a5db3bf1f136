"""Run legends and one colour per strategy, shared by the console summary, the report and the viewer.

Runs are labelled everywhere by their stable names (bench.store.run_names: never renumbered as runs are added);
a legend (`details`) maps each to the experiment, the swept settings (sweep jobs are named by their overrides)
and the dataset."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Sequence

# Fixed colours for the strategies that ship (tab10 hues); any other name gets a stable colour from its hash.
_FIXED = {"full_context": "#1f77b4", "rag": "#2ca02c", "compaction": "#9467bd", "om": "#d62728",
          "oracle": "#7f7f7f", "external": "#8c564b"}
_EXTRA = ("#ff7f0e", "#17becf", "#bcbd22", "#e377c2", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173",
          "#3182bd", "#e6550d", "#31a354")


@dataclass(frozen=True)
class RunId:
    """What labels are made from: a run's key, experiment name, strategy key (as configured), registered
    strategy kind, and dataset label."""

    run_key: str
    name: str
    strategy: str
    kind: str = ""
    dataset: str | None = None


def strategy_color(kind: str) -> str:
    """A colour per strategy kind, the same in every figure and page (hex)."""
    if kind.startswith("external"):
        return _FIXED["external"]
    if kind in _FIXED:
        return _FIXED[kind]
    h = int.from_bytes(hashlib.blake2b(kind.encode(), digest_size=4).digest(), "big")
    return _EXTRA[h % len(_EXTRA)]


def shade(hex_color: str, i: int, n: int) -> str:
    """The i-th of n shades of a colour (i = 0 is the colour itself; later ones lighter), for several runs of
    one strategy in one figure."""
    if n <= 1 or i == 0:
        return hex_color
    r, g, b = (int(hex_color[k:k + 2], 16) for k in (1, 3, 5))
    f = 0.65 * i / (n - 1)
    r, g, b = (round(c + (255 - c) * f) for c in (r, g, b))
    return f"#{r:02x}{g:02x}{b:02x}"


def _settings(name: str) -> list[tuple[str, str]]:
    """The overrides a sweep job was named with, as (last key segment, value) pairs, in the name's order."""
    m = re.search(r"\[(.*)\]$", name or "")
    if not m:
        return []
    parts = [p for p in m.group(1).split(",") if p]
    return [(p.split("=", 1)[0].rsplit(".", 1)[-1], p.split("=", 1)[1]) if "=" in p else (p, "") for p in parts]


def _join(settings: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"{k}={v}" if v else k for k, v in settings)


def swept(name: str) -> str:
    """The overrides a sweep job was named with (`exp[a.b.c=1,d.e=2]` -> `c=1, e=2`), "" for a plain name."""
    return _join(_settings(name))


def swept_by_run(runs: Sequence[RunId]) -> dict[str, str]:
    """run_key -> its swept settings less those every run of the same experiment shares (`dataset=...`,
    `stratified=60` given to a whole sweep), so that what tells the jobs apart survives a cut legend line."""
    base = {r.run_key: re.sub(r"\[.*\]$", "", r.name or "") for r in runs}
    settings = {r.run_key: _settings(r.name) for r in runs}
    out = {}
    for r in runs:
        group = [settings[x.run_key] for x in runs if base[x.run_key] == base[r.run_key] and settings[x.run_key]]
        common = set.intersection(*(set(s) for s in group)) if len(group) > 1 else set()
        out[r.run_key] = _join([s for s in settings[r.run_key] if s not in common])
    return out


def details(r: RunId, swept_text: str | None = None, **extra: Any) -> str:
    """The legend text of a run: experiment name (without the sweep suffix), swept settings (`swept_text`, e.g.
    from `swept_by_run`; default all of the name's), dataset, key."""
    name = re.sub(r"\[.*\]$", "", r.name or "")
    bits = [name, swept(r.name) if swept_text is None else swept_text, r.dataset or "",
            *(f"{k} {v}" for k, v in extra.items() if v), r.run_key]
    return "; ".join(b for b in bits if b)


def progress_label(strategy: str, experiment_name: str) -> str:
    """What a run's progress lines are named: the strategy, and for a sweep job (`exp[a.b=1,c=2]`) the values of
    its overrides, so parallel jobs' lines differ: `om 1500,1000`."""
    values = [v for _, v in _settings(experiment_name) if v]
    return f"{strategy} {','.join(values)}" if values else strategy
