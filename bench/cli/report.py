"""`ombench report`: PNG figures plus a Markdown and HTML report from a DuckDB results file."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("report", help="write figures and a Markdown/HTML report from the DuckDB results")
    p.add_argument("--db", default="results/bench.duckdb", help="DuckDB results file (default results/bench.duckdb)")
    p.add_argument("--out", default="results/report", help="output folder (default results/report)")
    p.add_argument("--profile", default=None,
                   help="cache profile of the cache figures and columns (default openai, else the first profile the "
                        "file has; a profile named here must be in the file)")
    p.add_argument("--dataset", action="append", default=None, metavar="NAME",
                   help="only runs measured on this dataset (its label as the headline shows it, name or split, "
                        "e.g. s, oracle, synthetic); repeat for several")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from bench.report import build_report
    from bench.report.data import require_profile

    if args.profile is not None:
        require_profile(args.db, args.profile)
    rep = build_report(args.db, args.out, profile=args.profile or "openai", datasets=args.dataset)
    made = [f for f in rep.figures if f.path]
    print(f"wrote {rep.markdown} and {rep.html} with {len(made)} figures")
    for f in rep.figures:
        if not f.path:
            print(f"  skipped {f.name}: {f.note}")
    return 0
