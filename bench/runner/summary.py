"""The one summary table printed at the end of a run, read back from the results database (so a re-run that
computes nothing still shows the numbers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from bench.report.data import dataset_label


def summary_rows(db_path: str | Path, run_keys: list[str] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """One dict per run (name, strategy, dataset, counts, accuracies, hit rate and prefill per profile, $/question)
    and the cache profiles present. Raises UserError when the file is missing or of another format."""
    from bench.store import Results

    with Results(db_path) as res:
        heads = res.headline(run_keys)
        profiles = res.profiles()
        cache, prefill, cost = res.cache(), res.prefill(), res.cost()
    rows = []
    for h in heads.itertuples():
        rc = cache[cache.run_key == h.run_key]
        first = rc.iloc[0] if len(rc) else None
        rp = prefill[prefill.run_key == h.run_key]
        usd = cost.cost_per_question[cost.run_key == h.run_key]
        rows.append({
            "run_key": h.run_key, "strategy": h.strategy, "name": h.name,
            "dataset": dataset_label(_opt(h.dataset_name), _opt(h.dataset_sha256)),
            "actor": _opt(h.actor_model), "planned": _opt(h.n_questions_planned), "n": int(_opt(h.n_judged) or 0),
            "micro": _opt(h.micro), "macro": _opt(h.macro), "abstention": _opt(h.abstention),
            "errors": int(_opt(h.n_errors) or 0),
            "mean_prompt_tokens": first.prompt_tokens / first.n_prompts if first is not None and first.n_prompts else None,
            "hit_rate": {p: _opt(v) for p, v in zip(rc.profile, rc.hit_rate)},
            "prefill_per_q": dict(zip(rp.profile, rp.prefill_per_question)),
            "usd_per_q": _opt(usd.iloc[0]) if len(usd) else None,
        })
    return rows, profiles


def _opt(v: Any) -> Any:
    """None for SQL NULL (pandas NaN/NA)."""
    return None if v is None or pd.isna(v) else v


def _pct(x: float | None) -> str:
    return "   -  " if x is None else f"{100 * x:5.1f}%"


def format_summary(rows: list[dict[str, Any]], profiles: list[str], n_dataset: int | None = None, split: str | None = None) -> str:
    w = max([22] + [len(r["name"] or "") + 2 for r in rows])
    wd = max([9] + [len(r["dataset"] or "") + 2 for r in rows])
    head = f"{'run':<{w}}{'strategy':<13}{'dataset':<{wd}}{'n':>5}{'micro':>8}{'macro':>8}{'abst':>8}{'prompt tok':>12}"
    head += "".join(f"{'hit ' + p[:7]:>13}" for p in profiles)
    headline = "openai" if "openai" in profiles else (profiles[0] if profiles else None)
    head += f"{'prefill/q' + (' (' + headline + ')' if headline else ''):>20}{'$/q':>10}"
    lines = [head, "-" * len(head)]
    for r in rows:
        partial = "" if not r["planned"] or r["n"] >= r["planned"] else f"  (n={r['n']} of {r['planned']})"
        line = f"{r['name']:<{w}}{r['strategy'] or '':<13}{r['dataset'] or '-':<{wd}}{r['n']:>5}{_pct(r['micro']):>8}{_pct(r['macro']):>8}{_pct(r['abstention']):>8}"
        line += f"{r['mean_prompt_tokens'] or 0:>12,.0f}"
        line += "".join(f"{_pct(r['hit_rate'].get(p)):>13}" for p in profiles)
        pf = r["prefill_per_q"].get(headline) if headline else None
        line += f"{(pf or 0):>20,.0f}{(r['usd_per_q'] or 0):>10.4f}{partial}"
        if r["errors"]:
            line += f"  [{r['errors']} errors]"
        lines.append(line)
    notes = []
    if any((r["actor"] or "").startswith("offline/") for r in rows):
        notes.append("offline engine: rule-based stand-ins, NOT an LLM — accuracy and $ are not any model's.")
    if n_dataset is not None and split:
        notes.append(f"dataset: {split}, {n_dataset} questions; micro = over judged questions, macro = mean of per-type accuracies.")
    return "\n".join(lines + notes)


def per_type_table(db_path: str | Path, run_keys: list[str] | None = None) -> str:
    """Accuracy per question type (rows) and run (columns), as the official per-type lines. A column is named by
    its strategy, with the run's name and dataset added when the strategy alone does not tell runs apart."""
    from bench.store import Results

    with Results(db_path) as res:
        acc = res.accuracy_by_type()
    if run_keys:
        acc = acc[acc.run_key.isin(run_keys)]
    if acc.empty:
        return ""
    runs = acc.drop_duplicates("run_key")
    datasets = [dataset_label(_opt(n), _opt(s)) for n, s in zip(runs.dataset_name, runs.dataset_sha256)]
    col = column_names(list(runs.run_key), list(runs.strategy), list(runs.name), datasets)
    cols = list(dict.fromkeys(col.values()))
    cell = {(col[r.run_key], r.question_type): (r.accuracy, r.n) for r in acc.itertuples()}
    w = max(14, *(len(c) + 2 for c in cols))
    out = [f"{'question type':<27}" + "".join(f"{c:>{w}}" for c in cols)]
    for t in sorted(set(acc.question_type)):
        line = f"{t:<27}"
        for c in cols:
            a, n = cell.get((c, t), (None, 0))
            line += f"{(_pct(a).strip() + f' ({n})') if _opt(a) is not None else '-':>{w}}"
        out.append(line)
    return "\n".join(out)


def column_names(keys: list[str], strategies: list[str], names: list[str], datasets: list[Any]) -> dict[str, str]:
    """run_key -> the shortest of strategy, name/strategy, name/strategy@dataset, ...+run_key that is unique."""
    cands = [
        [s, f"{n}/{s}", f"{n}/{s}@{d or '-'}", f"{n}/{s}@{d or '-'} {k}"]
        for k, s, n, d in zip(keys, strategies, names, datasets)
    ]
    for level in range(4):
        labels = [c[level] for c in cands]
        if len(set(labels)) == len(labels):
            return dict(zip(keys, labels))
    return dict(zip(keys, keys))


def empty_memory_warnings(db_path: str | Path, run_keys: list[str] | None = None) -> list[str]:
    """One line per run with questions answered while memory held nothing (event `question_memory_empty`,
    set by bench.runner.question.mark_question_memory)."""
    from bench.runner.question import QUESTION_MEMORY_EMPTY
    from bench.store import Results

    with Results(db_path) as res:
        turns, runs = res.turns(), res.headline(run_keys)
    out = []
    for h in runs.itertuples():
        t = turns[turns.run_key == h.run_key]
        flagged = t[t.events.fillna("").str.split(",").apply(lambda e: QUESTION_MEMORY_EMPTY in e)]
        n, total = flagged.question_id.nunique(), t.question_id.nunique()
        if n:
            out.append(f"warning: {h.name}: {n} of {total} questions were answered with an empty memory (nothing "
                       "observed before the question; strategies.om.params.finalize=true observes what is left)")
    return out


def print_summary(db_path: str | Path, run_keys: list[str] | None, n_dataset: int | None = None, split: str | None = None) -> None:
    rows, profiles = summary_rows(db_path, run_keys)
    table = per_type_table(db_path, run_keys)
    if table:
        print(table + "\n")
    print(format_summary(rows, profiles, n_dataset, split))
    for line in empty_memory_warnings(db_path, run_keys):
        print(line)
