"""The report's tables, as blocks (`("h", level, text)`, `("p", text)`, `("table", header, rows)`), each section
from `ReportData` alone. Sections are listed in `SECTIONS`; `build` runs each one so a failing section becomes a
one-line note instead of stopping the report."""

from __future__ import annotations

import itertools
from typing import Any, Callable

import pandas as pd

from bench.registry import Registry
from bench.evaluate.metrics import Acc, judge_agreement, paired_compare, self_consistency
from bench.report.data import ReportData
from bench.report.labels import details

Block = tuple[Any, ...]


def pct(a: Acc, note: str = "") -> str:
    if not a.n:
        return "n/a"
    return f"{100 * a.acc:.1f}% [{100 * a.ci_low:.1f}, {100 * a.ci_high:.1f}]{note}"


def _num(v: Any) -> float | None:
    return None if v is None or (isinstance(v, float) and v != v) or v is pd.NA else float(v)


def headline(d: ReportData) -> list[Block]:
    rows = []
    hit = dict(zip(d.cache.run_key, d.cache.hit_rate)) if not d.cache.empty else {}
    if not d.cache.empty:
        c = d.cache[d.cache.profile == d.profile]
        hit = dict(zip(c.run_key, c.hit_rate))
    pre = {}
    if not d.prefill.empty:
        pf = d.prefill[d.prefill.profile == d.profile]
        pre = dict(zip(pf.run_key, pf.prefill_per_question))
    cost = {r.run_key: (r.cost_per_question, r.cost_per_correct) for r in d.cost.itertuples()} if not d.cost.empty else {}
    unpriced = unpriced_runs(d)
    for r in d.runs:
        m = d.metrics[r.run_key]
        macro = "n/a" if m.task_averaged != m.task_averaged else f"{100 * m.task_averaged:.1f}%"
        h, p = _num(hit.get(r.run_key)), _num(pre.get(r.run_key))
        cq, cc = (_num(x) for x in cost.get(r.run_key, (None, None)))
        rows.append([
            r.label + (f" [{r.tag}]" if r.tag else ""), r.kind,
            f"{m.overall.n}" + (f" of {r.n_planned}" if r.n_planned else ""), pct(m.overall), macro,
            pct(m.abstention), "" if r.external or h is None else f"{100 * h:.1f}%",
            "" if r.external or p is None else f"{p:,.0f}", _usd(r, cq, unpriced), _usd(r, cc, unpriced),
        ])
    header = ["run", "strategy", "judged", "overall (micro) [95% CI]", "task-averaged (macro)", "abstention",
              f"cache hit ({d.profile})", f"prefill / question ({d.profile})", "cost / question", "cost / correct"]
    out: list[Block] = [("h", 2, "Headline"), ("table", header, rows)]
    if any(r.offline for r in d.runs):
        out.append(("p", "Runs marked [offline engine] used the scripted offline model (not an LLM): their accuracy "
                         "says nothing about a real model; their token and cache numbers are real."))
    if any(r.external for r in d.runs):
        out.append(("p", "Runs marked [external] are imported eval-results of other systems: accuracy only, judged "
                         "by their own judge, no cost or cache numbers."))
    out += with_retries(d)
    ref = d.benchmark.reference_judge
    other = sorted({r.judge_model for r in d.runs if not r.external and r.judge_model
                    and r.judge_model.split("/")[-1] != ref})
    if other and ref:
        out.append(("p", f"Judged by {', '.join(other)}, not {d.benchmark.title}'s official {ref}: accuracy is "
                         "not comparable with published scores."))
    return out


