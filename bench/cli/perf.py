"""`ombench perf`: replay throughput of all strategies x cache profiles with the offline engine, as a ratio to
tokenising every haystack once, plus peak RSS. It replays with the run's own config (`experiment=perf` by
default; trailing KEY=VALUE overrides as for `ombench run`) through the run's own ingestion function."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from bench.errors import ConfigError

if TYPE_CHECKING:
    from bench.config import RootCfg


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("perf", help="time the replay of every strategy and cache profile (offline engine)")
    p.add_argument("--data", default="longmemeval_s", metavar="PATH_OR_NAME",
                   help="dataset name or file (default longmemeval_s, found through --data-dir / $LONGMEMEVAL_DATA_DIR)")
    p.add_argument("--data-dir", default=None, help="folder holding the LongMemEval files")
    p.add_argument("--limit", type=int, default=10, help="first N questions (0 = all; default 10)")
    p.add_argument("--strategies", default=None,
                   help="comma-separated configured strategies (default: the config's run_strategies, i.e. all)")
    p.add_argument("--profiles", default=None,
                   help="comma-separated cache profiles (default: the config's cachesim.profiles)")
    p.add_argument("--scaling", default=None, metavar="FACTORS",
                   help="replay every question at these multiples of its haystack size (e.g. 0.25,0.5,1,2,4: a prefix "
                        "of its sessions below 1, sessions of the next questions added above) and fit how time grows")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="time with wall seconds (default) or this process's CPU seconds (on cores other jobs share)")
    p.add_argument("--cprofile", type=int, default=0, metavar="N", help="run under cProfile and print the top N entries")
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                   help="Hydra overrides of the config replayed with (default experiment=perf), as for `ombench run`")
    p.set_defaults(func=_run)


def _split(text: str, knob: str, allowed: tuple[str, ...] | None = None) -> list[str]:
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise ConfigError(f"--{knob}: give at least one name")
    bad = [x for x in items if allowed is not None and x not in allowed]
    if bad:
        raise ConfigError(f"--{knob}: unknown {', '.join(bad)}; choose from {', '.join(allowed or ())}")
    return items


def _run(args: argparse.Namespace) -> int:
    from bench.cachesim import PROFILES
    from bench.benchmarks.longmemeval.loader import load_dataset
    from bench.perf import measure, perf_config

    if args.limit < 0:
        raise ConfigError("--limit must be >= 0 (0 = every question)")
    cfg = perf_config(args.overrides)
    strategies = None if args.strategies is None else _split(args.strategies, "strategies", _known(cfg))
    profiles = None if args.profiles is None else _split(args.profiles, "profiles", tuple(PROFILES))
    factors = [] if args.scaling is None else _factors(args.scaling)
    ds = load_dataset(args.data, args.data_dir)
    instances = ds.instances[: args.limit] if args.limit else ds.instances
    report = measure(instances, strategies, profiles, cfg=cfg, cpu_profile=args.cprofile, scaling=factors,
                     clock=args.clock)
    print(f"dataset: {ds.name} ({len(instances)} of {len(ds)} questions"
          + (f", each at {len(factors)} sizes" if factors else "") + "); offline engine, not an LLM")
    print(report.render())
    return 0


def _factors(text: str) -> list[float]:
    try:
        factors = [float(x) for x in _split(text, "scaling")]
    except ValueError:
        raise ConfigError(f"--scaling: {text!r} is not a comma-separated list of numbers (e.g. 0.25,0.5,1,2,4)") from None
    if any(f <= 0 or f > 64 for f in factors):
        raise ConfigError(f"--scaling: factors must be in (0, 64], got {text}")
    return factors


def _known(cfg: RootCfg) -> tuple[str, ...]:
    """Strategy names perf can replay: those configured, and every registered one (with its defaults)."""
    from bench.strategies import STRATEGY_NAMES

    configured = tuple(cfg.strategies)
    return configured + tuple(n for n in STRATEGY_NAMES if n not in configured)
