"""The summary printed at the end of a run, read back from the results database (so a re-run that computes
nothing still shows the numbers): two tables that fit 100 columns, each with a one-line legend, short run
labels (with a line per label that needs explaining) and notes. Details are in the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from bench.report.data import choose_profile, dataset_label
from bench.report.labels import RunId, swept_by_run
from bench.runner.run_facts import WIDTH  # the summary's width, shared with its notes
from bench.runner.run_facts import event_counts as _event_counts
from bench.runner.run_facts import strategy_params as _params
from bench.runner.run_facts import wrap_note

LABEL_W = 31


def _opt(v: Any) -> Any:
    """None for SQL NULL (pandas NaN/NA)."""
    return None if v is None or (not isinstance(v, (dict, list)) and pd.isna(v)) else v


def _kind(strategy: str, config: Any) -> str:
    try:
        cfg = json.loads(config) if isinstance(config, str) else (config or {})
        entry = (cfg.get("strategies") or {}).get(strategy) or {}
        return str(entry.get("name") or strategy)
    except (ValueError, AttributeError):
        return strategy


def summary_rows(db_path: str | Path, run_keys: list[str] | None = None,
                 profile: str = "openai") -> tuple[list[dict[str, Any]], str]:
    """One dict per run (label, name, strategy, dataset, counts, accuracies, per-type accuracy, hit rate and
    prefill of the cache profile, $/question, real calls without a known price, the judge model, memory
    diagnostics of OM-like runs) and the profile used (the configured one when it has numbers).
    Raises UserError when the file is missing or of another format."""
    from bench.store import Results

    from bench.benchmarks import benchmark_of_runs
    from bench.evaluate.judge_audit import audits_by_run
    from bench.report.diagnostics import by_run
    from bench.store.run_names import name_of

    with Results(db_path) as res:
        heads = res.headline(run_keys)
        prof = choose_profile(profile, res.profiles())
        cache, prefill, cost, acc = res.cache(), res.prefill(), res.cost(), res.accuracy_by_type()
        runs = res.runs()
        names = {str(r["run_key"]): name_of(r) for r in runs.to_dict("records")}
        configs = {r.run_key: r.config for r in runs.itertuples()}
        extras = {r.run_key: r.extra for r in runs.itertuples()} if "extra" in runs else {}
        diagnostics = by_run(res.memory_outputs(), res.memory_summary())
        unpriced = res.unpriced_calls()
        retried = res.retried_labels()
        audits = audits_by_run(runs, res.judge_audits())
        calls, verdicts = res.judgment_repeats(), res.judge_labels()
    ids = [RunId(h.run_key, h.name or h.run_key, h.strategy or "?", _kind(h.strategy or "?", configs.get(h.run_key)),
                 dataset_label(_opt(h.dataset_name), _opt(h.dataset_sha256))) for h in heads.itertuples()]
    labels, sweeps = names, swept_by_run(ids)
    rows = []
    for h, rid in zip(heads.itertuples(), ids):
        rc = cache[(cache.run_key == h.run_key) & (cache.profile == prof)]
        rp = prefill[(prefill.run_key == h.run_key) & (prefill.profile == prof)]
        usd = cost.cost_per_question[cost.run_key == h.run_key]
        ra = acc[acc.run_key == h.run_key]
        allc = cache[cache.run_key == h.run_key]
        first = allc.iloc[0] if len(allc) else None
        rows.append({
            "run_key": h.run_key, "label": labels[h.run_key], "strategy": h.strategy, "name": h.name,
            # the name says experiment, strategy and dataset: the legend adds the swept settings and the key
            "details": "; ".join(b for b in (sweeps[h.run_key], h.run_key) if b),
            "dataset": rid.dataset, "actor": _opt(h.actor_model),
            "planned": _opt(h.n_questions_planned), "n": int(_opt(h.n_judged) or 0),
            "micro": _opt(h.micro), "macro": _opt(h.macro), "abstention": _opt(h.abstention),
            "errors": int(_opt(h.n_errors) or 0), "status": _opt(h.status),
            "per_type": {t: (_opt(a), int(n)) for t, a, n in zip(ra.question_type, ra.accuracy, ra.n) if n},
            "mean_prompt_tokens": first.prompt_tokens / first.n_prompts if first is not None and first.n_prompts else None,
            "hit_rate": _opt(rc.hit_rate.iloc[0]) if len(rc) else None,
            "prefill_per_q": _opt(rp.prefill_per_question.iloc[0]) if len(rp) else None,
            "usd_per_q": _opt(usd.iloc[0]) if len(usd) else None,
            "unpriced": int(unpriced.n_calls[unpriced.run_key == h.run_key].sum()) if len(unpriced) else 0,
            "judge": _opt(h.judge_model), "memory": diagnostics.get(h.run_key),
            "judge_audit": audits.get(h.run_key),
            "panel": panel_of(_extra(extras.get(h.run_key)).get("judge_panel"), h.run_key, calls, verdicts),
            "benchmark": benchmark_of_runs([extras.get(h.run_key)]),
            "stopped": _extra(extras.get(h.run_key)).get("stopped"),
            "failures": _extra(extras.get(h.run_key)).get("failures") or [],
            "n_failures": int(_extra(extras.get(h.run_key)).get("n_failures") or 0),
            "retries": retry_scores(retry_spec(extras.get(h.run_key)), retried[retried.run_key == h.run_key]),
        })
    return rows, prof


def panel_of(spec: Any, run_key: str, calls: pd.DataFrame, labels: pd.DataFrame) -> dict[str, Any] | None:
    """A panel-judged run's panel (runs.extra `judge_panel`): its models, rule and `PanelAgreement` over the
    questions judged (from `judgments`); None for a run with one judge."""
    from bench.evaluate.metrics import panel_agreement, panel_votes

    if not isinstance(spec, dict) or not spec.get("models"):
        return None
    c = calls[calls.run_key == run_key]
    lab = labels[labels.run_key == run_key]
    votes = panel_votes(zip(c.question_id, c.judge_model, c.label.astype(bool)))
    return {"models": list(spec["models"]), "rule": spec.get("rule"),
            "agreement": panel_agreement(votes, dict(zip(lab.question_id, lab.label.astype(bool))))}


def panel_notes(rows: list[dict[str, Any]]) -> list[str]:
    """Per panel-judged run: which verdict is the headline, and how the judges agreed (wrapped, never cut)."""
    out = []
    for r in rows:
        p = r.get("panel")
        if p:
            note = (f"{_name(r['label'], LABEL_W - 1)}: judged by a panel of {len(p['models'])} "
                    f"({', '.join(p['models'])}); the headline (micro, macro, per type) is the panel's verdict, "
                    f"{p['rule']}; {p['agreement'].text()}")
            out += wrap_note(note).split("\n")
    return out


def _extra(extra: Any) -> dict[str, Any]:
    """A run's `extra` (JSON text or mapping) as a dict ({} when absent or unreadable)."""
    try:
        got = json.loads(extra) if isinstance(extra, str) else extra
    except ValueError:
        return {}
    return dict(got) if isinstance(got, dict) else {}


