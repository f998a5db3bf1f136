"""Assemble the Markdown and HTML report from the DuckDB file: tables, then figures. A table section or figure
that fails is replaced by a one-line note (also printed); `write_report` never raises."""

from __future__ import annotations

import html
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from bench.errors import UserError
from bench.report import figures as figs
from bench.report.data import load
from bench.report.tables import SECTIONS, Block


@dataclass
class Report:
    markdown: Path
    html: Path
    figures: list[figs.Figure] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # sections and figures that failed, one line each


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
             "<style>body{font-family:sans-serif;max-width:1150px;margin:auto}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px}img{max-width:100%}"
             ".warn{color:#a33}</style></head><body>"]
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


def build_report(db: str | Path, out_dir: str | Path, *, profile: str = "openai",
                 datasets: list[str] | None = None) -> Report:
    """Write report.md, report.html and the PNG figures into out_dir. `profile`: the cache profile of the cache
    figures and tables (the first with numbers when it has none); `datasets`: only the runs measured on these
    (bench.report.data.load). Raises UserError for a missing or empty file or
    one of another format version; a failing section or figure is a note, not an error."""
    db = Path(db)
    if not db.exists():
        raise UserError(f"DuckDB file {db} not found; pass --db with the results file of `ombench run`")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    d = load(db, profile=profile, datasets=datasets)
    if not d.runs:
        raise UserError(f"{db} holds no runs; run `ombench run` or `ombench import` first")
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    blocks: list[Block] = [("h", 1, "om-bench report"),
                           ("p", f"Source: {db.name}, {len(d.runs)} runs on {len(d.by_dataset())} dataset(s), generated {stamp}. Cache figures and "
                                 f"columns use the {d.profile} cache profile (simulated).")]
    warnings: list[str] = []
    for section in SECTIONS.values():
        try:
            blocks += section(d)
        except Exception as exc:  # a table never stops the report
            msg = f"section {section.__name__} skipped: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            print(f"report: {msg}", file=sys.stderr)
            warnings.append(msg)
            blocks.append(("p", f"Skipped ({msg})."))
    made = []
    for fn in figs.FIGURES.values():
        f = figs.make(fn, d, out)
        made.append(f)
        if f.failed:
            warnings.append(f"figure {f.name} {f.note}")
        blocks.append(("h", 2, f.title))
        blocks.append(("img", f.path, f.title) if f.path else ("p", f"Skipped: {f.note}."))
        if f.path and f.note:  # what a drawn figure includes or leaves out
            blocks.append(("p", f.note))
    # a figure this report skips must not stay from an earlier report in the same folder (it would describe other
    # runs beside this report's figures)
    drawn = {f.path.resolve() for f in made if f.path}
    names = {f.name for f in made} | set(figs.FIGURES) | {getattr(fn, "__name__", "") for fn in figs.FIGURES.values()}
    for name in names - {""}:
        stale = out / f"{name}.png"
        if stale.is_file() and stale.resolve() not in drawn:
            stale.unlink()
    md, ht = out / "report.md", out / "report.html"
    md.write_text(_md(blocks, out), encoding="utf-8")
    ht.write_text(_html(blocks, out), encoding="utf-8")
    return Report(markdown=md, html=ht, figures=made, warnings=warnings)


def write_report(db: str | Path, out_dir: str | Path, *, profile: str = "openai") -> Report | None:
    """`build_report` for the end of a run: never raises. Prints where the report is, or one line saying why
    there is none (the run's results are in the database either way)."""
    try:
        rep = build_report(db, out_dir, profile=profile)
    except Exception as exc:  # the report must never turn a finished run into a failed one
        msg = str(exc).splitlines()[0] if str(exc) else ""
        print(f"report: not written ({type(exc).__name__}: {msg}); the results are in {db}: "
              f"retry with `ombench report --db {db}`", file=sys.stderr)
        return None
    print(f"report: {rep.markdown}" + (f" ({len(rep.warnings)} parts skipped, see the report)" if rep.warnings else ""))
    return rep
