"""Assembling a job: the validated config turned into the objects a run uses, once.

`assemble(cfg)` validates the config and builds a `Job`: the benchmark, the replay settings, every strategy the
job runs resolved from its declarations (OM's engine config among them), the judge's templates and parse rule,
the cache simulators and their prices, the gateway's config (a model per role). The runner, the preflight, the
run and ingestion keys, the manifest, the dry run and `ombench perf` read the job; none of them reads the config
to build these again. Raises ConfigError (one line naming the key) for anything that cannot be built.

Model: inspect_ai `_eval/task/run.py` (`task_run` receives resolved objects); lm-evaluation-harness
`evaluator.simple_evaluate` (models and tasks built once, then `evaluate`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from bench.cachesim.base import CacheSimulator
from bench.config import RootCfg, StrategyCfg, answer_reserve
from bench.errors import ConfigError
from bench.roles import Role
from bench.strategies import ReplaySettings, StrategySpec, resolve_strategy

if TYPE_CHECKING:
    from bench.benchmarks.base import Benchmark
    from bench.cachesim.pricing import CachePricing
    from bench.data.dataset import Dataset
    from bench.evaluate.templates import TemplateSet
    from bench.gateway import Gateway, GatewayConfig

SECOND_JUDGE = "second_judge"  # the gateway role of judge.second_model
PANEL_JUDGE = "panel_judge_"  # + 1, 2, ...: the gateway roles of judge.panel's models


def panel_roles(panel: tuple[str, ...] | list[str]) -> list[str]:
    """The gateway role of each judge.panel model, in order."""
    return [f"{PANEL_JUDGE}{i}" for i in range(1, len(panel) + 1)]


def replay_settings(cfg: RootCfg, role_models: Mapping[str, str] | None = None) -> ReplaySettings:
    """The job-level replay settings of a validated config; `role_models`: the model the gateway calls for each
    role (default: the configured ones)."""
    models = dict(role_models) if role_models is not None else {r.value: cfg.model.role(r).model for r in Role}
    return ReplaySettings(
        actor_model=cfg.model.actor.model,
        max_input_tokens=cfg.model.actor_max_input_tokens,
        output_budget=answer_reserve(cfg.answer),
        system_prompt=actor_system_prompt(cfg),
        reader_prompt=cfg.answer.prompt,
        official_repo=cfg.judge.official_repo,
        method=cfg.answer.method,
        history_format=cfg.answer.history_format,
        await_background=cfg.replay.await_background,
        turn_offset_s=cfg.replay.turn_offset_s,
        think_time_s=cfg.replay.think_time_s,
        benchmark=cfg.dataset.benchmark,
        role_models=tuple(sorted((r, m) for r, m in models.items() if r not in (Role.ACTOR, Role.JUDGE))),
    )


def actor_system_prompt(cfg: RootCfg) -> str:
    """The Actor's system prompt for `answer.prompt`: `answer.system_prompt` (packaged); none (official: the
    official reader prompt is the only message, run_generation.py sends no system message); the benchmark's
    Mastra-runner text (mastra: `mastra_actor(answer.mastra_runner_file)`, read at run time). Raises ConfigError."""
    if cfg.answer.prompt == "official":
        return ""
    if cfg.answer.prompt != "mastra":
        return cfg.answer.system_prompt
    from bench.benchmarks import get_benchmark

    bench = get_benchmark(cfg.dataset.benchmark)
    make = getattr(bench, "mastra_actor", None)
    if make is None:
        raise ConfigError(f"answer.prompt=mastra: benchmark {bench.name!r} has no Mastra runner text; use "
                          "answer.prompt=packaged")
    return str(make(cfg.answer.mastra_runner_file).system_text)


def configured_strategy(cfg: RootCfg, key: str, settings: ReplaySettings | None = None) -> StrategySpec:
    """The strategy configured under `strategies.<key>` (its `name:` or else `key` names the registered class),
    resolved with the job's settings. Raises ConfigError for an unknown strategy or a bad param."""
    s = cfg.strategies.get(key) or StrategyCfg()
    return resolve_strategy(s.name or key, s.params, settings or replay_settings(cfg), name=key)