def with_retries(d: ReportData) -> list[Block]:
    """Runs that retried wrong answers (answer.retries): the single-try score (the headline's) beside the score
    with retries, counted as Mastra's LongMemEval runner counts them (correct if any try passes)."""
    from bench.evaluate.metrics import summarize

    rows = []
    for r in d.runs:
        spec = d.retry_specs.get(r.run_key)
        if spec is None:
            continue
        q = d.retried[d.retried.run_key == r.run_key] if not d.retried.empty else d.retried
        m = summarize([{"question_id": x.question_id, "question_type": x.question_type,
                        "is_abstention": bool(x.is_abstention) if not pd.isna(x.is_abstention) else False,
                        "label": None if pd.isna(x.label_retried) else bool(x.label_retried)}
                       for x in q.itertuples()], n_total=r.n_planned, types=d.benchmark.question_types)
        one = d.metrics[r.run_key]
        macro = "n/a" if m.task_averaged != m.task_averaged else f"{100 * m.task_averaged:.1f}%"
        n_tries = q.n_tries if len(q) else pd.Series(dtype=int)
        recovered = (q.label_retried.fillna(False).astype(bool) & ~q.label.fillna(False).astype(bool)) \
            if len(q) else pd.Series(dtype=bool)
        flagged = "all wrong answers" if spec.get("n_flagged") is None else f"{spec['n_flagged']} flagged ids"
        rows.append([r.label, pct(one.overall), pct(m.overall), macro, str(int((n_tries > 0).sum())),
                     str(int(recovered.sum())), f"{flagged}, up to {spec.get('max')}"])
    if not rows:
        return []
    header = ["run", "single-try (micro, the headline)", "with retries (micro) [95% CI]",
              "with retries (macro)", "retried", "recovered", "retries"]
    return [("h", 3, "With retries (Mastra runner's count)"), ("table", header, rows),
            ("p", "A wrong answer asked again on a fresh question thread (answer.retries); a question counts correct "
                  "if any try passes, as Mastra's LongMemEval runner counts it. The headline above stays single-try.")]


def _usd(r: Any, v: float | None, unpriced: set[str]) -> str:
    if r.external or v is None:
        return ""
    if r.run_key in unpriced:
        return "unpriced" if not v else f"${v:.4f} + unpriced"
    return f"${v:.4f}"


def legend(d: ReportData) -> list[Block]:
    rows = [[r.label, r.kind, details(r.run_id()), r.actor_model or "", r.judge_model or "", r.status or ""]
            for r in d.runs]
    return [("h", 2, "Runs (labels used in every table and figure)"),
            ("table", ["label", "strategy", "experiment; swept settings; dataset; run key", "actor", "judge",
                       "status"], rows)]


def per_type(d: ReportData) -> list[Block]:
    types = d.types()
    rows = []
    for r in d.runs:
        m = d.metrics[r.run_key]
        if not m.overall.n:
            continue
        rows.append([r.label] + [f"{100 * m.per_type[t].acc:.1f}% ({m.per_type[t].n})" if t in m.per_type else "-"
                                 for t in types])
    if not rows:
        return []
    return [("h", 2, "Accuracy by question type (n judged)"),
            ("table", ["run", *[d.short(t) for t in types]], rows),
            *([("p", d.benchmark.legend)] if getattr(d.benchmark, "legend", None) else [])]


def paired(d: ReportData, limit: int = 60) -> list[Block]:
    """Paired comparisons of runs over the same dataset (the same question ids of another split, e.g. the oracle
    split against S, are other haystacks: not a paired comparison; a run without a dataset, an imported one, is
    compared with all), at most `limit` rows, the rest counted."""
    labels, dataset = {}, {}
    for r in d.runs:
        s = d.samples[(d.samples.run_key == r.run_key) & d.samples.label.notna()]
        if len(s):
            labels[r.run_key] = dict(zip(s.question_id, s.label.astype(bool)))
            dataset[r.run_key] = r.dataset
    pairs = [(a, b) for a, b in itertools.combinations(list(labels), 2)
             if (dataset[a] == dataset[b] or None in (dataset[a], dataset[b]))  # unknown (an import): may match
             and set(labels[a]) & set(labels[b])]
    rows = []
    for a, b in pairs[:limit]:
        c = paired_compare(labels[a], labels[b])
        rows.append([d.label(a), d.label(b), str(c.n), f"{100 * c.diff:+.1f}",
                     f"[{100 * c.ci_low:+.1f}, {100 * c.ci_high:+.1f}]", f"{c.only_a}/{c.only_b}", f"{c.mcnemar_p:.3g}"])
    if not rows:
        return []
    out: list[Block] = [
        ("h", 2, "Paired comparisons (same dataset, same question ids)"),
        ("table", ["A", "B", "n", "A−B (points)", "bootstrap 95% CI", "only A / only B", "McNemar exact p"], rows)]
    if len(pairs) > limit:
        out.append(("p", f"{len(pairs) - limit} more pairs not shown; `bench.evaluate.metrics.paired_compare` "
                         "compares any two runs."))
    return out


