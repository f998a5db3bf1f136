"""The `ombench` subcommands: the registry (`COMMANDS`, a `bench.registry` registry: name -> the lazy
`register(subparsers)` of its module, which adds its argparse parser and sets `func(args) -> int` on it), the
parser built from it, and the installed version. Adding a subcommand: its module in this package and one line
in `COMMANDS`. (`bench.cli.main` dispatches; the modules import this one, never the package's `__init__`.)"""

from __future__ import annotations

import argparse
from typing import Any, Callable

from bench.registry import Registry

COMMANDS: Registry[Callable[[Any], None]] = Registry("ombench command", {
    "data": "bench.cli.data:register",
    "export": "bench.cli.export:register",
    "import": "bench.cli.importer:register",
    "judge-audit": "bench.cli.judge_audit:register",
    "merge": "bench.cli.merge:register",
    "metrics": "bench.cli.metrics:register",
    "perf": "bench.cli.perf:register",
    "report": "bench.cli.report:register",
    "runs": "bench.cli.runs:register",
    "view": "bench.cli.view:register",
})


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ombench", description="Observational Memory benchmark harness")
    parser.add_argument("--version", action="version", version=f"ombench {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("run", help="run an experiment (Hydra app: `ombench run experiment=quick`, `-m` for sweeps)")
    for _, register in COMMANDS.items():
        register(sub)
    return parser


def version() -> str:
    """The installed om-bench version."""
    import importlib.metadata as md

    try:
        return md.version("om-bench")
    except md.PackageNotFoundError:  # a checkout that was never installed
        return "unknown (not installed)"


def command_names() -> list[str]:
    """The `ombench` subcommands, sorted."""
    parser = build_parser()
    names: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            names.extend(action.choices)
    return sorted(names)