def retry_spec(extra: Any) -> dict[str, Any] | None:
    """answer.retries as the run key kept it (runs.extra `spec`), or None when the run did not retry."""
    got = ((_extra(extra).get("spec") or {}).get("answer") or {}).get("retries")
    return dict(got) if isinstance(got, dict) else None


def retry_scores(spec: dict[str, Any] | None, df: pd.DataFrame) -> dict[str, Any] | None:
    """The "with retries" score of a run that retried (bench.evaluate.retries): micro and macro over the
    questions judged, counting a question correct when its first try or any retry passed (Mastra runner's
    count), the questions retried and those a retry recovered; None for a run without retries."""
    if spec is None:
        return None
    judged = df[df.label_retried.notna()]
    lab = judged.label_retried.astype(bool)
    per_type = lab.groupby(judged.question_type).mean() if len(judged) else pd.Series(dtype=float)
    return {"max": spec.get("max"), "n_flagged": spec.get("n_flagged"),
            "micro": float(lab.mean()) if len(judged) else None,
            "macro": float(per_type.mean()) if len(per_type) else None,
            "n_retried": int((df.n_tries > 0).sum()),
            "n_recovered": int((judged.label_retried.astype(bool) & ~judged.label.astype(bool)).sum())}


def retries_table(rows: list[dict[str, Any]]) -> list[str]:
    """The second score of runs that retried wrong answers, beside the single-try table (empty without any)."""
    got = [r for r in rows if r.get("retries")]
    if not got:
        return []
    body = []
    for r in got:
        x = r["retries"]
        flagged = "all wrong answers" if x["n_flagged"] is None else f"{x['n_flagged']} ids"
        body.append([_name(r["label"], LABEL_W - 1), _pct(x["micro"], 1).strip(), _pct(x["macro"], 1).strip(),
                     str(x["n_retried"]), str(x["n_recovered"]), f"{flagged}, up to {x['max']} retries"])
    lines = ["with retries (Mastra runner's count: wrong answers asked again on a fresh thread; any pass counts)",
             *rich_lines(["run", "micro", "macro", "retried", "recovered", "flagged"], body, text_last=True)]
    lines.append("the table above is single-try (first answer only, the headline); this one adds the retries")
    return lines


