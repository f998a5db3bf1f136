"""`ombench judge-audit`: measure the configured judge's false-positive rate (deliberately wrong but on-topic
answers it accepts) and false-negative rate (correct restatements it rejects) on probes the benchmark builds from
real questions (bench.evaluate.judge_audit). The judge, its templates and parse rule, the dataset and the gateway
are those `ombench run` would use with the same KEY=VALUE overrides.

The result is stored in the results file (output.db, table judge_audits) keyed to the judge configuration (model,
template text, parse rule): the summary, the report and the viewer print its false-positive rate beside the accuracy
of every run judged by that configuration. `--no-store` only prints."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("judge-audit", help="measure the judge's false-positive rate on wrong but on-topic answers")
    p.add_argument("--n", type=int, default=30,
                   help="questions to probe, every type in proportion (two probes each; default 30, 0 = all)")
    p.add_argument("--seed", type=int, default=0, help="seed of the question pick (default 0)")
    p.add_argument("--concurrency", type=int, default=4, help="judge calls in flight (default 4)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout, for scripts")
    p.add_argument("--no-store", action="store_true",
                   help="do not store the result in output.db (stored by default, beside the runs it qualifies)")
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                   help="config overrides as for `ombench run` (model.judge.model=..., dataset=..., judge.parse=...)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio
    import json

    from bench.assemble import assemble
    from bench.errors import ConfigError
    from bench.evaluate.judge_audit import audit_job

    if args.n < 0:
        raise ConfigError("--n must be >= 0 (0 = every question)")
    job = assemble(_config(args.overrides))
    ds = job.load_data()
    j = job.judge
    gateway = job.make_gateway()
    result, row = asyncio.run(audit_job(job, ds, gateway, n=args.n, seed=args.seed, concurrency=args.concurrency))
    offline = bool(row["offline_engine"])
    n_questions = int(row["n_questions"])
    stored = store_audit(job.cfg.output.db, row) if not args.no_store else None
    if args.json:
        print(json.dumps({**result.to_json(), "dataset": ds.name, "questions": n_questions,
                          "offline_engine": offline, "stored": stored}))
        return 0
    from rich.console import Console
    from rich.table import Table

    console = Console()
    t = Table(title=f"judge audit: {j.model} on {ds.name}" + (" (offline engine, not an LLM)" if offline else ""))
    t.add_column("question type", overflow="fold")
    t.add_column("wrong accepted (FP)", overflow="fold")
    t.add_column("right rejected (FN)", overflow="fold")
    for qtype in [q for q in job.benchmark.question_types if q in result.per_type] + \
            sorted(set(result.per_type) - set(job.benchmark.question_types)):
        fp, fn = result.per_type[qtype]
        t.add_row(job.benchmark.short_labels.get(qtype, qtype), fp.text(), fn.text())
    t.add_row("all", result.false_positive.text(), result.false_negative.text(), style="bold")
    console.print(t)
    kinds = ", ".join(f"{k} {v.hits}/{v.n}" for k, v in sorted(result.per_kind.items()))
    console.print(f"wrong answers accepted, by how they were made: {kinds}", soft_wrap=True)
    console.print(result.verdict, style="bold red" if result.false_positive.rate > 0.1 else None, soft_wrap=True)
    if stored:
        console.print(f"stored in {stored}: runs judged by {j.model} with these templates and parse rule show "
                      "its false-positive rate beside their accuracy (run summary, report, `ombench runs`, viewer)", soft_wrap=True)
    return 0


def store_audit(db: str, row: dict[str, object]) -> str:
    """Write `row` to the results file `db` (table judge_audits); returns the path."""
    from bench.store import Store

    store = Store(db)
    try:
        store.record_judge_audit(row)
    finally:
        store.close()
    return str(db)


def _config(overrides: list[str]) -> object:
    """The validated config `ombench run OVERRIDES` would run with. Raises ConfigError (one line)."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from bench.cli.run import open_mapping_overrides, quote_string_overrides
    from bench.conf import compose
    from bench.config import validate
    from bench.errors import ConfigError

    try:  # typed as for `ombench run`: gateway.api_base.openai=URL works without a '+'
        composed = compose(quote_string_overrides(open_mapping_overrides(list(overrides))))
    except (HydraException, OmegaConfBaseException) as exc:
        raise ConfigError(f"config override: {str(exc).splitlines()[0]} (overrides: {' '.join(overrides)})") from None
    return validate(composed)