def in_run_order(d: ReportData, df: pd.DataFrame) -> pd.DataFrame:
    """Rows of per-run tables in the order of the headline (the runs' order), keeping each run's own order."""
    order = {r.run_key: i for i, r in enumerate(d.runs)}
    return df.assign(_o=df.run_key.map(order).fillna(len(order))).sort_values("_o", kind="stable").drop(columns="_o")


def latency(d: ReportData) -> list[Block]:
    lat = d.latency
    if lat.empty:
        return []
    rows = [[d.label(x.run_key), x.role, str(int(x.n_calls)), f"{x.p50_s:.2f}", f"{x.p95_s:.2f}"]
            for x in in_run_order(d, lat).itertuples()]
    out: list[Block] = [("h", 2, "Latency per model role (real calls answered by the provider)"),
                        ("table", ["run", "role", "calls", "p50 (s)", "p95 (s)"], rows)]
    offline_keys = {r.run_key for r in d.runs if r.offline}
    offline = sorted({d.label(k) for k in lat.run_key if k in offline_keys})
    if offline:
        out.append(("p", f"{', '.join(offline)}: offline engine, answered in this process by rule: their latency "
                         "is this machine's, not any provider's."))
    return out


def costs(d: ReportData) -> list[Block]:
    c = d.cost_by_role
    if c.empty:
        return []
    nq = {r.run_key: max(1, d.metrics[r.run_key].n_rows) for r in d.runs}
    unpriced = unpriced_runs(d)

    def usd(x: Any, v: float, fmt: str) -> str:
        return "unpriced" if not v and x.run_key in unpriced else f"${v:{fmt}}"

    rows = [[d.label(x.run_key), x.role, str(int(x.n_calls)), f"{int(x.prompt_tokens or 0):,}",
             f"{int(x.completion_tokens or 0):,}", usd(x, float(x.cost_usd or 0), ".4f"),
             usd(x, float(x.cost_usd or 0) / nq.get(x.run_key, 1), ".5f"), str(int(x.retries or 0)),
             str(int(x.response_cache_hits or 0))] for x in in_run_order(d, c).itertuples()]
    note = ("List prices from litellm's price map; a response-cache hit is counted at the original call's price. "
            "Offline-engine calls cost $0; a model without a known price (a local server) shows as unpriced, and "
            "its calls count $0 in any total.")
    return [("h", 2, "Cost by model role"),
            ("table", ["run", "role", "calls", "prompt tokens", "output tokens", "USD", "USD / question", "retries",
                       "response-cache hits"], rows), ("p", note)]


def unpriced_runs(d: ReportData) -> set[str]:
    """Runs with real calls whose model has no known price."""
    u = d.unpriced
    return set(u.run_key[u.n_calls > 0]) if not u.empty else set()


def events(d: ReportData) -> list[Block]:
    e = d.events
    if e.empty:
        return []
    names = sorted(set(e.event))
    cell = {(x.run_key, x.event): f"{int(x.n_turns)} ({int(x.n_questions)})" for x in e.itertuples()}
    rows = [[r.label] + [cell.get((r.run_key, n), "-") for n in names] for r in d.runs
            if any((r.run_key, n) in cell for n in names)]
    return [("h", 2, "Memory events per run: turns with the event (questions)"), ("table", ["run", *names], rows)]