STOP_LABELS = {"budget": "stopped (budget)", "error": "stopped (error)", "storage": "stopped (disk)"}


def stop_note(r: dict[str, Any]) -> str | None:
    """Why a stopped run stopped, for the cost table's notes (runs.extra `stopped`; older files said nothing: the
    budget, as before)."""
    if r.get("status") != "stopped":
        return None
    return STOP_LABELS.get(str(r.get("stopped") or "budget").partition(":")[0], "stopped")


def _pct(x: float | None, w: int = 7) -> str:
    return f"{'-':>{w}}" if x is None else f"{100 * x:>{w - 1}.1f}%"


def _cut(s: str, w: int) -> str:
    return s if len(s) <= w else s[: w - 1] + "…"


def _name(s: str, w: int) -> str:
    """A run name in w characters: cut in the middle, so the distinguishing hash at its end stays."""
    if len(s) <= w:
        return s
    tail = 8
    return s[: w - tail - 1] + "…" + s[-tail:]


def rich_lines(header: Sequence[str], rows: Sequence[Sequence[str]], width: int = WIDTH, *,
               text_last: bool = False) -> list[str]:
    """A rich table as plain lines of at most `width` columns: the header, a rule, one line per row. The first
    column (a run's name, already cut to fit) never wraps; with `text_last` the last (notes) is left-aligned and
    wraps onto more lines (a note is never cut: it may be the only place a failure's count shows); the others are
    right-aligned numbers."""
    import io

    from rich import box
    from rich.console import Console
    from rich.table import Table

    t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1), expand=False)
    for i, h in enumerate(header):
        first, last = i == 0, text_last and i == len(header) - 1
        t.add_column(h, justify="left" if first or last else "right", no_wrap=not last, overflow="fold")
    for r in rows:
        t.add_row(*r)
    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None, force_terminal=False, legacy_windows=False).print(t)
    return [ln.rstrip() for ln in buf.getvalue().splitlines() if ln.strip()]


def accuracy_table(rows: list[dict[str, Any]]) -> list[str]:
    bench = _benchmark(rows)
    have = {t for r in rows for t in r["per_type"]}
    types = [t for t in bench.question_types if t in have]
    types += sorted({t for r in rows for t in r["per_type"]} - set(types))[: max(0, 8 - len(types))]
    audited = any(r.get("judge_audit") is not None for r in rows)
    header = ["run", "n", "micro", *(["jFP"] if audited else []), "macro", "abst",
              *(bench.short_labels.get(t, t[:5]) for t in types)]
    body = []
    for r in rows:
        n = f"{r['n']}/{r['planned']}" if r["planned"] and r["n"] < r["planned"] else str(r["n"])
        fp = [r["judge_audit"].cell() if r.get("judge_audit") is not None else "-"] if audited else []
        cells = [r["label"], n, _pct(r["micro"], 1).strip(), *fp,
                 *(_pct(r[k], 1).strip() for k in ("macro", "abstention"))]
        for t in types:
            a = r["per_type"].get(t, (None, 0))[0]
            cells.append("-" if a is None else f"{100 * a:.0f}%")
        body.append(cells)
    # the run name (cut in the middle) gives the numbers their room: every cell whole within WIDTH
    natural = max(len(ln) for ln in rich_lines(header, [[_name(c[0], LABEL_W - 1), *c[1:]] for c in body], 1000))
    w = max(14, LABEL_W - 1 - max(0, natural - WIDTH))
    lines = rich_lines(header, [[_name(c[0], w), *c[1:]] for c in body])
    span = f"{bench.short_labels.get(types[0], types[0][:5])}..{bench.short_labels.get(types[-1], types[-1][:5])}" \
        if len(types) > 1 else (bench.short_labels.get(types[0], types[0][:5]) if types else "types")
    lines.append(f"micro: judged questions · macro: mean over types · abst: abstention · {span}: % correct")
    if audited:
        lines.append("jFP: wrong answers its judge accepted (ombench judge-audit); !: over 10%, accuracy inflated")
    return lines


