"""The one summary table printed at the end of a run, read back from the results database (so a re-run that
computes nothing still shows the numbers)."""

from __future__ import annotations

from typing import Any


def summary_rows(db_path: str, run_keys: list[str] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    import duckdb

    con = duckdb.connect(db_path, read_only=True)
    try:
        where = ""
        params: list[Any] = []
        if run_keys:
            where = f"WHERE h.run_key IN ({', '.join('?' for _ in run_keys)})"
            params = list(run_keys)
        heads = con.execute(
            f"SELECT h.run_key, h.strategy, h.name, h.actor_model, h.n_questions_planned, h.n_judged, h.micro, h.macro,"
            f" h.abstention, h.n_errors FROM v_headline h {where} ORDER BY h.name, h.strategy", params
        ).fetchall()
        profiles = [r[0] for r in con.execute("SELECT DISTINCT profile FROM v_cache ORDER BY profile").fetchall()]
        rows = []
        for rk, strat, name, actor, planned, judged, micro, macro, abst, errs in heads:
            cache = {p: (hr, npr, pt) for p, hr, npr, pt in con.execute(
                "SELECT profile, hit_rate, n_prompts, prompt_tokens FROM v_cache WHERE run_key = ?", [rk]).fetchall()}
            prefill = {p: v for p, v in con.execute(
                "SELECT profile, avg(prefill_tokens) FROM v_prefill WHERE run_key = ? GROUP BY profile", [rk]).fetchall()}
            cost = con.execute("SELECT cost_per_question FROM v_cost WHERE run_key = ?", [rk]).fetchone()
            any_prof = next(iter(cache.values()), None)
            rows.append({
                "run_key": rk, "strategy": strat, "name": name, "actor": actor, "planned": planned, "n": judged or 0,
                "micro": micro, "macro": macro, "abstention": abst, "errors": errs or 0,
                "mean_prompt_tokens": (any_prof[2] / any_prof[1]) if any_prof and any_prof[1] else None,
                "hit_rate": {p: v[0] for p, v in cache.items()},
                "prefill_per_q": prefill,
                "usd_per_q": cost[0] if cost else None,
            })
        return rows, profiles
    finally:
        con.close()


def _pct(x: float | None) -> str:
    return "   -  " if x is None else f"{100 * x:5.1f}%"


def format_summary(rows: list[dict[str, Any]], profiles: list[str], n_dataset: int | None = None, split: str | None = None) -> str:
    w = max([22] + [len(r["name"] or "") + 2 for r in rows])
    head = f"{'run':<{w}}{'strategy':<13}{'n':>5}{'micro':>8}{'macro':>8}{'abst':>8}{'prompt tok':>12}"
    head += "".join(f"{'hit ' + p[:7]:>13}" for p in profiles)
    headline = "openai" if "openai" in profiles else (profiles[0] if profiles else None)
    head += f"{'prefill/q' + (' (' + headline + ')' if headline else ''):>20}{'$/q':>10}"
    lines = [head, "-" * len(head)]
    for r in rows:
        partial = "" if not r["planned"] or r["n"] >= r["planned"] else f"  (n={r['n']} of {r['planned']})"
        line = f"{r['name']:<{w}}{r['strategy'] or '':<13}{r['n']:>5}{_pct(r['micro']):>8}{_pct(r['macro']):>8}{_pct(r['abstention']):>8}"
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


def per_type_table(db_path: str, run_keys: list[str] | None = None) -> str:
    """Accuracy per question type (rows) and run (columns), as the official per-type lines."""
    import duckdb

    con = duckdb.connect(db_path, read_only=True)
    try:
        rows = con.execute(
            "SELECT r.name, r.strategy, a.run_key, a.question_type, a.accuracy, a.n FROM v_accuracy_by_type a "
            "JOIN runs r USING (run_key) ORDER BY r.name, r.strategy, a.question_type").fetchall()
    finally:
        con.close()
    if run_keys:
        rows = [r for r in rows if r[2] in set(run_keys)]
    if not rows:
        return ""
    cols = list(dict.fromkeys(r[1] if run_keys else f"{r[0]}/{r[1]}" for r in rows))
    types = sorted({r[3] for r in rows})
    cell = {(r[1] if run_keys else f"{r[0]}/{r[1]}", r[3]): (r[4], r[5]) for r in rows}
    w = max(14, *(len(c) + 2 for c in cols))
    out = [f"{'question type':<27}" + "".join(f"{c:>{w}}" for c in cols)]
    for t in types:
        line = f"{t:<27}"
        for c in cols:
            acc, n = cell.get((c, t), (None, 0))
            line += f"{(_pct(acc).strip() + f' ({n})') if acc is not None else '-':>{w}}"
        out.append(line)
    return "\n".join(out)


def print_summary(db_path: str, run_keys: list[str] | None, n_dataset: int | None = None, split: str | None = None) -> None:
    rows, profiles = summary_rows(db_path, run_keys)
    table = per_type_table(db_path, run_keys)
    if table:
        print(table + "\n")
    print(format_summary(rows, profiles, n_dataset, split))
