"""Everything the report needs, read from the DuckDB file alone (read-only, through `bench.store.Results`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from bench.evaluate.metrics import Metrics, summarize
from bench.report.labels import RunId, strategy_color


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
    label: str = ""  # the run's stable name (bench.store.run_names), the label of every table, legend and page
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
    attribution: pd.DataFrame = field(default_factory=pd.DataFrame)  # per judged question: where the answer went
    retried: pd.DataFrame = field(default_factory=pd.DataFrame)  # per question: label, label_retried, n_tries
    retry_specs: dict[str, dict[str, Any]] = field(default_factory=dict)  # run_key -> answer.retries (runs that retried)
    judge_audits: dict[str, Any] = field(default_factory=dict)  # run_key -> its judge's StoredAudit (judge-audit)
    panels: dict[str, dict[str, Any]] = field(default_factory=dict)  # run_key -> judge_panel {models, rule}
    # per (run, question, gold evidence session): where it went (bench.report.session_trace.trace_runs)
    session_traces: pd.DataFrame = field(default_factory=pd.DataFrame)
    gold_notes: list[str] = field(default_factory=list)  # datasets whose gold sessions could not be read, and why
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

    def by_dataset(self, runs: list[RunInfo] | None = None) -> dict[str | None, list[RunInfo]]:
        """`runs` (default all) grouped by the dataset they were measured on (its label; None: unknown, an
        import), in the runs' order: what one figure panel, frontier or ceiling may compare."""
        out: dict[str | None, list[RunInfo]] = {}
        for r in self.runs if runs is None else runs:
            out.setdefault(r.dataset, []).append(r)
        return out


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
    with Results(db, snapshot=True) as res:
        available = res.profiles()
    if available and profile not in available:
        raise UserError(f"--profile {profile}: {db} has no simulated cache numbers for it; "
                        f"use one of {', '.join(available)}")


def load(db: str | Path, profile: str = "openai", datasets: list[str] | None = None) -> ReportData:
    """Everything the report shows, runs ordered by dataset (then oldest first) and labelled by their stable
    names. `datasets`: keep only runs whose dataset label, name or split is one of these. Raises UserError for a
    missing file, one of another format version, or a `datasets` entry no run has (naming those there are)."""
    from bench.store import Results
    from bench.store.run_names import name_of

    with Results(db, snapshot=True) as res:
        runs_df = res.runs()
        actor_by_run = res.actor_models()
        all_samples = res.samples()
        samples = all_samples[["run_key", "question_id", "question_type", "is_abstention", "label", "cost_usd"]]
        memory_rows, answer_prompts = res.memory_rows(), res.answer_prompts()
        cache, prefill, cost, turns = res.cache(), res.prefill(), res.cost(), res.turns()
        profiles = res.profiles()
        extra = dict(latency=res.latency_by_role(), cost_by_role=res.cost_by_role(), events=res.event_counts(),
                     retrieval=res.retrieval(), judge_labels=res.judge_labels(), judge_repeats=res.judgment_repeats(),
                     memory_outputs=res.memory_outputs(), memory_summary=res.memory_summary(),
                     unpriced=res.unpriced_calls(), retried=res.retried_labels())
        from bench.evaluate.judge_audit import audits_by_run

        extra["judge_audits"] = audits_by_run(runs_df, res.judge_audits())
    runs = []
    for row in runs_df.to_dict("records"):
        key, strategy, config = str(row["run_key"]), row.get("strategy") or "?", _json(row.get("config"))
        planned = row.get("n_questions_planned")
        runs.append(RunInfo(
            run_key=key, name=row.get("name") or key, strategy=strategy,
            actor_model=_str(row.get("actor_model")) or actor_by_run.get(key),
            n_planned=None if planned is None or pd.isna(planned) else int(planned),
            config=config, status=row.get("status"),
            dataset=dataset_label(row.get("dataset_name"), row.get("dataset_sha256")),
            judge_model=_str(row.get("judge_model")), kind=_kind(strategy, config), label=name_of(row),
        ))
    if datasets:
        runs = _pick(runs, runs_df, datasets, db)
        runs_df = runs_df[runs_df.run_key.isin([r.run_key for r in runs])]
    # grouped by dataset (stable: oldest first within one), unknown datasets (imports) last
    runs.sort(key=lambda r: (r.dataset is None, r.dataset or ""))
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
    from bench.report.attribution import attribution_table

    kept = all_samples[all_samples.run_key.isin([r.run_key for r in runs])]
    attribution = attribution_table(kept, memory_rows, answer_prompts, getattr(benchmark, "single_answer", None))
    extra["session_traces"], extra["gold_notes"] = _session_traces(db, [r.run_key for r in runs], benchmark, kept,
                                                                    memory_rows, answer_prompts)
    specs = {}
    for r in runs_df.itertuples():
        got = ((_json(getattr(r, "extra", None)).get("spec") or {}).get("answer") or {}).get("retries")
        if isinstance(got, dict):
            specs[r.run_key] = got
        panel = _json(getattr(r, "extra", None)).get("judge_panel")
        if isinstance(panel, dict) and panel.get("models"):
            extra.setdefault("panels", {})[r.run_key] = panel
    return ReportData(runs=runs, samples=samples, metrics=metrics, cache=cache, prefill=prefill, cost=cost,
                      turns=turns, profile=choose_profile(profile, profiles), profiles=profiles,
                      benchmark=benchmark, attribution=attribution, retry_specs=specs, **extra)


def _session_traces(db: str | Path, keys: list[str], benchmark: Any, samples: pd.DataFrame, memory: pd.DataFrame,
                    prompts: dict[tuple[str, str], str]) -> tuple[pd.DataFrame, list[str]]:
    """Where each gold evidence session of the runs' questions went, traced as the viewer's question page traces
    it (bench.view.gold reads the sessions again from each run's dataset; bench.report.session_trace matches
    them), and notes on the datasets that could not be read. Empty for a benchmark without gold sessions."""
    from bench.report.session_trace import trace_runs
    from bench.store import Results
    from bench.view.gold import gold_by_run

    if getattr(benchmark, "gold_sessions", None) is None or not keys:
        return pd.DataFrame(), []
    with Results(db, snapshot=True) as res:
        gold, notes = gold_by_run(res, keys, benchmark)
    return trace_runs(gold, samples, memory, prompts), notes


def _pick(runs: list[RunInfo], runs_df: pd.DataFrame, wanted: list[str], db: str | Path) -> list[RunInfo]:
    """The runs measured on one of `wanted` (a dataset label as tables show it, a dataset name or a split)."""
    from bench.errors import UserError

    keys: dict[str, set[str]] = {}
    for row, r in zip(runs_df.to_dict("records"), runs):
        for v in (r.dataset, row.get("dataset_name"), row.get("dataset_split")):
            if isinstance(v, str) and v:
                keys.setdefault(v, set()).add(r.run_key)
    missing = [w for w in wanted if w not in keys]
    if missing:
        raise UserError(f"--dataset {', '.join(missing)}: no run in {db} was measured on it; use one of "
                        f"{', '.join(sorted({r.dataset for r in runs if r.dataset}))}")
    chosen = set().union(*(keys[w] for w in wanted))
    return [r for r in runs if r.run_key in chosen]


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
