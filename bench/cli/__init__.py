"""The `ombench` command. `run` is a Hydra app; every other subcommand is a module in this package that
defines `register(subparsers)` (argparse) and sets `func(args) -> int` on its parser."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from bench.errors import UserError


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ombench", description="Observational Memory benchmark harness")
    parser.add_argument("--version", action="version", version=f"ombench {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("run", help="run an experiment (Hydra app: `ombench run experiment=quick`, `-m` for sweeps)")
    for mod in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if mod.name.startswith("_") or mod.name == "run":
            continue
        module = importlib.import_module(f"{__name__}.{mod.name}")
        register = getattr(module, "register", None)
        if register is not None:
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