def memory_diagnostics(d: ReportData) -> list[Block]:
    """What became of the Observer's and Reflector's outputs (om_core's output guards), per run."""
    from bench.report.diagnostics import HEADER, LEGEND, by_run, cells

    diag = by_run(d.memory_outputs, d.memory_summary)
    rows = [[r.label, str(diag[r.run_key].questions), *cells(diag[r.run_key])] for r in d.runs if r.run_key in diag]
    if not rows:
        return []
    out: list[Block] = [("h", 2, "Memory diagnostics (Observer and Reflector outputs)"),
                        ("table", ["run", "questions", *HEADER], rows),
                        ("p", LEGEND + ". Refused outputs never became memory: their messages stayed unobserved "
                              "and the previous memory was kept (docs/om.md, \"Output guards\").")]
    warnings = [w.replace("\n ", "") for r in d.runs if r.run_key in diag and (w := diag[r.run_key].warning(r.label))]
    out += [("p", w) for w in warnings]
    return out


def retrieval(d: ReportData) -> list[Block]:
    rt = d.retrieval
    if rt.empty:
        return []
    rows = [[d.label(x.run_key), x.level, str(int(x.k)), str(int(x.n_questions)), f"{x.recall_any:.3f}",
             f"{x.recall_all:.3f}", f"{x.ndcg_any:.3f}"] for x in rt.itertuples()]
    return [("h", 2, "Retrieval (LongMemEval recall_any@k, recall_all@k, NDCG@k)"),
            ("table", ["run", "level", "k", "questions", "recall_any", "recall_all", "ndcg_any"], rows),
            ("p", "Scored by the harness from answer_session_ids and has_answer (never shown to the system), over "
                  "the items the strategy retrieved at question time; abstention questions and those without a "
                  "user-side evidence turn are left out, as in LongMemEval's src/retrieval. Levels: turn (rounds), "
                  "turn_session (rounds mapped to their sessions), session.")]


def judges(d: ReportData, max_ids: int = 20) -> list[Block]:
    rows = []
    jl = d.judge_labels
    for r in d.runs:
        s = jl[(jl.run_key == r.run_key) & jl.label_second.notna()] if not jl.empty else jl
        if len(s):
            a = judge_agreement(dict(zip(s.question_id, s.label.astype(bool))),
                                dict(zip(s.question_id, s.label_second.astype(bool))))
            ids = ", ".join(a.disagree_ids[:max_ids]) + (" …" if len(a.disagree_ids) > max_ids else "")
            kappa = "n/a (one verdict throughout)" if a.kappa != a.kappa else f"{a.kappa:.3f}"
            rows.append([r.label, f"second judge {s.judge_second_model.iloc[0]}", str(a.n), f"{100 * a.rate:.1f}%",
                         kappa, ids or "-"])
        rp = d.judge_repeats[d.judge_repeats.run_key == r.run_key] if not d.judge_repeats.empty else d.judge_repeats
        sc = self_consistency(rp.groupby("question_id").label.apply(list).to_dict()) if len(rp) else None
        if sc is not None:
            ids = ", ".join(sc.split_ids[:max_ids]) + (" …" if len(sc.split_ids) > max_ids else "")
            rows.append([r.label, "repeats of one judge", str(sc.n), f"{100 * sc.unanimous:.1f}% unanimous",
                         f"mean agreement {100 * sc.mean_agreement:.1f}%", ids or "-"])
    if not rows:
        return []
    return [("h", 2, "Judge agreement"),
            ("table", ["run", "compared", "questions", "agreement", "Cohen's kappa / consistency",
                       "disagreeing ids"], rows)]


# the report's sections, in order (bench.registry): a new one is a function here and one entry
SECTIONS: Registry[Callable[[ReportData], list[Block]]] = Registry("report section", {
    "headline": headline, "legend": legend, "per_type": per_type, "paired": paired, "judges": judges,
    "costs": costs, "latency": latency, "events": events, "memory_diagnostics": memory_diagnostics,
    "retrieval": retrieval,
})
