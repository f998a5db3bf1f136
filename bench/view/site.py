"""`ombench view`: a static, self-contained HTML site from a DuckDB results file, one page per run and one per
question (Jinja2 templates in bench/view/templates; inline CSS, script and SVG: no network, no server).

Layout under the output folder: `index.html` (runs, with their judge's false-positive rate where its configuration
was audited by `ombench judge-audit`, and every question with filters by type, run and verdict and a
search over id, type, question and answer), `compare.html` (two runs of one dataset: the questions one got right and
the other wrong, both ways, chosen in the page by its script), `runs/<run>.html`, `q/<run>/<question>.html`."""

from __future__ import annotations

import hashlib
import re
import shutil
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from bench.errors import UserError
from bench.view.sections import QuestionData, RunMeta, sections


@dataclass
class Site:
    index: Path
    runs: int
    questions: int


def slug(s: str) -> str:
    """A file name for an id: readable characters kept, a short hash keeps different ids apart."""
    clean = re.sub(r"[^A-Za-z0-9_-]+", "_", s)[:60].strip("_")
    return f"{clean}-{hashlib.blake2b(s.encode(), digest_size=3).hexdigest()}"


def _env() -> Any:
    from jinja2 import Environment, PackageLoader, select_autoescape

    return Environment(loader=PackageLoader("bench.view", "templates"), autoescape=select_autoescape(["html"]),
                       trim_blocks=True, lstrip_blocks=True)


def _verdict(row: Any) -> str:
    if row.error is not None and row.error == row.error:
        return "error"
    if row.label is None or row.label != row.label:
        return "unjudged"
    return "correct" if bool(row.label) else "wrong"


def _clean(d: dict[str, Any]) -> dict[str, Any]:
    return {k: (None if not isinstance(v, (list, dict, str)) and pd.isna(v) else v) for k, v in d.items()}


def _run_diagnostics(label: str, outputs: pd.DataFrame, res: Any) -> dict[str, Any] | None:
    """The run page's memory diagnostics (bench.report.diagnostics), or None for a run without Observer calls."""
    from bench.report.diagnostics import HEADER, LEGEND, by_run, cells

    d = by_run(outputs, res.memory_summary()).get(str(outputs.run_key.iloc[0])) if not outputs.empty else None
    if d is None:
        return None
    return {"header": ["questions", *HEADER], "row": [str(d.questions), *cells(d)], "legend": LEGEND,
            "warning": d.warning(label)}


