"""The `ombench` command. `run` is a Hydra app; every other subcommand is registered in `COMMANDS` (a
`bench.registry` registry in `bench.cli.commands`: name -> the lazy `register(subparsers)` of its module, which
adds its argparse parser and sets `func(args) -> int` on it). Adding a subcommand: its module here and one line
in `COMMANDS`."""

from __future__ import annotations

import sys

from bench.cli.commands import COMMANDS, build_parser, command_names, version
from bench.errors import UserError

def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":
        from bench.cli.run import run_hydra

        return run_hydra(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except UserError as exc:  # one-line error naming the thing and the fix (exit 2: misuse; 1: the disk, a lock)
        print(f"ombench: error: {exc}", file=sys.stderr)
        return exc.exit_code


__all__ = ["COMMANDS", "command_names", "main", "version"]


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
