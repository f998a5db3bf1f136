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
from bench.store.reader import is_missing

Block = tuple[Any, ...]


def pct(a: Acc, note: str = "") -> str:
    if not a.n:
        return "n/a"
    return f"{100 * a.acc:.1f}% [{100 * a.ci_low:.1f}, {100 * a.ci_high:.1f}]{note}"


def _num(v: Any) -> float | None:
    return None if is_missing(v) else float(v)


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
    agree = second_judge_agreement(d)
    for r in d.runs:
        m = d.metrics[r.run_key]
        macro = "n/a" if m.task_averaged != m.task_averaged else f"{100 * m.task_averaged:.1f}%"
        h, p = _num(hit.get(r.run_key)), _num(pre.get(r.run_key))
        cq, cc = (_num(x) for x in cost.get(r.run_key, (None, None)))
        rows.append([
            r.label + (f" [{r.tag}]" if r.tag else ""), r.dataset or "-", r.kind,
            f"{m.overall.n}" + (f" of {r.n_planned}" if r.n_planned else ""),
            pct(m.overall) + (f"; 2nd judge agrees {agree[r.run_key]}" if r.run_key in agree else "")
            + (f"; judge FP {d.judge_audits[r.run_key].cell()}" if r.run_key in d.judge_audits else ""), macro,
            pct(m.abstention), "" if r.external or h is None else f"{100 * h:.1f}%",
            "" if r.external or p is None else f"{p:,.0f}", _usd(r, cq, unpriced), _usd(r, cc, unpriced),
        ])
    header = ["run", "dataset", "strategy", "judged", "overall (micro) [95% CI]", "task-averaged (macro)", "abstention",
              f"cache hit ({d.profile})", f"prefill / question ({d.profile})", "cost / question", "cost / correct"]
    out: list[Block] = [("h", 2, "Headline"), ("table", header, rows)]
    if len(d.by_dataset()) > 1:
        out.append(("p", "These runs were measured on different datasets: compare accuracy only between rows of "
                         "one dataset (figures draw one panel, frontier and ceiling per dataset; paired tests pair "
                         "runs over the same questions only)."))
    if any(r.offline for r in d.runs):
        out.append(("p", "Runs marked [offline engine] used the scripted offline model (not an LLM): their accuracy "
                         "says nothing about a real model; their token and cache numbers are real."))
    if any(r.external for r in d.runs):
        out.append(("p", "Runs marked [external] are imported eval-results of other systems: accuracy only, judged "
                         "by their own judge, no cost or cache numbers."))
    out += with_retries(d)
    notes = sorted({a.note() for a in d.judge_audits.values()})
    if notes:
        out.append(("p", "Judge FP: the share of deliberately wrong but on-topic answers the run's judge accepted "
                         "(`ombench judge-audit`; over 10% marked !: every accuracy it judges is inflated). "
                         + " ".join(n + "." for n in notes)))
    ref = d.benchmark.reference_judge
    other = sorted({r.judge_model for r in d.runs if not r.external and r.judge_model
                    and r.judge_model.split("/")[-1] != ref})
    if other and ref:
        out.append(("p", f"Judged by {', '.join(other)}, not {d.benchmark.title}'s official {ref}: accuracy is "
                         "not comparable with published scores."))
    return out


