"""`ombench merge`: load Parquet shards from multi-process sweeps into one DuckDB file (idempotent)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("merge", help="merge Parquet shard folders into a DuckDB file")
    p.add_argument("folder", help="shard folder, or a glob of folders (quote it)")
    p.add_argument("--db", required=True, help="DuckDB results file to create or extend")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from bench.store import merge_shards

    n = merge_shards(args.folder, args.db)
    print(f"merged {n} new or retried questions into {args.db}")
    return 0