def cache_simulators(profiles: Sequence[str], params: Mapping[str, Any] | None) -> Callable[[], dict[str, CacheSimulator]]:
    """A factory of fresh simulators (one per profile; a question starts with empty caches). They measure tokens;
    what those cost depends on the model answering and is priced when a run writes its rows
    (`cache_pricing`). Checks the settings once: a bad profile or knob is a one-line ConfigError."""
    from bench.cachesim import make_simulator

    per = {p: dict((params or {}).get(p) or {}) for p in profiles}

    def factory() -> dict[str, CacheSimulator]:
        return {p: make_simulator(p, **per[p]) for p in profiles}

    try:
        factory()
    except (TypeError, ValueError, KeyError) as exc:
        raise ConfigError(f"cachesim: {exc} (check cachesim.profiles / cachesim.params)") from None
    return factory


def cache_pricing(profiles: Sequence[str], params: Mapping[str, Any] | None) -> CachePricing:
    """Prices for the simulated cache results of these profiles (bench.cachesim.CachePricing). A bad profile or
    knob is a one-line ConfigError."""
    from bench.cachesim.pricing import CachePricing

    try:
        return CachePricing(profiles, params)
    except (TypeError, ValueError, KeyError) as exc:
        raise ConfigError(f"cachesim: {exc} (check cachesim.profiles / cachesim.params)") from None


def cache_token_settings(profiles: Sequence[str], params: Mapping[str, Any] | None, model: str) -> dict[str, Any]:
    """Per profile, the settings resolved for `model` that change which tokens hit (bench.cachesim.token_settings).
    A bad profile or knob is a one-line ConfigError."""
    from bench.cachesim.pricing import token_settings

    try:
        return token_settings(profiles, params, model)
    except (TypeError, ValueError, KeyError) as exc:
        raise ConfigError(f"cachesim: {exc} (check cachesim.profiles / cachesim.params)") from None


@dataclass(frozen=True)
class CacheSetup:
    """The cache simulators of a job: their profiles and knobs, a factory of fresh ones, their prices."""

    profiles: tuple[str, ...]
    params: Mapping[str, Any]
    make_sims: Callable[[], dict[str, CacheSimulator]]
    pricing: CachePricing

    def token_settings(self, model: str) -> dict[str, Any]:
        """Per profile, the settings resolved for `model` that change which tokens hit (ingestion key)."""
        return cache_token_settings(self.profiles, self.params, model)


@dataclass
class JudgeSetup:
    """How answers are judged: the benchmark's templates of `source` (resolved on first use, once: the official
    file may need a download), the parse rule, repeats, an optional second judge."""

    benchmark: Benchmark
    model: str
    source: str
    official_repo: str | None
    parse: str
    ask_reason: bool
    repeats: int
    second_model: str | None
    panel: tuple[str, ...] = ()  # judge.panel: judges beside `model` (the headline is the strict majority of all)
    download: bool = True  # a dry run never downloads: it falls back to the builtin wording
    _templates: TemplateSet | None = field(default=None, repr=False)

    @property
    def templates(self) -> TemplateSet:
        """The template set (raises ConfigError, one line, when `official` cannot be had)."""
        if self._templates is None:
            self._templates = self.benchmark.judge_templates(self.source, self.official_repo,
                                                             ask_reason=self.ask_reason, download=self.download)
        return self._templates