def judge_audit_notes(rows: list[dict[str, Any]]) -> list[str]:
    """One wrapped note per audited judge configuration (what it accepted, where, when), or a hint to audit."""
    seen: dict[str, list[str]] = {}
    for r in rows:
        a = r.get("judge_audit")
        if a is not None:
            seen.setdefault(a.note(), []).append(r["label"])
    return [line for note in seen for line in wrap_note(note).split("\n")]


def cost_table(rows: list[dict[str, Any]], profile: str) -> list[str]:
    body = []
    for r in rows:
        notes = []
        if r["errors"]:
            notes.append(f"{r['errors']} errors")
        if r.get("n_failures"):
            notes.append(f"{r['n_failures']} failed")
        stop = stop_note(r)
        if stop:
            notes.append(stop)
        if r.get("unpriced") and r["usd_per_q"]:
            notes.append(f"{r['unpriced']} calls unpriced")
        body.append([_name(r["label"], LABEL_W - 1), f"{r['mean_prompt_tokens'] or 0:,.0f}",
                     _pct(r["hit_rate"], 1).strip(), f"{(r['prefill_per_q'] or 0):,.0f}", usd_cell(r),
                     ", ".join(notes)])
    lines = rich_lines(["run", "prompt tok", f"hit {profile[:7]}", "prefill/q", "$/q", "notes"], body, text_last=True)
    lines.append(f"prompt tok: mean Actor prompt · hit, prefill/q: simulated {profile} cache, uncached input/question")
    return lines


def usd_cell(r: dict[str, Any]) -> str:
    """$/question, or "unpriced" when the run's calls have no known price (a local model is not free: its price
    is unknown)."""
    usd = r["usd_per_q"] or 0
    return "unpriced" if r.get("unpriced") and not usd else f"{usd:.4f}"


def memory_table(rows: list[dict[str, Any]]) -> list[str]:
    """Memory diagnostics of the runs whose strategy called an Observer or Reflector (none: no lines)."""
    from bench.report.diagnostics import cells

    with_memory = [r for r in rows if r.get("memory") is not None]
    if not with_memory:
        return []
    body = []
    for r in with_memory:
        obs, refl, ratio, gen, _ = cells(r["memory"])
        why = r["memory"].top_reasons(1, roles=False) + (f" +{len(r['memory'].reasons) - 1} more"
                                                         if len(r["memory"].reasons) > 1 else "")
        body.append([_name(r["label"], LABEL_W - 1), obs, refl, ratio, gen, why])
    lines = rich_lines(["run", "observer", "reflector", "ratio", "gen", "refused because"], body, text_last=True)
    lines.append("observer, reflector: calls clean/fallback/rejected/truncated · ratio: input per observation token")
    return lines


def _benchmark(rows: list[dict[str, Any]]) -> Any:
    """The benchmark of the summarised runs (LongMemEval unless every run names another)."""
    from bench.benchmarks import get_benchmark

    found = {id(r["benchmark"]): r["benchmark"] for r in rows if r.get("benchmark") is not None}
    return next(iter(found.values())) if len(found) == 1 else get_benchmark("longmemeval")


