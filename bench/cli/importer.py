"""`ombench import`: load an external system's .eval-results file into DuckDB as its own run."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("import", help="import an external system's .eval-results file as run external:NAME")
    p.add_argument("eval_results", help="official-format eval-results JSONL")
    p.add_argument("--ref", required=True, help="LongMemEval data file (JSON / JSON.xz) or dataset name")
    p.add_argument("--db", required=True, help="DuckDB results file")
    p.add_argument("--name", required=True, help="short name of the system, e.g. zep-gpt4o")
    p.add_argument("--replace", action="store_true", help="overwrite questions already imported under NAME")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from bench.errors import UserError
    from bench.store import Store
    from bench.store.db import not_a_results_file
    from bench.store.external import import_eval_results, read_eval_results

    read = read_eval_results(args.eval_results, args.ref, args.name)  # a bad file: nothing made yet
    why = not_a_results_file(args.db)
    if why:
        raise UserError(why)
    with Store(args.db) as store:
        run_key, n = import_eval_results(store, args.eval_results, args.ref, args.name, replace=args.replace, read=read)
    print(f"imported {n} judged questions as run {run_key} into {args.db}")
    return 0
