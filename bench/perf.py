"""Replay throughput: every strategy through every haystack, every prompt through every cache profile, with the
offline engine (no network), timed against tokenising each haystack once with tiktoken in the same process.

Perf sits beside the runner: it composes the same Hydra config (`experiment=perf` unless overridden), resolves
the strategies from it and replays each question with `bench.ingest.ingest_question`, the function `ombench
run` ingests with; only the models differ (every role is the offline engine, as in a dry run). The token counts
and simulated cache results are therefore the run's.

The ratio (replay wall time / tokenise-once wall time) is machine-independent enough to track: a replay must
at least tokenise everything once, so 1.0 is the floor. Peak RSS is the process high-water mark (it includes
the dataset itself).
"""

from __future__ import annotations

import asyncio
import cProfile
import dataclasses
import io
import pstats
import resource
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

from bench.render import token_count
from bench.cachesim.base import CacheSimulator
from bench.config import RootCfg
from bench.data.schema import Instance
from bench.errors import ConfigError
from bench.ingest import Ingestion, ingest_question
from bench.assemble import assemble
from bench.records import collect_calls
from bench.replay_gc import refreeze, replay_gc
from bench.roles import MEMORY_ROLES, Role
from bench.strategies import StrategySpec
from om_core import TokenCounter, default_counter
from om_core.formats import get_encoding

if TYPE_CHECKING:
    from bench.gateway import Gateway

PERF_EXPERIMENT = "experiment=perf"

# `--clock cpu`: the process's CPU seconds instead of wall seconds, for a machine whose cores other jobs share
# (wall time then measures the neighbours); both sides of a comparison must use the same clock
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}
_now: Callable[[], float] = time.perf_counter


@dataclass
class StrategyStats:
    seconds: float = 0.0
    questions: int = 0
    prompts: int = 0
    prompt_tokens: int = 0
    background_calls: int = 0
    events: dict[str, int] = field(default_factory=dict)
    cached: dict[str, int] = field(default_factory=dict)  # per profile, Actor prompts (turns + question)
    failed: list[str] = field(default_factory=list)  # "question_id: error" (a failed question never stops perf)
    question_tokens: int = 0  # the question-time Actor prompts (what the answer is computed from)
    # per profile, over every prompt of the replay (Actor turns, background calls, question): tokens computed
    # (not served from cache), tokens served from cache, all prompt tokens
    prefill_all: dict[str, int] = field(default_factory=dict)
    cached_all: dict[str, int] = field(default_factory=dict)
    tokens_all: int = 0
    per_question: list[tuple[int, float]] = field(default_factory=list)  # (haystack tokens, seconds)


@dataclass
class PerfReport:
    questions: int
    haystack_tokens: int
    baseline_s: float
    replay_s: float
    peak_rss_bytes: int
    rss_after_load_bytes: int
    strategies: dict[str, StrategyStats]
    warm_up_s: float = 0.0  # first gateway calls (imports litellm); not part of the replay time
    profile_text: str = ""
    setup: str = ""  # the config replayed with, in one line
    scaling_text: str = ""  # bench.scaling's table, when asked for
    clock: str = "wall"  # a key of CLOCKS: every seconds figure is of this clock

    @property
    def ratio(self) -> float:
        return self.replay_s / self.baseline_s if self.baseline_s else float("inf")

    def render(self) -> str:
        lines = [
            *([self.setup] if self.setup else []),
            f"questions: {self.questions}   haystack tokens (o200k): {self.haystack_tokens:,}",
            *(["clock: CPU seconds of this process (--clock cpu), not wall time"] if self.clock == "cpu" else []),
            f"tokenise every haystack once: {self.baseline_s:.2f} s",
            f"replay (all strategies x profiles, question prompt included): {self.replay_s:.2f} s"
            f"   (untimed warm-up of the gateway: {self.warm_up_s:.2f} s)",
            f"ratio: {self.ratio:.2f}   (target <= 5)",
            f"peak RSS: {self.peak_rss_bytes / 2**30:.2f} GiB (after loading the data: "
            f"{self.rss_after_load_bytes / 2**30:.2f} GiB; target <= 4)",
            "",
            f"{'strategy':<13}{'s':>8}{'x base':>8}{'prompts':>9}{'Mtok':>8}{'bg calls':>9}  cached share per profile / events",
        ]
        for name, st in self.strategies.items():
            shares = " ".join(f"{p}={st.cached[p] / st.prompt_tokens:.0%}" for p in st.cached if st.prompt_tokens)
            ev = ",".join(f"{k}:{v}" for k, v in sorted(st.events.items()))
            lines.append(
                f"{name:<13}{st.seconds:>8.2f}{st.seconds / self.baseline_s if self.baseline_s else 0:>8.2f}"
                f"{st.prompts:>9}{st.prompt_tokens / 1e6:>8.2f}{st.background_calls:>9}  {shares}  {ev}"
                + (f"  FAILED {len(st.failed)}: {st.failed[0][:160]}" if st.failed else "")
            )
        lines += ["", *economics(self.strategies)]
        lines += ["", *growth(self.strategies)]
        if self.scaling_text:
            lines += ["", self.scaling_text]
        if self.profile_text:
            lines += ["", self.profile_text]
        return "\n".join(lines)