def second_judge_agreement(d: ReportData) -> dict[str, str]:
    """run_key -> "<agreement>% (n)" of the second judge with the first, for runs judged twice (judge.second_model)."""
    jl, out = d.judge_labels, {}
    if jl.empty:
        return {}
    for r in d.runs:
        s = jl[(jl.run_key == r.run_key) & jl.label_second.notna()]
        if len(s):
            a = judge_agreement(dict(zip(s.question_id, s.label.astype(bool))),
                                dict(zip(s.question_id, s.label_second.astype(bool))))
            out[r.run_key] = f"{100 * a.rate:.0f}% (n={a.n})"
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
    """Paired comparisons of runs over the same questions: the same dataset (the same question ids of another
    split, e.g. the oracle split against S, are other haystacks) and the same question set (runs of different
    subsets are not paired, and how many such pairs were left out is said). A run without a dataset (an import)
    is paired with any run over the same question ids. At most `limit` rows, the rest counted."""
    labels, dataset, asked = {}, {}, {}
    for r in d.runs:
        rows = d.samples[d.samples.run_key == r.run_key]
        s = rows[rows.label.notna()]
        if len(s):
            labels[r.run_key] = dict(zip(s.question_id, s.label.astype(bool)))
            dataset[r.run_key] = r.dataset
            asked[r.run_key] = frozenset(rows.question_id)
    same_data = [(a, b) for a, b in itertools.combinations(list(labels), 2)
                 if dataset[a] == dataset[b] or None in (dataset[a], dataset[b])]  # unknown (an import): may match
    pairs = [(a, b) for a, b in same_data if asked[a] == asked[b]]
    rows = []
    for a, b in pairs[:limit]:
        c = paired_compare(labels[a], labels[b])
        rows.append([d.run(a).dataset or d.run(b).dataset or "-", d.label(a), d.label(b), str(c.n),
                     f"{100 * c.diff:+.1f}", f"[{100 * c.ci_low:+.1f}, {100 * c.ci_high:+.1f}]",
                     f"{c.only_a}/{c.only_b}", f"{c.mcnemar_p:.3g}"])
    out: list[Block] = []
    if rows:
        out += [("h", 2, "Paired comparisons (same dataset, same questions)"),
                ("table", ["dataset", "A", "B", "n (both judged)", "A−B (points)", "bootstrap 95% CI",
                           "only A / only B", "McNemar exact p"], rows)]
    if len(pairs) > limit:
        out.append(("p", f"{len(pairs) - limit} more pairs not shown; `bench.evaluate.metrics.paired_compare` "
                         "compares any two runs."))
    apart = len(same_data) - len(pairs)
    if apart:
        if not rows:
            out.append(("h", 2, "Paired comparisons (same dataset, same questions)"))
        out.append(("p", f"{apart} pairs of runs on one dataset not compared: they asked different question sets "
                         "(another subset, or an unfinished run); rerun them on one subset to pair them."))
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
        panel = d.panels.get(r.run_key)
        if panel and len(rp):
            from bench.evaluate.metrics import panel_agreement, panel_votes

            lab = jl[jl.run_key == r.run_key]
            pa = panel_agreement(panel_votes(zip(rp.question_id, rp.judge_model, rp.label.astype(bool))),
                                 dict(zip(lab.question_id, lab.label.astype(bool))))
            ids = ", ".join(pa.split_ids[:max_ids]) + (" …" if len(pa.split_ids) > max_ids else "")
            rows.append([r.label, f"panel of {len(panel['models'])} ({', '.join(panel['models'])}): the headline is "
                         "its strict majority", str(pa.n),
                         f"{100 * pa.unanimous / pa.n:.1f}% unanimous" if pa.n else "n/a",
                         "with the headline: " + ", ".join(f"{m} {100 * a:.0f}%" for m, a in pa.with_headline.items()),
                         ids or "-"])
        if "judge_model" in rp and r.judge_model:  # repeats of the run's own judge (a panel's others left out)
            rp = rp[rp.judge_model == r.judge_model]
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


