"""The `ombench` command. `run` is a Hydra app; every other subcommand is registered in `COMMANDS` (a
`bench.registry` registry: name -> the lazy `register(subparsers)` of its module, which adds its argparse parser
and sets `func(args) -> int` on it). Adding a subcommand: its module here and one line in `COMMANDS`."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from bench.errors import UserError
from bench.registry import Registry

COMMANDS: Registry[Callable[[Any], None]] = Registry("ombench command", {
    "data": "bench.cli.data:register",
    "export": "bench.cli.export:register",
    "import": "bench.cli.importer:register",
    "merge": "bench.cli.merge:register",
    "metrics": "bench.cli.metrics:register",
    "perf": "bench.cli.perf:register",
    "report": "bench.cli.report:register",
    "view": "bench.cli.view:register",
})


def _build_parser() -> argparse.ArgumentParser:
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
    parser = _build_parser()
    names: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            names.extend(action.choices)
    return sorted(names)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":
        from bench.cli.run import run_hydra

        return run_hydra(argv[1:])
    parser = _build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except UserError as exc:  # one-line error naming the thing and the fix (exit 2: misuse; 1: the disk, a lock)
        print(f"ombench: error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