def _share(part: float, whole: float) -> str:
    return f"{part / whole:.1%}" if whole else "n/a"


def economics(stats: dict[str, StrategyStats], reference: str = "full_context") -> list[str]:
    """What each strategy costs against sending the whole history, from the replay's own numbers: question-time
    Actor prompt tokens as a share of the reference's; uncached prefill over the whole replay (Actor turns,
    background memory calls, question) as a share of the reference's, per cache profile; and the hit share
    (cached / all prompt tokens of the replay) per profile. Token counts of the offline engine's replay."""
    ref = stats.get(reference)
    profiles = sorted({p for st in stats.values() for p in st.prefill_all})
    head = f"{'strategy':<13}{'question tok':>13}{'vs ' + reference:>18}"
    head += "".join(f"{'prefill ' + p:>18}" for p in profiles) + "".join(f"{'hit ' + p:>14}" for p in profiles)
    out = [f"economics (vs {reference}; prefill = uncached prompt tokens of the whole replay incl. memory's own "
           f"calls, as a share of {reference}'s; hit = cached share of all prompt tokens):", head]
    for name, st in stats.items():
        row = f"{name:<13}{st.question_tokens:>13,}{_share(st.question_tokens, ref.question_tokens if ref else 0):>18}"
        row += "".join(f"{_share(st.prefill_all.get(p, 0), ref.prefill_all.get(p, 0) if ref else 0):>18}"
                       for p in profiles)
        row += "".join(f"{_share(st.cached_all.get(p, 0), st.tokens_all):>14}" for p in profiles)
        out.append(row)
    return out


def growth(stats: dict[str, StrategyStats]) -> list[str]:
    """Per strategy, the exponent b of seconds ~ tokens^b fitted on the replayed questions binned by haystack
    size (bench.scaling.fit_exponent); 1.0 is linear. Needs a spread of sizes (see `ombench perf --scaling`)."""
    from bench.scaling import fit_exponent

    out = ["per-question time vs haystack size (log-log fit over size bins; 1.0 = linear):"]
    for name, st in stats.items():
        fit = fit_exponent(st.per_question)
        out.append(f"  {name:<13}" + (f"exponent {fit.exponent:.2f} over {fit.bins} bins, "
                                      f"{fit.min_tokens:,}-{fit.max_tokens:,} tokens" if fit else
                                      "n/a (haystack sizes too close together: use --scaling)"))
    return out


def tokenise_baseline(instances: Sequence[Instance], encoding: str = "o200k_base") -> tuple[float, list[int]]:
    """Seconds to tokenise every turn of every haystack once (no memo), and each haystack's tokens."""
    enc = get_encoding(encoding)
    enc.encode("warm up")
    t0 = _now()
    sizes = []
    for inst in instances:
        n = 0
        for s in inst.sessions:
            for t in s.turns:
                n += len(enc.encode(t.content, disallowed_special=()))
        sizes.append(n)
    return _now() - t0, sizes


