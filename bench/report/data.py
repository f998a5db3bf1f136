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

    @property
    def external(self) -> bool:
        return (self.strategy or "").startswith("external:")

    @property
    def offline(self) -> bool:
        return bool(self.actor_model and self.actor_model.startswith("offline/"))

    @property
    def label(self) -> str:
        tag = " [offline engine]" if self.offline else (" [external]" if self.external else "")
        # runs of one experiment share a name: the strategy tells them apart
        strat = "" if self.external or not self.strategy or self.strategy in self.name else f"/{self.strategy}"
        return f"{self.name}{strat}{tag}"

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


def _json(v: Any) -> dict[str, Any]:
    if not v:
        return {}
    try:
        out = json.loads(v) if isinstance(v, str) else v
        return out if isinstance(out, dict) else {}
    except ValueError:
        return {}


def load(db: str | Path) -> ReportData:
    from bench.store.writer import connect

    con = connect(db, read_only=True)
    try:
        q = lambda s: con.execute(s).df()  # noqa: E731
        runs_df = q("SELECT * FROM runs ORDER BY started_at, run_key")
        actor = q("""SELECT run_key, mode(model) AS model FROM calls
                     WHERE role = 'actor' AND NOT coalesce(simulated, false) GROUP BY run_key""")
        actor_by_run = dict(zip(actor.run_key, actor.model))
        runs = [
            RunInfo(
                run_key=r.run_key, name=r.name or r.run_key, strategy=r.strategy or "?",
                actor_model=(r.actor_model if isinstance(r.actor_model, str) else None) or actor_by_run.get(r.run_key),
                n_planned=None if pd.isna(r.n_questions_planned) else int(r.n_questions_planned),
                config=_json(r.config), status=r.status,
            )
            for r in runs_df.itertuples()
        ]
        samples = q("SELECT run_key, question_id, question_type, is_abstention, label, cost_usd FROM samples")
        metrics = {
            r.run_key: summarize(
                [{"question_id": x.question_id, "question_type": x.question_type,
                  "label": None if pd.isna(x.label) else bool(x.label)}
                 for x in samples[samples.run_key == r.run_key].itertuples()],
                n_total=r.n_planned,
            )
            for r in runs
        }
        cache = q("SELECT * FROM v_cache ORDER BY run_key, profile")
        prefill = q("""SELECT run_key, profile, count(*) AS n_questions, avg(prefill_tokens) AS prefill_per_question,
                              avg(actor_prefill_tokens) AS actor_prefill_per_question
                       FROM v_prefill GROUP BY run_key, profile ORDER BY run_key, profile""")
        cost = q("SELECT * FROM v_cost")
        turns = q("SELECT run_key, question_id, turn, prompt_tokens, events FROM turns ORDER BY run_key, question_id, turn")
    finally:
        con.close()
    return ReportData(runs=runs, samples=samples, metrics=metrics, cache=cache, prefill=prefill, cost=cost, turns=turns)
