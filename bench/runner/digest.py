"""What a run owes its reader after the summary table: why questions failed (the first error of each kind,
with its count), why the run stopped early, which judge text and parse rule produced the labels, and what a
subset's macro average covers. Printed by `ombench run` at the end of a job."""

from __future__ import annotations

import sys
from collections import Counter
from typing import TYPE_CHECKING, Iterable, TextIO

from bench.gateway.errors import parse_error_text

if TYPE_CHECKING:
    from bench.assemble import Job
    from bench.data.dataset import Dataset
    from bench.runner.experiment import RunOutcome

_MAX_MESSAGE = 240


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def error_lines(stored: Iterable[str], unhandled: Iterable[str] = ()) -> list[str]:
    """One line per (kind, phase) of failure: its count and its first message, most frequent first."""
    from bench.runner.experiment import unhandled_error  # the format of the outcome errors it writes

    parsed = [parse_error_text(e) for e in stored] + [unhandled_error(e) for e in unhandled]
    if not parsed:
        return []
    counts = Counter((kind, phase) for phase, kind, _ in parsed)
    first: dict[tuple[str, str], str] = {}
    for phase, kind, message in parsed:
        first.setdefault((kind, phase), message)
    lines = [f"errors: {len(parsed)} questions failed in this run (stored with their error where answered; "
             "the same command retries them, except prompts refused for the Actor's window):"]
    for (kind, phase), n in counts.most_common():
        lines.append(f"  {kind} ({phase}) x{n}: {_short(first[(kind, phase)])}")
    return lines


def judge_line(job: Job) -> str:
    """Which model, template text and parse rule produced the labels."""
    from bench.errors import ConfigError
    from bench.evaluate.judge import parse_meaning

    j = job.judge
    try:
        templates = j.templates.describe()
    except ConfigError:
        templates = f"{j.source} templates (unavailable now)"
    model = j.model
    export_name = getattr(job.benchmark, "judge_name", None)  # how the benchmark's own files name the judge
    name = export_name(model) if export_name else model
    shown = model if name == model else f"{model} (exported as {name})"
    if j.panel:  # the headline is the panel's verdict: every member is named
        shown += f" in a panel with {', '.join(j.panel)} (strict majority)"
    if j.second_model:
        shown += f"; second judge: {j.second_model}"
    return f"judge: {shown}; templates: {templates}; parse: {parse_meaning(j.parse)}"


def digest_lines(job: Job, ds: Dataset, outcomes: list[RunOutcome], stored_errors: list[str]) -> list[str]:
    lines = error_lines(stored_errors, [e for o in outcomes for e in o.errors])
    for o in outcomes:
        if o.stopped:
            left = o.planned - o.skipped - o.computed - o.failed
            lines.append(f"[{o.strategy}] stopped early: {_short(o.stopped)}; every later call would fail the same "
                         f"way, so {left} questions were not attempted: fix the cause and re-run the same command")
    lines.append(judge_line(job))
    types, all_types = len(ds.type_counts()), len(job.benchmark.question_types)
    if types < all_types:
        lines.append(f"macro = mean over the {types} question types in this dataset or subset; the official "
                     f"task-averaged accuracy needs all {all_types} ({job.benchmark.title}'s own metrics would "
                     "print nan)")
    return lines


def print_digest(job: Job, ds: Dataset, outcomes: list[RunOutcome], stored_errors: list[str],
                 out: TextIO | None = None) -> None:
    """Print the digest (stdout unless `out`) and keep it in the run log."""
    from bench.runner.runlog import log

    text = "\n".join(digest_lines(job, ds, outcomes, stored_errors))
    print(text, file=out or sys.stdout)
    log.info("%s", text)
