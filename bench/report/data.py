"""Everything the report needs, read from the DuckDB file alone (read-only, through `bench.store.Results`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from bench.evaluate.metrics import Metrics, summarize
from bench.report.labels import RunId, short_labels, strategy_color


@dataclass
class RunInfo:
    run_key: str
    name: str
    strategy: str  # the configured key (`strategies.<key>`)
    actor_model: str | None
    n_planned: int | None
    config: dict[str, Any]
    status: str | None
    dataset: str | None = None
    judge_model: str | None = None
    kind: str = ""  # the registered strategy (`strategies.<key>.name`, else the key)
    label: str = ""  # the short label tables and legends use; `load` makes it unique across the runs
    color: str = "#333333"

    @property
    def external(self) -> bool:
        return (self.strategy or "").startswith("external:")

    @property
    def offline(self) -> bool:
        return bool(self.actor_model and self.actor_model.startswith("offline/"))

    @property
    def tag(self) -> str:
        return "offline engine" if self.offline else ("external" if self.external else "")

    def run_id(self) -> RunId:
        return RunId(self.run_key, self.name, self.strategy, self.kind, self.dataset)

    def strategy_cls(self) -> Any:
        """The registered class of this run's strategy, or None (external runs, a name no longer registered)."""
        from bench.strategies import STRATEGIES, strategy_class

        return strategy_class(self.kind) if self.kind in STRATEGIES else None

    @property
    def is_ceiling(self) -> bool:
        """A run that sees the evidence sessions only (its class declares `uses_oracle_view`): an upper bound
        on accuracy, drawn as a ceiling rather than as a point on a frontier."""
        cls = self.strategy_cls()
        return bool(cls is not None and cls.uses_oracle_view)

    def params(self) -> dict[str, Any]:
        """The strategy's params as run: its config entry `strategies.<key>.params` over the params dataclass'
        defaults ({} when the strategy is unknown or its params no longer parse)."""
        import dataclasses

        cls = self.strategy_cls()
        entry = ((self.config or {}).get("strategies") or {}).get(self.strategy) or {}
        given = entry.get("params") if isinstance(entry, dict) else None
        if cls is None:
            return dict(given or {})
        try:
            return dataclasses.asdict(cls.parse(given or {}))
        except Exception:  # a config of an older version: show what was given
            return dict(given or {})


@dataclass
class ReportData:
    runs: list[RunInfo]
    samples: pd.DataFrame
    metrics: dict[str, Metrics]
    cache: pd.DataFrame  # v_cache
    prefill: pd.DataFrame  # v_prefill aggregated per run/profile
    cost: pd.DataFrame  # v_cost
    turns: pd.DataFrame
    profile: str = "openai"  # the cache profile the cache figures and tables use
    profiles: list[str] = field(default_factory=list)
    latency: pd.DataFrame = field(default_factory=pd.DataFrame)
    cost_by_role: pd.DataFrame = field(default_factory=pd.DataFrame)
    events: pd.DataFrame = field(default_factory=pd.DataFrame)
    retrieval: pd.DataFrame = field(default_factory=pd.DataFrame)
    judge_labels: pd.DataFrame = field(default_factory=pd.DataFrame)
    judge_repeats: pd.DataFrame = field(default_factory=pd.DataFrame)
    memory_outputs: pd.DataFrame = field(default_factory=pd.DataFrame)  # Observer/Reflector calls by outcome
    memory_summary: pd.DataFrame = field(default_factory=pd.DataFrame)  # per question: generation, memory size
    unpriced: pd.DataFrame = field(default_factory=pd.DataFrame)  # per run and model: calls without a price
    retried: pd.DataFrame = field(default_factory=pd.DataFrame)  # per question: label, label_retried, n_tries
    retry_specs: dict[str, dict[str, Any]] = field(default_factory=dict)  # run_key -> answer.retries (runs that retried)
    benchmark: Any = None  # the runs' benchmark (bench.benchmarks): type order, labels, reference judge

    def __post_init__(self) -> None:
        if self.benchmark is None:
            from bench.benchmarks import get_benchmark

            self.benchmark = get_benchmark("longmemeval")

    def types(self) -> list[str]:
        """Question types judged in any run: the benchmark's order, then others sorted."""
        have = {t for r in self.runs for t in self.metrics[r.run_key].per_type}
        order = list(self.benchmark.question_types)
        return [t for t in order if t in have] + sorted(have - set(order))

    def short(self, qtype: str) -> str:
        return str(self.benchmark.short_labels.get(qtype, qtype))

    def run(self, key: str) -> RunInfo:
        return next(r for r in self.runs if r.run_key == key)

    def label(self, key: str) -> str:
        return next((r.label for r in self.runs if r.run_key == key), key)


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