@dataclass
class Job:
    """A validated config and everything built from it, once (see the module docstring)."""

    cfg: RootCfg
    benchmark: Benchmark
    settings: ReplaySettings
    strategies: dict[str, StrategySpec]  # every strategy the job runs, by configured key, in run order
    cache: CacheSetup
    judge: JudgeSetup
    offline_roles: bool = False  # every role is the offline engine (a dry run, perf)

    def spec(self, key: str) -> StrategySpec:
        try:
            return self.strategies[key]
        except KeyError:
            raise ConfigError(f"strategy {key!r} is not one this job runs ({', '.join(self.strategies)}); "
                              "add it to run_strategies") from None

    def role_model(self, role: Role | str) -> str:
        """The model the gateway calls for `role` (the offline engine's in a dry run)."""
        return self.gateway_config.role_model(str(role)).model

    def role_params(self, role: Role) -> dict[str, Any]:
        return dict(self.gateway_config.role_model(role.value).params)

    @cached_property
    def gateway_config(self) -> GatewayConfig:
        """The gateway's config: a model per role (`model.<role>`, judge.second_model as `second_judge`), the
        response cache, limits, self-hosted servers. Raises ConfigError for a bad setting."""
        from bench.gateway import GatewayConfig, RoleModel

        cfg, off = self.cfg, self.offline_roles
        roles = {}
        for r in Role:
            rm = cfg.model.role(r)
            model = rm.model
            if off and not model.startswith("offline/"):
                model = r.offline_model
            roles[r.value] = RoleModel(model=model, params=dict(rm.params) if not off else {})
        if cfg.judge.second_model:  # judge.second_model: its own role, so its calls are told apart
            second = cfg.judge.second_model
            roles[SECOND_JUDGE] = RoleModel(
                model=Role.JUDGE.offline_model if off and not second.startswith("offline/") else second,
                params=dict(cfg.model.judge.params) if not off else {})
        for role, member in zip(panel_roles(self.judge.panel), self.judge.panel):
            roles[role] = RoleModel(
                model=Role.JUDGE.offline_model if off and not member.startswith("offline/") else member,
                params=dict(cfg.model.judge.params) if not off else {})
        g = cfg.gateway
        return GatewayConfig(
            roles=roles, cache_path=cfg.output.response_cache, cache_policy=cfg.output.response_cache_policy,  # type: ignore[arg-type]
            max_attempts=g.max_attempts, rpm=dict(g.rpm), tpm=dict(g.tpm), max_concurrency=g.max_concurrency,
            timeout_s=g.timeout_s, api_base=dict(g.api_base), api_key_env=dict(g.api_key_env),
            local_defaults=g.local_defaults, local_max_concurrency=g.local_max_concurrency,
            local_timeout_s=g.local_timeout_s, local_retry_timeouts=g.local_retry_timeouts,
            context_window=dict(g.context_window), direct_providers=g.direct_providers,
        )

    def make_gateway(self) -> Gateway:
        """A gateway for this job (the offline engine registered as a provider first)."""
        from pathlib import Path

        from bench import offline
        from bench.gateway import Gateway

        offline.register()  # the offline engine is one of the application's providers
        config = self.gateway_config
        if config.cache_policy != "off" and config.cache_path:
            Path(config.cache_path).parent.mkdir(parents=True, exist_ok=True)
        return Gateway(config)

    def load_data(self) -> Dataset:
        """The configured split of the benchmark, subset as configured (`load_data`)."""
        return load_data(self)

    def offline(self, **changes: Any) -> Job:
        """This job with the offline engine in every role (a dry run, perf): the strategies are resolved again
        for the models now called. `changes`: config sections to replace (`output=..., run=..., judge=...`)."""
        return assemble(replace(self.cfg, **changes), offline_roles=True, download=False)


def assemble(cfg: Any, *, offline_roles: bool = False, download: bool = True) -> Job:
    """Validate `cfg` (a composed config, or a `RootCfg` already validated) and build the job from it, once.
    `offline_roles`: every role is the offline engine. `download`: the judge's official file may be fetched on
    first use (a dry run says no and judges with the builtin wording). Raises ConfigError (one line)."""
    from bench.benchmarks import get_benchmark
    from bench.config import validate
    from bench.evaluate.judge import PARSE_RULES

    root = cfg if isinstance(cfg, RootCfg) else validate(cfg)
    benchmark = get_benchmark(root.dataset.benchmark)
    job = Job(root, benchmark, ReplaySettings(), {}, _cache_setup(root),
              JudgeSetup(benchmark, root.model.judge.model, root.judge.source, root.judge.official_repo,
                         root.judge.parse, root.judge.ask_reason, root.judge.repeats, root.judge.second_model,
                         panel_members(root.model.judge.model, root.judge.panel), download=download),
              offline_roles=offline_roles)
    PARSE_RULES.get(root.judge.parse)  # a parse rule registered after the schema's check may be gone
    job.settings = replay_settings(root, {r.value: job.role_model(r) for r in Role})
    job.strategies = {key: configured_strategy(root, key, job.settings) for key in root.run_strategies}
    if offline_roles and root.judge.source == "official":
        job.judge = _offline_judge(job.judge)
    return job


