"""`ombench view`: a static, self-contained HTML site (one page per run and per question) from the results."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("view", help="write a static HTML site, one page per run and per question, from the results")
    p.add_argument("--db", default="results/bench.duckdb", help="DuckDB results file (default results/bench.duckdb)")
    p.add_argument("--out", default="results/view", help="output folder (default results/view)")
    p.add_argument("--max-chars", type=int, default=20000,
                   help="most characters shown of one prompt message or memory item (0 = all; default 20000)")
    p.add_argument("--dataset", action="append", default=None, metavar="NAME",
                   help="only runs measured on this dataset (label, name or split, e.g. s, oracle); repeat for several")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from bench.view import build_site

    site = build_site(args.db, args.out, max_chars=args.max_chars, datasets=args.dataset)
    print(f"wrote {site.index} ({site.runs} runs, {site.questions} question pages); open it in a browser")
    return 0
