"""`ombench metrics`: the official per-type / task-averaged / overall / abstention printout, any judge."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("metrics", help="print official LongMemEval metrics of an .eval-results file")
    p.add_argument("eval_results", help="JSONL with question_id and autoeval_label {model, label}")
    p.add_argument("ref", help="LongMemEval data file (JSON / JSON.xz) or dataset name")
    p.add_argument("--intervals", action="store_true", help="also print Wilson 95%% intervals")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from bench.evaluate.metrics import format_metrics
    from bench.benchmarks.longmemeval.export import format_official, is_official_judge, metrics_from_files

    m, judges = metrics_from_files(args.eval_results, args.ref)
    print(format_official(m))
    if judges and not is_official_judge(judges):
        print(f"Judge: {', '.join(sorted(judges))} (not the official gpt-4o-2024-08-06: print_qa_metrics.py would "
              "refuse this file)")
    if args.intervals:
        print()
        print(format_metrics(m))
    return 0