def judge_line(rows: list[dict[str, Any]]) -> str | None:
    """The judge model(s), with a warning (two lines) when it is not the benchmark's official judge (LongMemEval:
    gpt-4o-2024-08-06)."""
    # a panel's every member decides the headline, so each is named (and checked against the official judge)
    judges = sorted({str(r["judge"]) for r in rows if r.get("judge")}
                    | {str(m) for r in rows if r.get("panel") for m in r["panel"]["models"]})
    if not judges:
        return None
    bench = _benchmark(rows)
    ref = bench.reference_judge
    if ref is None:
        return f"judge: {', '.join(judges)}"
    if all(j.split("/")[-1] == ref for j in judges):
        return f"judge: {', '.join(judges)} ({bench.title}'s official judge)"
    return (f"warning: the judge is not {bench.title}'s official {ref}: accuracy is not comparable\n"
            f"  with published scores (judge: {', '.join(judges)})")


def format_summary(rows: list[dict[str, Any]], profile: str, n_dataset: int | None = None,
                   split: str | None = None) -> str:
    """The summary block: accuracy table, cost table, the labels that need explaining, notes. Every line fits
    100 columns."""
    out = accuracy_table(rows)
    retried = retries_table(rows)
    if retried:
        out += [""] + retried
    out += [""] + cost_table(rows, profile)
    memory = memory_table(rows)
    if memory:
        out += [""] + memory
    explain = [r for r in rows if r["label"] != r["strategy"]]
    if explain:
        out.append("")
        # a long run name (a sweep job's) cut in the middle like the tables', so its details fit the line
        out += [_cut(f"{_name(r['label'], LABEL_W - 1)} = {r['details']}", WIDTH) for r in explain]
    if any((r["actor"] or "").startswith("offline/") for r in rows):
        out.append("offline engine: rule-based stand-ins, NOT an LLM: accuracy and $ are not any model's.")
    judge = judge_line(rows)
    if judge:
        out += judge.split("\n")
    out += judge_audit_notes(rows)
    out += panel_notes(rows)
    if n_dataset is not None and split:
        out.append(f"dataset: {split}, {n_dataset} questions · more: `ombench report`, per question: `ombench view`")
    return "\n".join(_cut(line, WIDTH) for line in out)


def empty_memory_warnings(db_path: str | Path, rows: list[dict[str, Any]] | None = None) -> list[str]:
    """One warning per run with questions answered while memory held nothing (event `question_memory_empty`, set
    by bench.runner.question.mark_question_memory), naming the run by its name (`rows`: the summary's, else
    read); each warning is two lines that fit 100 columns."""
    from bench.runner.question import QUESTION_MEMORY_EMPTY
    from bench.store import Results

    rows = rows if rows is not None else summary_rows(db_path)[0]
    with Results(db_path) as res:
        turns = res.turns()
    out = []
    for r in rows:
        t = turns[turns.run_key == r["run_key"]]
        flagged = t[_event_counts(t, QUESTION_MEMORY_EMPTY) > 0]
        n, total = flagged.question_id.nunique(), t.question_id.nunique()
        if n:
            out.append(f"warning: {r['label']}: {n} of {total} questions were answered with an empty memory\n"
                       "  (nothing observed before the question; strategies.om.params.finalize=true observes what "
                       "is left)")
    return out


WORKING_MEMORY_EVENT = "working_memory"  # om_core.engine.working's turn event: the block changed


def working_memory_notes(db_path: str | Path, rows: list[dict[str, Any]] | None = None) -> list[str]:
    """One note per run whose strategy kept a working memory (`strategies.<key>.params.working_memory`): how often
    the block changed (turn event `working_memory`) and in how many questions, naming the run by its name
    (`rows`: the summary's, else read); each note is two lines that fit 100 columns."""
    from bench.store import Results

    rows = rows if rows is not None else summary_rows(db_path)[0]
    with Results(db_path) as res:
        turns = res.turns()
        runs = res.runs()
        configs = {r.run_key: r.config for r in runs.itertuples()}
    out = []
    for r in rows:
        params = _params(r["strategy"] or "", configs.get(r["run_key"]))
        if not params.get("working_memory"):
            continue
        t = turns[turns.run_key == r["run_key"]]
        changes = _event_counts(t, WORKING_MEMORY_EVENT)
        n = int(changes.sum())
        out.append(f"working memory: {r['label']}: changed {n} time{'' if n == 1 else 's'}, in "
                   f"{t[changes > 0].question_id.nunique()} of {t.question_id.nunique()} questions\n"
                   f"  (cap {params.get('working_memory_tokens', 400)} tokens; shown after the observations)")
    return out