def perf_config(overrides: Sequence[str] = ()) -> RootCfg:
    """The validated config perf replays with: the package's config tree (bench/conf) composed with
    `experiment=perf` (unless `overrides` name another experiment) and the overrides, as `ombench run` would
    compose it. Raises ConfigError."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from bench.conf import compose
    from bench.config import validate

    extra = list(overrides)
    if not any(o.lstrip("+~").startswith("experiment") for o in extra):
        extra.insert(0, PERF_EXPERIMENT)
    try:
        composed = compose(extra)
    except (HydraException, OmegaConfBaseException) as exc:
        raise ConfigError(f"config override: {str(exc).splitlines()[0]} (overrides: {' '.join(extra)})") from None
    return validate(composed)


def offline_gateway() -> Gateway:
    """A gateway with the offline engine in every role and no response cache (rule-based, no network)."""
    from bench import offline
    from bench.gateway import Gateway, GatewayConfig, RoleModel

    offline.register()
    roles = {r.value: RoleModel(r.offline_model) for r in Role}
    return Gateway(GatewayConfig(roles=roles, cache_policy="off", cache_path=None))


async def replay_one(inst: Instance, spec: StrategySpec, gateway: Gateway, counter: TokenCounter,
                     make_sims: Callable[[], dict[str, CacheSimulator]]) -> Ingestion:
    """One question through one strategy, exactly as the runner ingests it (fresh simulators per question)."""
    return await ingest_question(inst, spec, gateway, counter, make_sims())


def _accumulate(st: StrategyStats, res: Ingestion) -> None:
    st.questions += 1
    st.question_tokens += token_count(res.question_prompt)
    for rec, cache in [*((c, c.cache) for c in res.calls), (None, res.question_cache)]:
        st.tokens_all += rec.prompt_tokens if rec is not None else token_count(res.question_prompt)
        for p, c in cache.items():
            st.prefill_all[p] = st.prefill_all.get(p, 0) + int(c["prefill"])
            st.cached_all[p] = st.cached_all.get(p, 0) + int(c["cached"])
    rows = [r for r in res.turns if r["prompt_tokens"]]
    st.prompts += len(rows) + 1
    st.prompt_tokens += sum(r["prompt_tokens"] for r in rows) + token_count(res.question_prompt)
    st.background_calls += sum(1 for c in res.calls if not c.simulated)
    for r in res.turns:
        for e in r["events"]:
            st.events[e] = st.events.get(e, 0) + 1
    for cache in [*(r["cache"] for r in rows), res.question_cache]:
        for p, c in cache.items():
            st.cached[p] = st.cached.get(p, 0) + int(c["cached"])


async def warm_up(gateway: Gateway) -> float:
    """One call per memory role, untimed by the replay: the first call imports litellm (seconds, once)."""
    t0 = _now()
    with collect_calls():  # discarded
        for role in sorted(MEMORY_ROLES):
            if role is Role.EMBEDDER:
                await gateway.embed(["warm up"], role=role)
            else:
                await gateway.model(role).complete([{"role": "user", "content": "warm up"}])
    return _now() - t0


async def run_perf(
    instances: Sequence[Instance],
    cfg: RootCfg,
    profs: dict[str, cProfile.Profile] | None = None,
    sizes: Sequence[int] | None = None,
) -> tuple[dict[str, StrategyStats], float, float]:
    """Replay every question through every strategy of `cfg.run_strategies`, with the simulators of
    `cfg.cachesim`: the stats, the replay seconds, the (excluded) warm-up seconds. The job is assembled once
    (bench.assemble) with the offline engine in every role, as a dry run's. `profs` (strategy name -> profiler,
    filled in here for every strategy replayed) profiles each strategy's replays on their own."""
    job = assemble(cfg, offline_roles=True, download=False)
    specs = list(job.strategies.values())
    make_sims = job.cache.make_sims
    counter = default_counter()
    gateway = offline_gateway()
    warm_s = await warm_up(gateway)
    # the warm-up imported litellm (hundreds of thousands of long-lived objects): freeze them like the dataset
    refreeze()
    stats = {spec.name: StrategyStats() for spec in specs}
    t_start = _now()
    for i, inst in enumerate(instances):
        for spec in specs:
            st = stats[spec.name]
            prof = profs.setdefault(spec.name, cProfile.Profile()) if profs is not None else None
            t0 = _now()
            if prof:
                prof.enable()
            try:
                res = await replay_one(inst, spec, gateway, counter, make_sims)
            except Exception as exc:  # as in the runner: one question's failure is recorded, not fatal
                if prof:
                    prof.disable()
                st.seconds += _now() - t0
                st.failed.append(f"{inst.question_id}: {type(exc).__name__}: {exc}")
                continue
            if prof:
                prof.disable()
            took = _now() - t0
            st.seconds += took
            if sizes is not None:
                st.per_question.append((sizes[i], took))
            _accumulate(st, res)
    return stats, _now() - t_start, warm_s


def rss_bytes() -> int:
    import psutil

    return int(psutil.Process().memory_info().rss)


