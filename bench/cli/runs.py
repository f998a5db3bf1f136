"""`ombench runs`: list the runs of a results file by their stable names (a rich table, or `--json`)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("runs", help="list the runs of a results file with their stable names")
    p.add_argument("--db", required=True, help="DuckDB results file")
    p.add_argument("--json", action="store_true", help="one JSON array of runs on stdout, for scripts")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json

    from bench.runner.summary import retry_spec, retry_scores
    from bench.store import Results
    from bench.store.run_names import name_of
    from bench.store.db import sql

    with Results(args.db, snapshot=True) as res:
        counts = dict(sql(res.con, "SELECT run_key, count(*) FROM samples GROUP BY run_key"))
        retried = res.retried_labels()
        rows = []
        for r in res.runs().to_dict("records"):
            key = str(r["run_key"])
            rows.append({
                "name": name_of(r), "run_key": key, "strategy": r.get("strategy"),
                "dataset": r.get("dataset_split") or r.get("dataset_name"), "n": int(counts.get(key, 0)),
                "n_planned": None if r.get("n_questions_planned") is None else int(r["n_questions_planned"]),
                "actor_model": r.get("actor_model"), "judge_model": r.get("judge_model"),
                "status": r.get("status"), "started_at": None if r.get("started_at") is None else str(r["started_at"]),
                # answer.retries: the single-try and the with-retries (Mastra runner's count) scores, else null
                "retries": retry_scores(retry_spec(r.get("extra")), retried[retried.run_key == key]),
            })
    if args.json:
        print(json.dumps(rows, default=str))
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"runs in {args.db}")
    t.add_column("name", no_wrap=True)  # whole, so it can be copied into --run
    t.add_column("dataset", no_wrap=True)
    t.add_column("n", justify="right", no_wrap=True)
    t.add_column("models", overflow="fold")
    retrying = any(r["retries"] for r in rows)
    if retrying:
        t.add_column("with retries", overflow="fold")  # micro: single-try -> with retries (Mastra runner's count)
    t.add_column("status", no_wrap=True)
    t.add_column("date", overflow="fold")
    for r in rows:
        n = f"{r['n']}/{r['n_planned']}" if r["n_planned"] is not None else str(r["n"])
        models = " / ".join(str(m) for m in (r["actor_model"], r["judge_model"]) if m)
        cells = [r["name"], str(r["dataset"] or "-"), n, models or "-"]
        if retrying:
            x = r["retries"]
            cells.append("-" if not x or x["micro"] is None else
                         f"{100 * x['micro']:.1f}% ({x['n_recovered']} recovered; single-try is the headline)")
        t.add_row(*cells, str(r["status"]), (r["started_at"] or "-")[:16])
    Console().print(t)
    return 0
