"""`ombench data`: check a LongMemEval-format dataset (a table, or one JSON line with --json), cut a reproducible subset, write the
synthetic sample."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Iterable, Sequence

from bench.data.schema import Instance
from bench.errors import DataError


def _abstention(inst: Instance) -> bool:
    from bench.benchmarks.longmemeval.rules import is_abstention  # the files this command reads are LongMemEval's

    return is_abstention(inst.question_id)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("data", help="inspect datasets: check, subset, synthetic")
    sub = parser.add_subparsers(dest="data_command", metavar="ACTION")
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])

    check = sub.add_parser("check", help="validate a dataset and print its summary (n, sha256, official, split, types, tokens)")
    check.add_argument("dataset", metavar="NAME_OR_PATH", help="longmemeval_oracle | longmemeval_s | longmemeval_m | synthetic[:N] | a .json/.json.xz/.jsonl file")
    check.add_argument("--data-dir", default=None, help="folder holding the LongMemEval files (default: $LONGMEMEVAL_DATA_DIR)")
    check.add_argument("--no-tokens", action="store_true", help="skip counting haystack tokens")
    check.add_argument("--json", action="store_true", help="one JSON object on stdout, for scripts (no table)")
    check.set_defaults(func=_check)

    subset = sub.add_parser("subset", help="write a reproducible subset of a dataset as a LongMemEval .json file")
    subset.add_argument("dataset", metavar="NAME_OR_PATH", help="a dataset name (as for `data check`) or a file")
    subset.add_argument("--data-dir", default=None, help="folder holding the LongMemEval files (default: $LONGMEMEVAL_DATA_DIR)")
    subset.add_argument("--ids", default=None, help="comma-separated question ids, or @FILE with one id per line")
    subset.add_argument("--per-type", default=None, help="N for every type, or TYPE=N,TYPE=N (seeded random pick within each type)")
    subset.add_argument("--sample", type=int, default=None, help="seeded random pick of N questions")
    subset.add_argument("--first-n", type=int, default=None, help="keep the first N (after the other filters)")
    subset.add_argument("--seed", type=int, default=0, help="seed of --per-type and --sample (default 0)")
    subset.add_argument("--out", required=True, help="output .json/.jsonl file (optionally .xz)")
    subset.set_defaults(func=_subset)

    synth = sub.add_parser("synthetic", help="write the synthetic sample to a file")
    synth.add_argument("--n-per-type", type=int, default=2, help="questions per question type (default 2)")
    synth.add_argument("--abstention-per-type", type=int, default=1,
                       help="unanswerable (`_abs`) questions added per type that has them (default 1)")
    synth.add_argument("--haystack-tokens", type=int, default=6000,
                       help="approximate tokens of each haystack (default 6000; LongMemEval_S: ~115k)")
    synth.add_argument("--seed", type=int, default=0, help="seed of the generator (default 0)")
    synth.add_argument("--out", required=True, help="output .json/.jsonl file (optionally .xz or .gz)")
    synth.set_defaults(func=_synthetic)


def _check(args: argparse.Namespace) -> int:
    """Loads and validates the dataset, counts its haystack tokens, prints a table (or `--json`). On a terminal,
    stderr shows what it is doing: a spinner while the file loads, a bar over the questions while counting."""
    from rich.console import Console

    from bench.benchmarks.longmemeval.loader import load_dataset

    err = Console(stderr=True)
    live = err.is_terminal
    if live:
        with err.status(f"loading and validating {args.dataset} ..."):
            ds = load_dataset(args.dataset, args.data_dir)
    else:
        ds = load_dataset(args.dataset, args.data_dir)
    tokens = None if args.no_tokens else _token_sizes(ds.instances, err if live else None)
    summary = {
        "name": ds.name,
        "n": len(ds),
        "sha256": ds.sha256,
        "official": ds.official,
        "split": ds.split,
        "type_counts": ds.type_counts(),
        "abstention": ds.abstention_count(_abstention),
        "haystack_tokens": tokens,
        "path": str(ds.path) if ds.path else None,
        "date_format": "official" if not ds.format_notes else "non-official (ISO-8601)",
        "note": ds.note,
    }
    if args.json:
        print(json.dumps(summary, ensure_ascii=False))
    else:
        _check_table(summary)
    for note in ds.format_notes:  # visible, not only inside the JSON
        print(f"note: {note}", file=sys.stderr)
    return 0


def _token_sizes(instances: Sequence[Instance], console: Any) -> dict[str, int]:
    """Haystack token sizes' median (lower middle) and max; a progress bar on `console` (None: silent)."""
    from bench.data.stats import haystack_tokens, percentile_low

    if console is None:
        sizes = haystack_tokens(instances)
    else:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn

        sizes = []
        step = max(1, len(instances) // 50)
        with Progress("counting haystack tokens", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      TimeRemainingColumn(), console=console, transient=True) as bar:
            task = bar.add_task("tokens", total=len(instances))
            for i in range(0, len(instances), step):
                sizes += haystack_tokens(instances[i:i + step])
                bar.update(task, completed=min(len(instances), i + step))
    return {"p50": percentile_low(sizes, 50), "max": max(sizes, default=0)}


def _check_table(summary: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table.grid(padding=(0, 2))  # borderless: the sha256 stays on one line at 80 columns, to copy
    t.title = f"dataset {summary['name']}"
    t.add_column("field", style="bold", no_wrap=True)
    t.add_column("value", overflow="fold")
    tokens = summary["haystack_tokens"]
    rows = [("questions", str(summary["n"])), ("sha256", summary["sha256"]),
            ("official", "yes" if summary["official"] else "no"), ("split", str(summary["split"])),
            ("types", ", ".join(f"{k} {v}" for k, v in summary["type_counts"].items())),
            ("abstention", str(summary["abstention"])),
            ("haystack", "tokens not counted (--no-tokens)" if tokens is None
             else f"median {tokens['p50']:,} tokens, max {tokens['max']:,}"),
            ("path", str(summary["path"] or "-")), ("date format", summary["date_format"])]
    if summary["note"]:
        rows.append(("note", str(summary["note"])))
    for k, v in rows:
        t.add_row(k, v)
    Console().print(t)


def parse_per_type(text: str | None) -> dict[str, int] | int | None:
    if text is None:
        return None
    if text.strip().isdigit():
        return int(text)
    out: dict[str, int] = {}
    for part in text.split(","):
        key, eq, value = part.partition("=")
        if not eq or not value.strip().isdigit():
            raise DataError(f"--per-type {text!r}: write N or TYPE=N,TYPE=N (e.g. multi-session=5,temporal-reasoning=5)")
        out[key.strip()] = int(value)
    return out


def _read_ids(text: str | None) -> list[str] | None:
    if text is None:
        return None
    if text.startswith("@"):
        path = Path(text[1:])
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise DataError(f"{path}: cannot read the id list ({exc.strerror or exc}); give one question id per line") from None
        return [line.strip() for line in lines if line.strip()]
    return [part.strip() for part in text.split(",") if part.strip()]


def _subset(args: argparse.Namespace) -> int:
    from bench.benchmarks.longmemeval.loader import load_dataset
    from bench.benchmarks.longmemeval.format import instance_to_raw

    ds = load_dataset(args.dataset, args.data_dir).subset(
        first_n=args.first_n, per_type=parse_per_type(args.per_type), ids=_read_ids(args.ids), sample=args.sample,
        seed=args.seed, names={"first_n": "--first-n", "per_type": "--per-type", "ids": "--ids", "sample": "--sample",
                               "seed": "--seed"},
    )
    out = Path(args.out)
    _write_json(out, (instance_to_raw(i) for i in ds))  # one question at a time: an M subset is never held whole
    print(json.dumps({"out": str(out), "n": len(ds), "source_sha256": ds.sha256, "note": ds.note, "subset_ids": ds.subset_ids}))
    return 0


def _write_json(out: Path, raw: Iterable[dict]) -> None:
    """Questions to .json (an indented array) or .jsonl, optionally .xz, written one question at a time."""
    import lzma

    plain = out.name.removesuffix(".xz")
    if not plain.endswith((".jsonl", ".json")):
        raise DataError(f"{out}: unknown output type; use .json, .jsonl, .json.xz or .jsonl.xz")
    lines = plain.endswith(".jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    with (lzma.open(out, "wt", encoding="utf-8") if out.name.endswith(".xz") else out.open("w", encoding="utf-8")) as fh:
        wrote = False  # the same bytes as json.dumps(list, indent=2)
        if not lines:
            fh.write("[")
        for q in raw:
            if lines:
                fh.write(json.dumps(q, ensure_ascii=False) + "\n")
            else:
                body = json.dumps(q, ensure_ascii=False, indent=2).replace("\n", "\n  ")
                fh.write(("," if wrote else "") + "\n  " + body)
            wrote = True
        if not lines:
            fh.write("\n]" if wrote else "]")


def _synthetic(args: argparse.Namespace) -> int:
    from bench.benchmarks.longmemeval.loader import read_dataset
    from bench.benchmarks.longmemeval.synthetic import write_synthetic

    path = write_synthetic(args.out, n_per_type=args.n_per_type, haystack_tokens=args.haystack_tokens, seed=args.seed,
                           abstention_per_type=args.abstention_per_type)
    ds = read_dataset(path)
    print(json.dumps({"out": str(path), "n": len(ds), "sha256": ds.sha256, "type_counts": ds.type_counts(), "abstention": ds.abstention_count(_abstention)}))
    return 0
