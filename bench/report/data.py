"""Everything the report needs, read from the DuckDB file alone (read-only)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from bench.evaluate.metrics import Metrics, summarize


@dataclass
class RunInfo:
    run_key: str
    name: str
    strategy: str
    actor_model: str | None
    n_planned: int | None
    config: dict[str, Any]
    status: str | None
    dataset: str | None = None
    label_base: str = ""  # the name figures and tables use; `load` makes it unique across the runs

    @property
    def external(self) -> bool:
        return (self.strategy or "").startswith("external:")

    @property
    def offline(self) -> bool:
        return bool(self.actor_model and self.actor_model.startswith("offline/"))

    @property
    def short_label(self) -> str:
        # runs of one experiment share a name: the strategy tells them apart
        strat = "" if self.external or not self.strategy or self.strategy in self.name else f"/{self.strategy}"
        return f"{self.name}{strat}"

    @property
    def label(self) -> str:
        tag = " [offline engine]" if self.offline else (" [external]" if self.external else "")
        return f"{self.label_base or self.short_label}{tag}"

    def om_thresholds(self) -> tuple[float | None, float | None]:
        cfg = self.config or {}
        om = (cfg.get("strategy") or {}).get("om") if isinstance(cfg.get("strategy"), dict) else None
        om = om or cfg.get("om") or {}
        if not isinstance(om, dict):
            return None, None
        return om.get("message_tokens"), om.get("observation_tokens")


@dataclass
class ReportData:
    runs: list[RunInfo]
    samples: pd.DataFrame
    metrics: dict[str, Metrics]
    cache: pd.DataFrame  # v_cache
    prefill: pd.DataFrame  # v_prefill aggregated per run/profile
    cost: pd.DataFrame  # v_cost
    turns: pd.DataFrame
    events_by_turn: pd.DataFrame = field(default_factory=pd.DataFrame)

    def run(self, key: str) -> RunInfo:
        return next(r for r in self.runs if r.run_key == key)


def dataset_label(name: Any, sha256: Any) -> str | None:
    """A dataset's name as tables show it: long generated names (a synthetic spec) become `synthetic:<sha 8>`."""
    if not isinstance(name, str) or not name:
        return None
    if len(name) <= 24 or not isinstance(sha256, str):
        return name
    return f"{name.split(':')[0]}:{sha256[:8]}"


def _json(v: Any) -> dict[str, Any]:
    if not v:
        return {}
    try:
        out = json.loads(v) if isinstance(v, str) else v
        return out if isinstance(out, dict) else {}
    except ValueError:
        return {}


def _unique_labels(runs: list[RunInfo]) -> None:
    """Runs that share name and strategy (one experiment over two datasets, say) get their dataset added to the
    label, and their run key if that is not enough, so no two table rows or legend entries read the same."""

    def label(r: RunInfo, level: int) -> str:
        return " ".join([r.short_label, f"@{r.dataset or '-'}", r.run_key][: level + 1])

    level = {r.run_key: 0 for r in runs}
    for step in (1, 2):
        labels = [label(r, level[r.run_key]) for r in runs]
        for r, lab in zip(runs, labels):
            if labels.count(lab) > 1:
                level[r.run_key] = step
    for r in runs:
        r.label_base = label(r, level[r.run_key])


def load(db: str | Path) -> ReportData:
    """Everything the report shows, read through `bench.store.Results`. Raises UserError for a missing file or
    one of another format version."""
    from bench.store import Results

    with Results(db) as res:
        runs_df = res.runs()
        actor_by_run = res.actor_models()
        samples = res.samples()[["run_key", "question_id", "question_type", "is_abstention", "label", "cost_usd"]]
        cache, prefill, cost, turns = res.cache(), res.prefill(), res.cost(), res.turns()
    runs = [
        RunInfo(
            run_key=r.run_key, name=r.name or r.run_key, strategy=r.strategy or "?",
            actor_model=(r.actor_model if isinstance(r.actor_model, str) else None) or actor_by_run.get(r.run_key),
            n_planned=None if pd.isna(r.n_questions_planned) else int(r.n_questions_planned),
            config=_json(r.config), status=r.status,
            dataset=dataset_label(r.dataset_name, r.dataset_sha256),
        )
        for r in runs_df.itertuples()
    ]
    _unique_labels(runs)
    metrics = {
        r.run_key: summarize(
            [{"question_id": x.question_id, "question_type": x.question_type,
              "label": None if pd.isna(x.label) else bool(x.label)}
             for x in samples[samples.run_key == r.run_key].itertuples()],
            n_total=r.n_planned,
        )
        for r in runs
    }
    return ReportData(runs=runs, samples=samples, metrics=metrics, cache=cache, prefill=prefill, cost=cost, turns=turns)