def build_site(db: str | Path, out: str | Path, *, max_chars: int = 20000, profile: str = "openai",
               datasets: list[str] | None = None) -> Site:
    """Write the site for every run in `db` into `out` (replacing an earlier site there). `max_chars`: the most
    characters shown of one prompt message (the middle is left out; 0 = all; memory is shown whole, a long item
    folded behind a "show all" toggle); question pages mark the gold evidence sessions, read again from each
    run's dataset (bench.view.gold); `datasets`: only the
    runs measured on these. Raises UserError for
    a missing file, one of another format, or one without runs."""
    from bench.report.data import load
    from bench.store import Results

    db, out = Path(db), Path(out)
    d = load(db, profile=profile, datasets=datasets)  # labels, colours and kinds as the report has them
    if not d.runs:
        raise UserError(f"{db} holds no runs; run `ombench run` first")
    if out.exists():
        for sub in ("runs", "q"):
            shutil.rmtree(out / sub, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    env = _env()
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    metas = {r.run_key: RunMeta(r.run_key, r.label, r.kind, r.color, r.name, slug(r.run_key), r.dataset,
                                r.actor_model, r.offline) for r in d.runs}
    all_rows: list[dict[str, Any]] = []
    run_rows = []
    n_questions = 0
    with Results(db, snapshot=True) as res:
        profiles = res.profiles()
        from bench.view.gold import gold_by_run

        gold, gold_notes = gold_by_run(res, [r.run_key for r in d.runs], d.benchmark)
        for note in gold_notes:
            print(f"ombench: note: {note}", file=sys.stderr)
        for r in d.runs:
            meta = metas[r.run_key]
            samples = res.samples(r.run_key)
            outputs = res.memory_outputs(r.run_key)
            rows = []
            for s in samples.itertuples():
                qid = str(s.question_id)
                href = f"q/{meta.slug}/{slug(qid)}.html"
                q = QuestionData(
                    run=meta, sample=_clean(dict(s._asdict())), calls=res.question_calls(r.run_key, qid),
                    texts=res.call_texts(r.run_key, qid), turns=res.turns(r.run_key, qid),
                    memory=res.memory(r.run_key, qid), retrieval=res.question_retrieval(r.run_key, qid),
                    judgments=res.question_judgments(r.run_key, qid), profiles=profiles, max_chars=max_chars,
                    tries=res.question_tries(r.run_key, qid),
                    outputs=outputs[outputs.question_id == qid] if not outputs.empty else outputs,
                    benchmark=d.benchmark, gold=gold[r.run_key].get(qid) if r.run_key in gold else None)
                page = out / href
                page.parent.mkdir(parents=True, exist_ok=True)
                page.write_text(env.get_template("question.html").render(
                    root="../../", run=meta, run_href=f"runs/{meta.slug}.html", qid=qid, sections=sections(q)),
                    encoding="utf-8")
                rows.append({"qid": qid, "type": s.question_type or "?", "run": meta.label, "color": meta.color,
                             "verdict": _verdict(s), "hypothesis": s.hypothesis or "", "href": href,
                             "question": s.question if isinstance(s.question, str) else "", "run_key": r.run_key})
                n_questions += 1
            m = d.metrics[r.run_key]
            acc = f"{m.overall.correct} ({100 * m.overall.acc:.1f}%)" if m.overall.n else "-"
            page = out / "runs" / f"{meta.slug}.html"
            page.parent.mkdir(parents=True, exist_ok=True)
            local = [{**x, "href": "../" + x["href"]} for x in rows]
            page.write_text(env.get_template("run.html").render(
                root="../", run=meta, n=m.overall.n, acc=acc, rows=local, types=sorted({x["type"] for x in rows}),
                strategies=[meta.label], memory=_run_diagnostics(meta.label, outputs, res)), encoding="utf-8")
            all_rows += rows
            audit = d.judge_audits.get(r.run_key)  # its judge configuration's `ombench judge-audit`, if any
            run_rows.append({"run_key": r.run_key, "label": meta.label, "kind": meta.kind, "name": meta.name, "dataset": meta.dataset,
                             "actor": meta.actor_model, "offline": meta.offline, "color": meta.color,
                             "href": f"runs/{meta.slug}.html", "n": m.overall.n, "acc": acc,
                             "jfp": audit.cell() if audit else None, "jfp_note": audit.note() if audit else "",
                             "jfp_bad": bool(audit and audit.unreliable)})
    index = out / "index.html"
    index.write_text(env.get_template("index.html").render(
        root="", db=db.name, stamp=stamp, runs=run_rows, rows=all_rows, audited=any(x["jfp"] for x in run_rows), types=sorted({x["type"] for x in all_rows}),
        strategies=[x["label"] for x in run_rows]), encoding="utf-8")
    (out / "compare.html").write_text(env.get_template("compare.html").render(
        root="", db=db.name, data=compare_data(run_rows, all_rows)), encoding="utf-8")
    return Site(index=index, runs=len(run_rows), questions=n_questions)


def compare_data(runs: list[dict[str, Any]], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What compare.html's script reads: `runs` [{key, label, dataset, href}], `verdicts` {run key: {question id:
    [verdict, page href]}}, `questions` {question id: [type, question text]}. Runs compare only within a dataset
    and over the questions both hold (the script's rule, as the report's pairs)."""
    verdicts: dict[str, dict[str, list[str]]] = {}
    questions: dict[str, list[str]] = {}
    for x in rows:
        verdicts.setdefault(x["run_key"], {})[x["qid"]] = [x["verdict"], x["href"]]
        questions.setdefault(x["qid"], [x["type"], x["question"]])
    return {"runs": [{"key": r["run_key"], "label": r["label"], "dataset": r["dataset"] or "", "href": r["href"]}
                     for r in runs], "verdicts": verdicts, "questions": questions}
