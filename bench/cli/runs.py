"""`ombench runs`: list the runs of a results file by their stable names (a rich table, or `--json`). The table has
one line per run where the terminal is wide enough, else three (the whole name, its facts, its models), so nothing is hidden
at 80 columns. A run whose judge configuration was audited (`ombench judge-audit`) shows that judge's false-positive
rate (`jFP`: deliberately wrong answers it accepted; `!` over 10%: the run's accuracy is inflated)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("runs", help="list the runs of a results file with their stable names")
    p.add_argument("--db", required=True, help="DuckDB results file")
    p.add_argument("--json", action="store_true", help="one JSON array of runs on stdout, for scripts")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json

    from bench.evaluate.judge_audit import audits_by_run
    from bench.runner.summary import retry_spec, retry_scores
    from bench.store import Results
    from bench.store.run_names import name_of
    from bench.store.db import sql

    with Results(args.db, snapshot=True) as res:
        counts = dict(sql(res.con, "SELECT run_key, count(*) FROM samples GROUP BY run_key"))
        retried = res.retried_labels()
        runs_df = res.runs()
        audits = audits_by_run(runs_df, res.judge_audits())
        rows = []
        for r in runs_df.to_dict("records"):
            key = str(r["run_key"])
            rows.append({
                "name": name_of(r), "run_key": key, "strategy": r.get("strategy"),
                "dataset": r.get("dataset_split") or r.get("dataset_name"), "n": int(counts.get(key, 0)),
                "n_planned": None if r.get("n_questions_planned") is None else int(r["n_questions_planned"]),
                "actor_model": r.get("actor_model"), "judge_model": r.get("judge_model"),
                "status": r.get("status"), "started_at": None if r.get("started_at") is None else str(r["started_at"]),
                # answer.retries: the single-try and the with-retries (Mastra runner's count) scores, else null
                "retries": retry_scores(retry_spec(r.get("extra")), retried[retried.run_key == key]),
                "judge_audit": _audit_json(audits.get(key)),
            })
    if args.json:
        print(json.dumps(rows, default=str))
        return 0
    from rich.console import Console

    console = Console()
    wide = _wide_table(args.db, rows)
    from rich.measure import Measurement

    if Measurement.get(console, console.options.update_width(10_000), wide).maximum <= console.width:
        console.print(wide)
    else:  # a narrow terminal: one row per run, its whole name over a line of the rest
        console.print(_narrow_table(args.db, rows))
    return 0


def _audit_json(a: Any) -> dict[str, Any] | None:
    """The stored audit of a run's judge configuration (`bench.evaluate.judge_audit.StoredAudit`) for --json and
    the tables: false-positive and false-negative hits, n and rate (null when nothing was probed), or None."""
    if a is None:
        return None

    def rate(r: Any) -> dict[str, Any]:
        return {"hits": r.hits, "n": r.n, "rate": r.rate if r.n else None}

    return {"judge_model": a.judge_model, "false_positive": rate(a.false_positive),
            "false_negative": rate(a.false_negative), "unreliable": a.unreliable, "cell": a.cell(),
            "dataset": a.dataset_name, "n_questions": a.n_questions, "offline_engine": a.offline_engine,
            "audited_at": None if a.audited_at is None else str(a.audited_at)}


def _cells(r: dict) -> dict[str, str]:
    """The displayed values of one run (n as done/planned, models as actor / judge, the date to the minute)."""
    x = r["retries"]
    return {
        "dataset": str(r["dataset"] or "-"),
        "n": f"{r['n']}/{r['n_planned']}" if r["n_planned"] is not None else str(r["n"]),
        "models": " / ".join(str(m) for m in (r["actor_model"], r["judge_model"]) if m) or "-",
        "retries": "-" if not x or x["micro"] is None else
        f"{100 * x['micro']:.1f}% ({x['n_recovered']} recovered; single-try is the headline)",
        "status": str(r["status"]), "date": (r["started_at"] or "-")[:16],
        "jfp": r["judge_audit"]["cell"] if r["judge_audit"] else "-"}


def _wide_table(db: str, rows: list[dict]) -> Any:
    """One line per run: name, dataset, n, [jFP,] models, [with retries,] status, date."""
    from rich.table import Table

    t = Table(title=f"runs in {db}")
    t.add_column("name", no_wrap=True)  # whole, so it can be copied into --run
    t.add_column("dataset", no_wrap=True)
    t.add_column("n", justify="right", no_wrap=True)
    audited = any(r["judge_audit"] for r in rows)
    if audited:  # the judge's false-positive rate, beside the n it qualifies
        t.add_column("jFP", justify="right", no_wrap=True)
    t.add_column("models", no_wrap=True)
    retrying = any(r["retries"] for r in rows)
    if retrying:
        t.add_column("with retries", overflow="fold")  # micro: single-try -> with retries (Mastra runner's count)
    t.add_column("status", no_wrap=True)
    t.add_column("date", no_wrap=True)
    for r in rows:
        c = _cells(r)
        t.add_row(r["name"], c["dataset"], c["n"], *([c["jfp"]] if audited else []), c["models"],
                  *([c["retries"]] if retrying else []), c["status"], c["date"])
    if audited:
        t.caption = "jFP: wrong answers the run's judge accepted (ombench judge-audit); !: over 10%, accuracy inflated"
    return t


def _narrow_table(db: str, rows: list[dict]) -> Any:
    """Below the wide table's width: per run its whole name (never cut: it is copied into --run), then
    `dataset · n · status · date` (and `judge FP <rate>` for an audited judge), then the models (actor / judge),
    each line dimmed and wrapping on its own."""
    from rich.table import Table
    from rich.text import Text

    t = Table(title=f"runs in {db}", show_lines=True)
    t.add_column("name\ndataset · n · status · date\nmodels (actor / judge)", overflow="fold")
    for r in rows:
        c = _cells(r)
        facts = " · ".join([c["dataset"], c["n"], c["status"], c["date"]])
        if r["judge_audit"]:
            facts += f" · judge FP {c['jfp']}"
        if r["retries"]:
            facts += f" · with retries {c['retries']}"
        t.add_row(Text.assemble((r["name"], "bold"), "\n", (facts, "dim"), "\n", (c["models"], "dim")))
    if any(r["judge_audit"] for r in rows):
        t.caption = "judge FP: wrong answers the run's judge accepted (ombench judge-audit); !: over 10%, inflated"
    return t
