"""Import an external system's official `.eval-results` file as a run of its own (strategy external:NAME)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.errors import UserError
from bench.benchmarks.longmemeval.export import eval_rows, load_reference, read_records
from bench.store.contract import QuestionResult, RunManifest, SampleRow
from bench.store.writer import Store


def read_eval_results(eval_results: str | Path, ref: str | Path, name: str) -> tuple[Any, list[dict[str, Any]]]:
    """(reference, rows) of an import, read and checked before any results file is opened. Raises UserError for a
    bad name, DataError for a missing file or one that does not match the reference."""
    if not name or any(c.isspace() for c in name):
        raise UserError(f"--name {name!r}: give a short name without spaces, e.g. zep-gpt4o")
    reference = load_reference(ref)
    return reference, eval_rows(read_records(eval_results), reference, str(eval_results))


def import_eval_results(store: Store, eval_results: str | Path, ref: str | Path, name: str, *, replace: bool = False,
                        read: tuple[Any, list[dict[str, Any]]] | None = None) -> tuple[str, int]:
    """Returns (run_key, questions written). Re-importing the same name skips stored ids unless replace. `read`:
    what read_eval_results returned (else it is called here). Raises as read_eval_results."""
    reference, rows = read or read_eval_results(eval_results, ref, name)
    judges = sorted({str(r["judge_model"]) for r in rows if r["judge_model"]})
    run_key = f"external:{name}"
    store.upsert_run(RunManifest(
        run_key=run_key, name=name, strategy=run_key, judge_model=", ".join(judges) or None,
        n_questions_planned=len(reference), status="imported",
        extra={"source_file": str(eval_results), "reference_file": str(ref), "benchmark": "longmemeval"},
    ))
    results = [QuestionResult(SampleRow(
        question_id=r["question_id"], question_type=r["question_type"], hypothesis=r["hypothesis"], label=r["label"],
        judge_model=r["judge_model"], is_abstention=r["is_abstention"])) for r in rows]
    written = store.write_questions(run_key, results, replace=replace)
    store.finish_run(run_key, status="imported")
    return run_key, written
