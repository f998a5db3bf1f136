"""Official LongMemEval file formats: hypothesis JSONL, `.eval-results-<judge>` JSONL, the metrics printout
(same layout and wording as print_qa_metrics.py, for any judge model), and reference loading.

Written records are what the official scripts (github.com/xiaowu0162/LongMemEval, src/evaluation/) read
and write: `json.dumps` of {question_id, hypothesis, autoeval_label: {model, label}} per line, with the judge
named as OpenAI names it (`gpt-4o-2024-08-06`, which print_qa_metrics.py asserts), never litellm's
`openai/...` routing string."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from bench.errors import DataError, UserError
from bench.benchmarks.longmemeval.rules import (
    METRIC_ORDER,
    OFFICIAL_JUDGE,
    is_abstention,
    judge_short_name,
    official_model_name,
)
from bench.evaluate.metrics import Metrics, summarize


@dataclass(frozen=True)
class RefItem:
    question_id: str
    question_type: str
    question: str
    answer: str | int


def iter_records(path: str | Path) -> Iterator[Any]:
    """The records of a JSONL file, a JSON array or one JSON object, one at a time (the official scripts accept all
    of them; bench.benchmarks.longmemeval.stream, so a reference file as large as LongMemEval_M is never held)."""
    from bench.benchmarks.longmemeval.stream import iter_values

    p = Path(path).expanduser()
    if not p.is_file():
        raise UserError(f"{p}: file not found; check the path")
    yield from iter_values(p, one_object_ok=True)


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """JSONL, or a JSON array (the official scripts accept both): hypothesis and `.eval-results` files."""
    return list(iter_records(path))


def load_reference(ref: str | Path) -> dict[str, RefItem]:
    """question_id -> RefItem from a LongMemEval JSON / JSON.xz file (through the data loader; a file it refuses,
    such as a trimmed reference, is read plainly)."""
    from bench.benchmarks.longmemeval.loader import load_dataset

    try:
        ds = load_dataset(ref)
        return {i.question_id: RefItem(i.question_id, i.question_type, i.question, i.answer) for i in ds}
    except UserError:
        if not Path(str(ref)).expanduser().is_file():
            raise
    out: dict[str, RefItem] = {}
    for r in iter_records(ref):  # plain reading: also accepts trimmed reference files
        try:
            out[str(r["question_id"])] = RefItem(str(r["question_id"]), r["question_type"], r.get("question", ""), r.get("answer", ""))
        except (KeyError, TypeError) as exc:
            raise DataError(f"{ref}: a reference entry lacks {exc}; pass a LongMemEval data file as REF") from exc
    return out


def eval_rows(records: Iterable[Mapping[str, Any]], ref: Mapping[str, RefItem], origin: str = "eval-results") -> list[dict]:
    """Join `.eval-results` records with the reference: rows for summarize()."""
    rows, missing = [], []
    for n, e in enumerate(records, 1):
        qid = str(e.get("question_id", ""))
        lab = e.get("autoeval_label")
        if not isinstance(lab, Mapping) or "label" not in lab:
            raise DataError(f"{origin}: record {n} ({qid or 'no id'}) has no autoeval_label.label; judge the hypotheses first")
        if qid not in ref:
            missing.append(qid)
            continue
        rows.append({"question_id": qid, "question_type": ref[qid].question_type, "label": bool(lab["label"]),
                     "is_abstention": is_abstention(qid),
                     "judge_model": lab.get("model"), "hypothesis": e.get("hypothesis")})
    if missing:
        raise DataError(f"{origin}: {len(missing)} question ids are not in the reference (e.g. {missing[0]}); pass the matching REF file")
    return rows


def official_task_average(m: Metrics) -> float:
    """The task average as print_qa_metrics.py computes it: the mean over all six types, so nan when any type
    has no judged question (numpy's mean of an empty list)."""
    if any(t not in m.per_type for t in METRIC_ORDER):
        return float("nan")
    return m.task_averaged


def format_official(m: Metrics) -> str:
    """The print_qa_metrics.py layout; headline numbers carry '(n=k of N)' on a partial file. When a type is
    missing, the official task average (nan) is printed with the project's macro over the types present
    beside it, so the two never silently differ."""
    note = m.n_note()
    lines = ["", "Evaluation results by task:"]
    for t in list(METRIC_ORDER) + [t for t in m.per_type if t not in METRIC_ORDER]:
        a = m.per_type.get(t)
        if a is None:
            lines.append(f"\t{t}: nan (0)")
        else:
            lines.append(f"\t{t}: {round(a.acc, 4)} ({a.n})")
    lines.append("")
    official = official_task_average(m)
    beside = ""
    if official != official and m.per_type:
        beside = f"   [om-bench macro over the {len(m.per_type)} types present: {round(m.task_averaged, 4)}]"
    lines.append(f"Task-averaged Accuracy: {round(official, 4)}{note}{beside}")
    lines.append(f"Overall Accuracy: {round(m.overall.acc, 4)}{note}")
    lines.append(f"Abstention Accuracy: {round(m.abstention.acc, 4)} ({m.abstention.n}){note}")
    return "\n".join(lines)


def is_official_judge(names: set[str]) -> bool:
    """Whether every judge name is the official judge (print_qa_metrics.py's assertion)."""
    return bool(names) and {official_model_name(n) for n in names} == {OFFICIAL_JUDGE}


def metrics_from_files(eval_results: str | Path, ref: str | Path) -> tuple[Metrics, set[str]]:
    """Metrics of an eval-results file, plus the judge model names it carries."""
    reference = load_reference(ref)
    rows = eval_rows(read_records(eval_results), reference, str(eval_results))
    if not rows:
        raise DataError(f"{eval_results}: no judged records; check the file")
    judges = {str(r["judge_model"]) for r in rows if r["judge_model"]}
    return summarize(rows, n_total=len(reference), types=METRIC_ORDER), judges


def write_hypotheses(rows: Iterable[Mapping[str, Any]], out: str | Path) -> int:
    p = Path(out)
    p.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with p.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps({"question_id": r["question_id"], "hypothesis": r.get("hypothesis") or ""}) + "\n")
            n += 1
    return n


def eval_results_path(hyp_path: str | Path, judge_model: str) -> Path:
    return Path(f"{hyp_path}.eval-results-{judge_short_name(judge_model)}")


def write_eval_results(rows: Iterable[Mapping[str, Any]], out: str | Path, judge_model: str) -> int:
    """One line per judged question: question_id, hypothesis, autoeval_label {model, label}, as evaluate_qa.py
    writes it (the judge's official model name: `openai/gpt-4o-2024-08-06` is written `gpt-4o-2024-08-06`)."""
    p = Path(out)
    p.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with p.open("w", encoding="utf-8") as f:
        for r in rows:
            if r.get("label") is None:
                continue
            rec = {"question_id": r["question_id"], "hypothesis": r.get("hypothesis") or "",
                   "autoeval_label": {"model": official_model_name(str(r.get("judge_model") or judge_model)),
                                      "label": bool(r["label"])}}
            f.write(json.dumps(rec) + "\n")
            n += 1
    return n