def failure_notes(rows: list[dict[str, Any]]) -> list[str]:
    """Per run with questions that failed before anything of theirs was stored (runs.extra `failures`, kept so
    their reasons are in the results file though they are not results): the count, the first reason of each kind,
    and that the same command retries them; then why the run stopped early, if it did. Lines fit 100 columns."""
    out = []
    for r in rows:
        fails = r.get("failures") or []
        if r.get("n_failures"):
            out.append(f"failed: {r['label']}: {r['n_failures']} question{'' if r['n_failures'] == 1 else 's'} not "
                       "stored (the same command retries them):")
            seen: dict[tuple[str, str], int] = {}
            for f in fails:
                seen[(f.get("kind", "?"), f.get("phase", "?"))] = seen.get((f.get("kind", "?"), f.get("phase", "?")), 0) + 1
            for (kind, phase), n in seen.items():
                first = next(f for f in fails if (f.get("kind", "?"), f.get("phase", "?")) == (kind, phase))
                out.append(_cut(f"  {kind} ({phase}) x{n}: {' '.join(str(first.get('message', '')).split())}", WIDTH))
        if r.get("status") == "stopped" and r.get("stopped"):
            out.append(_cut(f"stopped: {r['label']}: {' '.join(str(r['stopped']).split())}", WIDTH))
    return out


DEFERRED_EVENTS = ("observation_deferred", "reflection_deferred")  # om_core: a retry of a refused input skipped


def refusal_notes(db_path: str | Path, rows: list[dict[str, Any]] | None = None) -> list[str]:
    """One line per run whose Observer/Reflector outputs were refused: how many, and how many paid retries of a
    refused input om_core skipped because the input had not changed materially (turn events
    `observation_deferred` / `reflection_deferred`; om_core.engine.state.RefusalBackoff); each note is two lines
    that fit 100 columns."""
    from bench.store import Results

    rows = rows if rows is not None else summary_rows(db_path)[0]
    with Results(db_path) as res:
        turns = res.turns()
    out = []
    for r in rows:
        mem = r.get("memory")
        refused = mem.refused if mem is not None else 0
        t = turns[turns.run_key == r["run_key"]]
        skipped = int(sum(_event_counts(t, e).sum() for e in DEFERRED_EVENTS))
        if refused or skipped:
            line = (f"refused: {r['label']}: {refused} Observer/Reflector output{'' if refused == 1 else 's'}"
                    f" refused, {skipped} retr{'y' if skipped == 1 else 'ies'} of a refused input skipped")
            out.append(wrap_note(line + "\n  (retried once the input grew by half a threshold, doubling per refusal; "
                                 "docs/om.md)"))
    return out


def print_summary(db_path: str | Path, run_keys: list[str] | None, n_dataset: int | None = None,
                  split: str | None = None, profile: str = "openai", *, to_log: bool = True,
                  failures: bool = True) -> None:
    """Print the summary and (`to_log`) keep it in the run log; `failures`: with the reasons of the questions that
    were not stored and of an early stop, read back from the results file (False where `ombench run`'s digest,
    printed next, says the same of this run)."""
    from bench.runner.runlog import emit
    from bench.runner.log_notes import log_size_notes
    from bench.runner.window_notes import window_notes

    rows, prof = summary_rows(db_path, run_keys, profile)
    text = format_summary(rows, prof, n_dataset, split)
    warnings = [w for r in rows if r.get("memory") is not None and (w := r["memory"].warning(r["label"]))]
    warnings += ((failure_notes(rows) if failures else []) + refusal_notes(db_path, rows)
                 + empty_memory_warnings(db_path, rows) + working_memory_notes(db_path, rows)
                 + window_notes(db_path, rows) + log_size_notes(db_path, rows))
    if warnings:
        text += "\n" + "\n".join(warnings)
    emit(text) if to_log else print(text)