def peak_rss_bytes() -> int:
    # ru_maxrss is KiB on Linux, bytes on macOS
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


# First match wins: (component, substring of the profiled function's file or name).
COMPONENTS: tuple[tuple[str, str], ...] = (
    ("tokenizer (tiktoken encode)", "CoreBPE"),
    ("cache simulators", "bench/cachesim/"),
    ("prompt rendering to units", "bench/render.py"),
    ("strategies", "bench/strategies/"),
    ("replay driver", "bench/ingest.py"),
    ("offline engine + gateway", "bench/gateway/"),
    ("offline engine + gateway", "bench/offline/"),
    ("om_core storage", "om_core/storage/"),
    ("om_core", "om_core/"),
    ("sqlite", "sqlite3"),
    ("json", "json/"),
)


OTHER = "other (stdlib, builtins)"


def component_seconds(stats: pstats.Stats) -> dict[str, float]:
    """tottime per component (COMPONENTS); stdlib/builtin time is charged to the component that called it (up
    to 4 levels), e.g. dataclasses.fields called by om_core counts as om_core."""
    table = stats.stats  # type: ignore[attr-defined]  # typeshed omits Stats.stats, the only record of callers

    def own(fn: tuple[str, int, str]) -> str:
        where = f"{fn[0]}:{fn[2]}"
        return next((c for c, pat in COMPONENTS if pat in where), OTHER)

    def charge(fn: tuple[str, int, str], seconds: float, depth: int, totals: dict[str, float]) -> None:
        name = own(fn)
        callers = table.get(fn, (0, 0, 0.0, 0.0, {}))[4]
        if name != OTHER or depth >= 4 or not callers:
            totals[name] = totals.get(name, 0.0) + seconds
            return
        share_total = sum(v[2] for v in callers.values()) or 1.0
        for caller, v in callers.items():
            charge(caller, seconds * v[2] / share_total, depth + 1, totals)

    totals: dict[str, float] = {}
    for fn, (_cc, _nc, tt, _ct, _callers) in table.items():
        charge(fn, tt, 0, totals)
    return totals


def breakdown(stats: pstats.Stats) -> str:
    """component_seconds as lines: component, seconds, share."""
    totals = component_seconds(stats)
    total = sum(totals.values()) or 1.0
    return "\n".join(
        f"  {name:<30}{sec:>8.2f} s {sec / total:>6.1%}" for name, sec in sorted(totals.items(), key=lambda kv: -kv[1])
    )


# Short column names of the per-strategy table (the components of COMPONENTS, other last).
_SHORT = {
    "tokenizer (tiktoken encode)": "tokenizer", "cache simulators": "simulators",
    "prompt rendering to units": "rendering", "strategies": "strategy", "replay driver": "driver",
    "offline engine + gateway": "engine+gw", "om_core storage": "om storage", "om_core": "om_core",
    "sqlite": "sqlite", "json": "json", OTHER: "other",
}


def strategy_breakdown(per_strategy: dict[str, pstats.Stats]) -> str:
    """Where each strategy's replay time goes: one row per strategy (profiled on its own), the share of its
    profiled time per component (component_seconds), and its profiled seconds."""
    shares = {name: component_seconds(st) for name, st in per_strategy.items()}
    cols = [c for c in _SHORT if any(t.get(c) for t in shares.values())]
    head = f"{'strategy':<13}{'profiled s':>11}" + "".join(f"{_SHORT[c]:>11}" for c in cols)
    out = ["where each strategy's time goes (cProfile tottime by component, share of the strategy's profiled time):",
           head]
    for name, totals in shares.items():
        total = sum(totals.values())
        out.append(f"{name:<13}{total:>11.2f}" + "".join(
            f"{totals.get(c, 0.0) / total if total else 0.0:>11.0%}" for c in cols))
    return "\n".join(out)