def _kind(strategy: str, config: dict[str, Any]) -> str:
    entry = ((config or {}).get("strategies") or {}).get(strategy)
    name = entry.get("name") if isinstance(entry, dict) else None
    return str(name or strategy or "?")


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def choose_profile(wanted: str, available: list[str]) -> str:
    """The configured cache profile when it has numbers, else the first that has (named in every figure)."""
    return wanted if wanted in available or not available else available[0]


def require_profile(db: str | Path, profile: str) -> None:
    """For a profile the user named (`ombench report --profile`): raises UserError when `db` has no simulated
    cache numbers for it (a typo, or a profile the runs did not simulate), naming the ones it has."""
    from bench.errors import UserError
    from bench.store import Results

    if not Path(db).exists():
        return  # build_report names the missing file
    with Results(db) as res:
        available = res.profiles()
    if available and profile not in available:
        raise UserError(f"--profile {profile}: {db} has no simulated cache numbers for it; "
                        f"use one of {', '.join(available)}")


def load(db: str | Path, profile: str = "openai") -> ReportData:
    """Everything the report shows. Raises UserError for a missing file or one of another format version."""
    from bench.store import Results

    with Results(db) as res:
        runs_df = res.runs()
        actor_by_run = res.actor_models()
        samples = res.samples()[["run_key", "question_id", "question_type", "is_abstention", "label", "cost_usd"]]
        cache, prefill, cost, turns = res.cache(), res.prefill(), res.cost(), res.turns()
        profiles = res.profiles()
        extra = dict(latency=res.latency_by_role(), cost_by_role=res.cost_by_role(), events=res.event_counts(),
                     retrieval=res.retrieval(), judge_labels=res.judge_labels(), judge_repeats=res.judgment_repeats(),
                     memory_outputs=res.memory_outputs(), memory_summary=res.memory_summary(),
                     unpriced=res.unpriced_calls(), retried=res.retried_labels())
    runs = []
    for r in runs_df.itertuples():
        config = _json(r.config)
        runs.append(RunInfo(
            run_key=r.run_key, name=r.name or r.run_key, strategy=r.strategy or "?",
            actor_model=_str(r.actor_model) or actor_by_run.get(r.run_key),
            n_planned=None if pd.isna(r.n_questions_planned) else int(r.n_questions_planned),
            config=config, status=r.status, dataset=dataset_label(r.dataset_name, r.dataset_sha256),
            judge_model=_str(r.judge_model), kind=_kind(r.strategy or "?", config),
        ))
    labels = short_labels([r.run_id() for r in runs])
    for r in runs:
        r.label = labels[r.run_key]
    _colour(runs)
    from bench.benchmarks import benchmark_of_runs

    benchmark = benchmark_of_runs(runs_df.extra if "extra" in runs_df else [])
    metrics = {
        r.run_key: summarize(
            [{"question_id": x.question_id, "question_type": x.question_type,
              "is_abstention": bool(x.is_abstention) if not pd.isna(x.is_abstention) else False,
              "label": None if pd.isna(x.label) else bool(x.label)}
             for x in samples[samples.run_key == r.run_key].itertuples()],
            n_total=r.n_planned, types=benchmark.question_types,
        )
        for r in runs
    }
    specs = {}
    for r in runs_df.itertuples():
        got = ((_json(getattr(r, "extra", None)).get("spec") or {}).get("answer") or {}).get("retries")
        if isinstance(got, dict):
            specs[r.run_key] = got
    return ReportData(runs=runs, samples=samples, metrics=metrics, cache=cache, prefill=prefill, cost=cost,
                      turns=turns, profile=choose_profile(profile, profiles), profiles=profiles,
                      benchmark=benchmark, retry_specs=specs, **extra)


def _colour(runs: list[RunInfo]) -> None:
    """Each run gets its strategy's colour; several runs of one strategy get shades of it."""
    from bench.report.labels import shade

    by_kind: dict[str, list[RunInfo]] = {}
    for r in runs:
        by_kind.setdefault(r.kind, []).append(r)
    for kind, group in by_kind.items():
        base = strategy_color(kind)
        for i, r in enumerate(sorted(group, key=lambda x: x.label)):
            r.color = shade(base, i, len(group))
