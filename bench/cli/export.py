"""`ombench export`: a run's hypotheses (and judged labels) as official LongMemEval JSONL files, or the whole run as
an Inspect AI eval log (`--format inspect`: bench.report.inspect_log)."""

from __future__ import annotations

import argparse
import dataclasses


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("export", help="write a run's hypotheses (and eval results) in the official JSONL format, "
                                      "or the run as an Inspect AI log (--format inspect)")
    p.add_argument("--db", required=True, help="DuckDB results file")
    p.add_argument("--run", required=True, help="run to export: a name from `ombench runs`, or a run_key")
    p.add_argument("--out", required=True, help="hypothesis JSONL to write; --format inspect: a .eval/.json file, or "
                                                "a folder (the log named as Inspect names its logs)")
    p.add_argument("--format", choices=("longmemeval", "inspect"), default="longmemeval",
                   help="longmemeval: official hypothesis JSONL (default); inspect: an Inspect AI eval log for "
                        "`inspect view` (needs inspect_ai: pip install 'om-bench[inspect]')")
    p.add_argument("--eval-results", action="store_true", help="also write OUT.eval-results-<judge> with autoeval_label")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from bench.errors import UserError
    from bench.benchmarks.longmemeval.export import eval_results_path, write_eval_results, write_hypotheses
    from bench.store import Results

    if args.format == "inspect":
        if args.eval_results:
            raise UserError("--eval-results is for --format longmemeval; an Inspect log already holds the judge's "
                            "verdicts (drop --eval-results)")
        from bench.report.inspect_log import listed_by_inspect, write_inspect_log

        with Results(args.db, snapshot=True) as res:
            path, n = write_inspect_log(res, res.resolve_run(args.run), args.out)
        how = (f"open with `inspect view --log-dir {path.parent}`" if listed_by_inspect(path) else
               "read it with inspect_ai.log.read_eval_log; `inspect view` lists .json logs only when their name "
               "starts with the creation time: give --out a folder or a .eval file to have it listed")
        print(f"wrote {n} samples to {path} ({how})")
        return 0
    with Results(args.db, snapshot=True) as res:
        key = res.resolve_run(args.run)
        run = res.run(key)
        if run is None:
            raise UserError(f"run {args.run!r} not in {args.db}; list them with `ombench runs --db {args.db}`")
        rows = [dataclasses.asdict(s) for s in res.sample_rows(key)]
    n = write_hypotheses(rows, args.out)
    print(f"wrote {n} hypotheses to {args.out}")
    if args.eval_results:
        models = [r["judge_model"] for r in rows if r.get("judge_model")]
        judge_model = max(set(models), key=models.count) if models else (run.judge_model or "gpt-4o-2024-08-06")
        out = eval_results_path(args.out, judge_model)
        m = write_eval_results(rows, out, judge_model)
        print(f"wrote {m} judged results to {out}")
    return 0
