"""Assemble the Markdown and HTML report from the DuckDB file: headline table, paired tests, figures."""

from __future__ import annotations

import html
import itertools
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench.errors import UserError
from bench.evaluate.metrics import Acc, paired_compare
from bench.report import figures as figs
from bench.report.data import ReportData, load

Block = tuple[Any, ...]  # ("h", level, text) | ("p", text) | ("table", header, rows) | ("img", path, title)


@dataclass
class Report:
    markdown: Path
    html: Path
    figures: list[figs.Figure] = field(default_factory=list)


def _pct(a: Acc, note: str = "") -> str:
    if not a.n:
        return "n/a"
    return f"{100 * a.acc:.1f}% [{100 * a.ci_low:.1f}, {100 * a.ci_high:.1f}]{note}"


def _headline(d: ReportData) -> list[Block]:
    rows = []
    cache = d.cache.groupby("run_key").hit_rate.mean() if not d.cache.empty else {}
    cost = dict(zip(d.cost.run_key, d.cost.cost_per_correct)) if not d.cost.empty else {}
    for r in d.runs:
        m = d.metrics[r.run_key]
        note = m.n_note()
        macro = "n/a" if m.task_averaged != m.task_averaged else f"{100 * m.task_averaged:.1f}%{note}"
        hit = cache.get(r.run_key) if hasattr(cache, "get") else None
        cpc = cost.get(r.run_key)
        rows.append([
            r.label, r.strategy, r.dataset or "", r.actor_model or "", f"{m.overall.n}" + (f" of {r.n_planned}" if r.n_planned else ""),
            _pct(m.overall, note), macro, _pct(m.abstention, note),
            "" if r.external or hit is None or hit != hit else f"{100 * hit:.1f}%",
            "" if r.external or cpc is None or cpc != cpc else f"${cpc:.4f}",
        ])
    header = ["run", "strategy", "dataset", "actor model", "judged", "overall (micro)", "task-averaged (macro)", "abstention",
              "cache hit (mean over profiles)", "cost / correct"]
    out: list[Block] = [("h", 2, "Headline"), ("table", header, rows)]
    if any(r.offline for r in d.runs):
        out.append(("p", "Runs marked [offline engine] used the scripted offline model: their accuracy says nothing "
                         "about a real model; their token and cache numbers are real."))
    if any(r.external for r in d.runs):
        out.append(("p", "Runs marked [external] are imported eval-results of other systems: accuracy only, "
                         "judged by their own judge, no cost or cache numbers."))
    return out


def _paired(d: ReportData, limit: int = 12) -> list[Block]:
    labels = {}
    for r in d.runs:
        s = d.samples[(d.samples.run_key == r.run_key) & d.samples.label.notna()]
        if len(s):
            labels[r.run_key] = dict(zip(s.question_id, s.label.astype(bool)))
    rows = []
    for a, b in itertools.combinations(list(labels)[:limit], 2):
        if not set(labels[a]) & set(labels[b]):
            continue
        c = paired_compare(labels[a], labels[b])
        rows.append([d.run(a).label, d.run(b).label, str(c.n), f"{100 * c.diff:+.1f}",
                     f"[{100 * c.ci_low:+.1f}, {100 * c.ci_high:+.1f}]", f"{c.only_a}/{c.only_b}", f"{c.mcnemar_p:.3g}"])
    if not rows:
        return []
    return [("h", 2, "Paired comparisons (same question ids)"),
            ("table", ["A", "B", "n", "A−B (points)", "bootstrap 95% CI", "only A / only B", "McNemar exact p"], rows)]


def _md(blocks: list[Block], out: Path) -> str:
    lines: list[str] = []
    for b in blocks:
        if b[0] == "h":
            lines += ["#" * b[1] + " " + b[2], ""]
        elif b[0] == "p":
            lines += [b[1], ""]
        elif b[0] == "table":
            lines.append("| " + " | ".join(b[1]) + " |")
            lines.append("|" + "---|" * len(b[1]))
            lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in b[2]]
            lines.append("")
        elif b[0] == "img":
            lines += [f"![{b[2]}]({b[1].relative_to(out).as_posix()})", ""]
    return "\n".join(lines)


def _html(blocks: list[Block], out: Path) -> str:
    e = html.escape
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>om-bench report</title>",
             "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px}img{max-width:100%}</style></head><body>"]
    for b in blocks:
        if b[0] == "h":
            parts.append(f"<h{b[1]}>{e(b[2])}</h{b[1]}>")
        elif b[0] == "p":
            parts.append(f"<p>{e(b[1])}</p>")
        elif b[0] == "table":
            parts.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in b[1]) + "</tr>")
            parts += ["<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in row) + "</tr>" for row in b[2]]
            parts.append("</table>")
        elif b[0] == "img":
            parts.append(f"<figure><img src='{e(b[1].relative_to(out).as_posix())}' alt='{e(b[2])}'></figure>")
    parts.append("</body></html>")
    return "\n".join(parts)


def build_report(db: str | Path, out_dir: str | Path) -> Report:
    db = Path(db)
    if not db.exists():
        raise UserError(f"DuckDB file {db} not found; pass --db with the results file of `ombench run`")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    d = load(db)
    if not d.runs:
        raise UserError(f"{db} holds no runs; run `ombench run` or `ombench import` first")
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    blocks: list[Block] = [("h", 1, "om-bench report"), ("p", f"Source: {db.name}, {len(d.runs)} runs, generated {stamp}.")]
    blocks += _headline(d)
    blocks += _paired(d)
    made = []
    for fn in figs.ALL:
        f = fn(d, out)
        made.append(f)
        blocks.append(("h", 2, f.title))
        blocks.append(("img", f.path, f.title) if f.path else ("p", f"Skipped: {f.note}."))
    md, ht = out / "report.md", out / "report.html"
    md.write_text(_md(blocks, out), encoding="utf-8")
    ht.write_text(_html(blocks, out), encoding="utf-8")
    return Report(markdown=md, html=ht, figures=made)