def attribution(d: ReportData) -> list[Block]:
    """Per run: where the gold answers of its questions went, and the likely cause of each wrong answer
    (bench.report.attribution)."""
    from bench.report.attribution import LOST_REFLECTION, MISSED, NOT_IN_PROMPT

    at = d.attribution
    if at.empty or not at.attributable.any():
        return []
    rows = []
    for r in d.runs:
        a = at[(at.run_key == r.run_key) & at.attributable]
        if a.empty:
            continue
        mem = a[a.reached_memory.notna()]
        pr = a[a.in_prompt.notna()]
        wrong = a[~a.label.astype(bool)]

        def share(df: pd.DataFrame, col: str) -> str:
            return "-" if df.empty else f"{int(df[col].astype(bool).sum())}/{len(df)}"

        rows.append([r.label, str(len(a)), share(mem, "reached_memory"), share(mem, "survived"), share(pr, "in_prompt"),
                     str(len(wrong)), *(str(int((wrong.cause == c).sum())) for c in (MISSED, LOST_REFLECTION,
                                                                                       NOT_IN_PROMPT))])
    if not rows:
        return []
    return [("h", 2, "Where the answer went (evidence attribution)"),
            ("table", ["run", "questions", "reached memory", "survived to question time", "in Actor prompt", "wrong",
                       MISSED, LOST_REFLECTION, NOT_IN_PROMPT], rows),
            ("p", "Questions with one answer (no abstention, no rubric) whose gold answer's terms were matched in the "
                  "memory view and the Actor's stored question-time prompt (rule: docs/results.md). 'not in the "
                  "prompt' also counts answers that are derived rather than said (counts, date arithmetic).")]


def _share(df: pd.DataFrame, col: str) -> str:
    """`k/n (p%)` of the rows where `col` is known (not None), or "-"."""
    known = df[col].dropna()
    if known.empty:
        return "-"
    k = int(known.astype(bool).sum())
    return f"{k}/{len(known)} ({100 * k / len(known):.0f}%)"


def evidence_sessions(d: ReportData) -> list[Block]:
    """Per run (a strategy on a dataset): where the gold evidence sessions of its questions went, traced as the
    viewer's question page traces them (bench.report.session_trace), and its wrong answers by where their
    evidence went."""
    from bench.report.session_trace import ALL_IN, NONE_IN, SOME_IN, wrong_split

    st = d.session_traces
    notes: list[Block] = [("p", f"Not traced: {n}.") for n in d.gold_notes]
    if st.empty:
        return [("h", 2, "Where the evidence sessions went"), *notes] if notes else []
    rows = []
    for r in d.runs:
        a = st[st.run_key == r.run_key]
        if a.empty:
            continue
        w = wrong_split(a)
        lost = a[a.in_prompt.notna()]
        rows.append([r.label, r.dataset or "-", r.kind, str(a.question_id.nunique()), str(len(a)),
                     _share(a, "reached_memory"), _share(a, "in_prompt"),
                     "-" if lost.empty else _share(lost, "lost"),
                     str(sum(w.values())), *(str(w[k]) for k in (ALL_IN, SOME_IN, NONE_IN, "unknown"))])
    return [("h", 2, "Where the evidence sessions went"),
            ("table", ["run", "dataset", "strategy", "questions", "sessions", "reached memory", "in Actor prompt",
                       "lost", "wrong", f"wrong: {ALL_IN}", f"wrong: {SOME_IN}", f"wrong: {NONE_IN}",
                       "wrong: unknown"], rows),
            ("p", "Over the judged questions that have gold evidence sessions (the dataset's answer sessions, shown "
                  "to the human, never to a strategy), each session traced as the viewer's question page traces it "
                  "(rule: docs/results.md, 'Where the evidence sessions went'). reached memory: a line of the memory "
                  "at question time carries what it said (of the sessions of runs that keep a memory view); in Actor "
                  "prompt: raw, or through such a line; lost: neither in the prompt nor in memory. A wrong answer "
                  "whose evidence was all in the prompt was missed by the reader; one with none in the prompt was "
                  "lost before the reader (or never kept)."), *notes]


# the report's sections, in order (bench.registry): a new one is a function here and one entry
SECTIONS: Registry[Callable[[ReportData], list[Block]]] = Registry("report section", {
    "headline": headline, "legend": legend, "per_type": per_type, "paired": paired, "judges": judges,
    "costs": costs, "latency": latency, "events": events, "memory_diagnostics": memory_diagnostics,
    "retrieval": retrieval, "attribution": attribution, "evidence_sessions": evidence_sessions,
})