def tokenizer_callers(stats: pstats.Stats, top: int = 8) -> str:
    """tiktoken encode time by the project function that asked for it (through om_core.tokens' memo
    wrappers), split along the profiled call edges in proportion to their cumulative time."""
    table = stats.stats  # type: ignore[attr-defined]  # typeshed omits Stats.stats, the only record of callers
    totals: dict[str, float] = {}

    def through(fn: tuple[str, int, str]) -> bool:  # frames that only pass tokenisation on
        return "tiktoken" in fn[0] or "om_core/tokens.py" in fn[0] or fn[0] == "~"

    def charge(fn: tuple[str, int, str], seconds: float, depth: int) -> None:
        callers = table.get(fn, (0, 0, 0.0, 0.0, {}))[4]
        if not through(fn) or depth >= 8 or not callers:
            name = f"{fn[0].split('/work/main/')[-1]}:{fn[2]}" if fn[0] != "~" else fn[2]
            totals[name] = totals.get(name, 0.0) + seconds
            return
        share = sum(v[3] for v in callers.values()) or 1.0
        for caller, v in callers.items():
            charge(caller, seconds * v[3] / share, depth + 1)

    for fn, (_cc, _nc, tt, _ct, _callers) in table.items():
        if "CoreBPE" in fn[2]:
            charge(fn, tt, 0)
    total = sum(totals.values()) or 1.0
    return "\n".join(
        f"  {name:<60}{sec:>8.2f} s {sec / total:>6.1%}"
        for name, sec in sorted(totals.items(), key=lambda kv: -kv[1])[:top]
    )


def measure(
    instances: Sequence[Instance],
    strategies: Sequence[str] | None = None,
    profiles: Sequence[str] | None = None,
    *,
    cfg: RootCfg | None = None,
    overrides: Sequence[str] = (),
    cpu_profile: int = 0,
    scaling: Sequence[float] = (),
    clock: str = "wall",
) -> PerfReport:
    """Baseline, then the replay (optionally under cProfile, printing the top `cpu_profile` entries).

    The config is `cfg`, or `perf_config(overrides)`; `strategies` (configured names) and `profiles` replace
    its run_strategies and cachesim.profiles when given. With `scaling` factors every question is replayed at
    each factor of its haystack size instead (bench.scaling) and the report adds the scaling table. `clock`
    ("wall" or "cpu", CLOCKS) times every figure; raises ConfigError for another."""
    global _now
    if clock not in CLOCKS:
        raise ConfigError(f"clock {clock!r}: choose one of {', '.join(CLOCKS)}")
    from bench.scaling import render_scaling, scaled_instances

    factors = list(scaling)
    if factors:
        instances = scaled_instances(instances, factors)
    cfg = cfg or perf_config(overrides)
    if strategies is not None:
        cfg = dataclasses.replace(cfg, run_strategies=list(strategies))
    if profiles is not None:
        cfg = dataclasses.replace(cfg, cachesim=dataclasses.replace(cfg.cachesim, profiles=list(profiles)))
    rss_loaded = rss_bytes()
    # the loaded dataset is millions of long-lived objects: frozen, as the runner does (bench.replay_gc)
    _now = CLOCKS[clock]
    try:
        with replay_gc():
            baseline, sizes = tokenise_baseline(instances)
            profs: dict[str, cProfile.Profile] | None = {} if cpu_profile else None
            stats, replay_s, warm_s = asyncio.run(run_perf(instances, cfg, profs, sizes))
    finally:
        _now = time.perf_counter
    text = ""
    if profs:
        buf = io.StringIO()
        per = {name: pstats.Stats(p) for name, p in profs.items()}
        ps = pstats.Stats(*profs.values(), stream=buf).sort_stats("tottime")
        ps.print_stats(cpu_profile)
        text = (
            "where the time goes (cProfile tottime by component, all strategies; the profiler slows the replay):\n"
            + breakdown(ps)
            + "\n\n" + strategy_breakdown(per)
            + "\n\ntokenizer time by the function that asked for it:\n"
            + tokenizer_callers(ps)
            + "\n\ntop functions:\n"
            + buf.getvalue().split("\n", 6)[-1]
        )
    scaling_text = render_scaling(factors, instances, sizes, {k: st.per_question for k, st in stats.items()}) \
        if factors else ""
    return PerfReport(
        scaling_text=scaling_text,
        clock=clock,
        questions=len(instances),
        haystack_tokens=sum(sizes),
        baseline_s=baseline,
        replay_s=replay_s,
        peak_rss_bytes=peak_rss_bytes(),
        rss_after_load_bytes=rss_loaded,
        strategies=stats,
        warm_up_s=warm_s,
        profile_text=text,
        setup=f"config: experiment={cfg.experiment_name}, actor {cfg.model.actor.model} "
              f"({cfg.model.actor_max_input_tokens:,}-token window) for prices and windows, every model role "
              f"offline; profiles {','.join(cfg.cachesim.profiles)}",
    )