def panel_members(judge: str, panel: Any) -> tuple[str, ...]:
    """judge.panel's models less model.judge.model and repeats, in order. Raises ConfigError for a panel that
    would leave a single judge or a non-string entry."""
    got: list[str] = []
    for m in panel or ():
        if not isinstance(m, str) or not m.strip():
            raise ConfigError(f"judge.panel: {m!r} is not a model name; give litellm model names, e.g. "
                              "judge.panel=[openai/gpt-4o-2024-08-06,anthropic/claude-sonnet-4-5]")
        if m != judge and m not in got:
            got.append(m)
    if panel and not got:
        raise ConfigError(f"judge.panel={list(panel)} adds no judge beside model.judge.model={judge}; list other "
                          "models, or judge.panel=[] for a single judge")
    return tuple(got)


def _cache_setup(root: RootCfg) -> CacheSetup:
    profiles, params = tuple(root.cachesim.profiles), dict(root.cachesim.params)
    return CacheSetup(profiles, params, cache_simulators(profiles, params), cache_pricing(profiles, params))


def _offline_judge(judge: JudgeSetup) -> JudgeSetup:
    """The judge settings of a dry run: the configured ones, or the builtin wording (one note) when the official
    file cannot be had without the network; the offline judge's labels mean nothing either way, and the prompt
    sizes differ by a few tokens."""
    import sys

    try:
        _ = judge.templates
        return judge
    except ConfigError as exc:
        print(f"ombench: note: the dry run judges with the builtin templates ({str(exc).split(';')[0]})",
              file=sys.stderr)
        return replace(judge, source="builtin", official_repo=None, _templates=None)


# ---- the job's data ---------------------------------------------------------------------------------------

def data_source(d: Any) -> str:
    """What the benchmark loads for `dataset.*`: the split, unless `dataset.name` holds a file path or a
    parameterised spec (`synthetic:3`), the older spelling, which is then loaded as given."""
    if d.split is None or any(c in str(d.name) for c in "/:\\") or str(d.name).endswith((".json", ".jsonl", ".xz", ".gz")):
        return str(d.name)
    return str(d.split)


def _load_with_status(job: Job, source: str, data_dir: str | None) -> Dataset:
    """The benchmark's load, with a spinner on a terminal's stderr: reading and hashing M (2.6 GB) takes minutes
    and would otherwise show nothing (as `ombench data check` does)."""
    from rich.console import Console

    err = Console(stderr=True)
    if not err.is_terminal:
        return job.benchmark.load(source, data_dir)
    with err.status(f"loading and validating {source} ..."):
        return job.benchmark.load(source, data_dir)


def load_data(job: Job | RootCfg) -> Dataset:
    """The configured split of the job's benchmark and its subset; prints one warning when the subset loses
    question types and one note when the file's dates are not in the official format."""
    job = job if isinstance(job, Job) else assemble(job)
    d = job.cfg.dataset
    ds = _load_with_status(job, data_source(d), d.data_dir)
    ds.benchmark = d.benchmark  # as configured (a registered name or a module:attr path): it resolves again
    for note in ds.format_notes:
        print(f"ombench: note: {note}", file=sys.stderr)
    if d.limit or d.per_type or d.ids or d.sample or d.stratified:
        full = ds
        ds = ds.subset(first_n=d.limit or None, per_type=d.per_type, ids=d.ids, sample=d.sample, seed=d.seed,
                       stratified=d.stratified, names=SUBSET_KEYS)
        warning = ds.coverage_warning(full, knobs=_subset_knobs(d))
        if warning:
            print(f"ombench: warning: {warning}", file=sys.stderr)
    if d.shard:
        from bench.config import parse_shard

        i, n = parse_shard(d.shard)
        by_question = job.benchmark.isolation_unit == "question"
        ds = ds.part(i, n, unit_of=None if by_question else job.benchmark.unit_of)
        print(f"ombench: note: dataset.shard={d.shard}: this job computes {len(ds)} of the run's {ds.planned} "
              "questions", file=sys.stderr)
    return ds


# Dataset.subset's arguments as `ombench run` names them (its errors and the subset's note say these)
SUBSET_KEYS = {"first_n": "dataset.limit", "per_type": "dataset.per_type", "ids": "dataset.ids",
               "sample": "dataset.sample", "seed": "dataset.seed", "stratified": "dataset.stratified"}


def _subset_knobs(d: Any) -> str:
    names = ("limit", "stratified", "per_type", "ids", "sample")
    return " ".join(f"dataset.{n}={getattr(d, n) if n != 'ids' else len(d.ids)}" for n in names if getattr(d, n))
