"""Accuracy metrics as LongMemEval's print_qa_metrics.py computes them (for any benchmark), plus intervals and
paired tests.

Per type (abstention items stay inside their base type), overall = micro over judged items, task-averaged =
unweighted mean over the types present, abstention = the items the benchmark calls unanswerable (a row's
`is_abstention`). Types print in the benchmark's order (`Benchmark.question_types`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence


@dataclass(frozen=True)
class Acc:
    correct: int
    n: int
    ci_low: float = float("nan")
    ci_high: float = float("nan")

    @property
    def acc(self) -> float:
        return self.correct / self.n if self.n else float("nan")


@dataclass
class Metrics:
    per_type: dict[str, Acc]
    overall: Acc  # micro over judged questions
    task_averaged: float  # macro over the types present
    abstention: Acc
    n_rows: int  # rows given (judged or not)
    n_total: int | None = None  # questions in the dataset, when known
    unjudged: list[str] = field(default_factory=list)  # ids with no label (errors)

    @property
    def partial(self) -> bool:
        return self.n_total is not None and self.overall.n < self.n_total

    def n_note(self) -> str:
        return f" (n={self.overall.n} of {self.n_total})" if self.partial else ""


def wilson(correct: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval of correct/n (statsmodels), as (low, high) with 0 <= low <= correct/n <= high <= 1.

    Floating point puts the bound of 0/n a hair above 0 and of n/n a hair below 1 (a negative error bar, which
    matplotlib refuses): the bounds are clamped to the proportion and to [0, 1]. (nan, nan) for n = 0."""
    if n == 0:
        return float("nan"), float("nan")
    from statsmodels.stats.proportion import proportion_confint

    lo, hi = proportion_confint(correct, n, alpha=alpha, method="wilson")
    p = correct / n
    return max(0.0, min(float(lo), p)), min(1.0, max(float(hi), p))


def make_acc(labels: Iterable[bool]) -> Acc:
    ls = [bool(x) for x in labels]
    c, n = sum(ls), len(ls)
    return Acc(c, n, *wilson(c, n))


def _get(row: Any, key: str) -> Any:
    return row.get(key) if isinstance(row, Mapping) else getattr(row, key, None)


def summarize(rows: Iterable[Any], *, n_total: int | None = None, label_key: str = "label",
              types: Sequence[str] = ()) -> Metrics:
    """rows: mappings or objects with question_id, question_type, is_abstention and a bool label (None = not
    judged). `types`: the benchmark's type order (others follow, sorted)."""
    by_type: dict[str, list[bool]] = {}
    all_labels: list[bool] = []
    abst: list[bool] = []
    unjudged: list[str] = []
    n_rows = 0
    for r in rows:
        n_rows += 1
        qid = str(_get(r, "question_id"))
        label = _get(r, label_key)
        if label is None or label != label:  # None or NaN from a DataFrame
            unjudged.append(qid)
            continue
        lbl = bool(label)
        by_type.setdefault(str(_get(r, "question_type")), []).append(lbl)
        all_labels.append(lbl)
        if _get(r, "is_abstention") is True or _get(r, "is_abstention") == 1:
            abst.append(lbl)
    order = [t for t in types if t in by_type] + sorted(t for t in by_type if t not in types)
    per_type = {t: make_acc(by_type[t]) for t in order}
    macro = sum(a.acc for a in per_type.values()) / len(per_type) if per_type else float("nan")
    return Metrics(
        per_type=per_type,
        overall=make_acc(all_labels),
        task_averaged=macro,
        abstention=make_acc(abst),
        n_rows=n_rows,
        n_total=n_total,
        unjudged=unjudged,
    )


def _pct(a: Acc) -> str:
    if not a.n:
        return "   n/a"
    return f"{100 * a.acc:6.2f}% [{100 * a.ci_low:5.1f}, {100 * a.ci_high:5.1f}] ({a.correct}/{a.n})"


def format_metrics(m: Metrics, title: str | None = None) -> str:
    """Human-readable summary; every headline number carries '(n=k of N)' on a partial run."""
    note = m.n_note()
    lines = [title] if title else []
    lines.append("Accuracy by question type (Wilson 95% CI):")
    for t, a in m.per_type.items():
        lines.append(f"  {t:<27} {_pct(a)}")
    macro = "n/a" if m.task_averaged != m.task_averaged else f"{100 * m.task_averaged:.2f}%"
    lines.append(f"Task-averaged (macro over {len(m.per_type)} types): {macro}{note}")
    lines.append(f"Overall (micro): {_pct(m.overall)}{note}")
    lines.append(f"Abstention: {_pct(m.abstention)}{note}")
    if m.unjudged:
        lines.append(f"Not judged (errors): {len(m.unjudged)}")
    return "\n".join(lines)


# --- paired comparison ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairedComparison:
    n: int
    acc_a: float
    acc_b: float
    diff: float  # acc_a - acc_b
    only_a: int  # a correct, b wrong
    only_b: int
    mcnemar_p: float  # exact (binomial) two-sided
    ci_low: float  # paired bootstrap 95% interval of diff
    ci_high: float


def mcnemar_exact(only_a: int, only_b: int) -> float:
    k = only_a + only_b
    if k == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(min(only_a, only_b), k, 0.5, alternative="two-sided").pvalue)


def paired_compare(
    a: Mapping[str, bool], b: Mapping[str, bool], *, n_boot: int = 10_000, seed: int = 0, alpha: float = 0.05
) -> PairedComparison:
    """Compare two strategies on the question ids both judged."""
    import numpy as np

    ids = sorted(set(a) & set(b))
    if not ids:
        raise ValueError("the two runs share no judged question ids; compare runs over the same questions")
    xa = np.array([bool(a[i]) for i in ids], dtype=float)
    xb = np.array([bool(b[i]) for i in ids], dtype=float)
    only_a = int(((xa == 1) & (xb == 0)).sum())
    only_b = int(((xa == 0) & (xb == 1)).sum())
    d = xa - xb
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(ids), size=(n_boot, len(ids)))
    boots = d[idx].mean(axis=1)
    lo, hi = np.quantile(boots, [alpha / 2, 1 - alpha / 2])
    return PairedComparison(
        n=len(ids),
        acc_a=float(xa.mean()),
        acc_b=float(xb.mean()),
        diff=float(d.mean()),
        only_a=only_a,
        only_b=only_b,
        mcnemar_p=mcnemar_exact(only_a, only_b),
        ci_low=float(lo),
        ci_high=float(hi),
    )


# --- judge agreement --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Agreement:
    """Two judges' verdicts on the same questions."""

    n: int  # questions both judged
    rate: float  # share of questions with the same verdict
    kappa: float  # Cohen's kappa (nan when undefined: both judges gave one verdict throughout)
    disagree_ids: tuple[str, ...]  # question ids with different verdicts, sorted


def judge_agreement(a: Mapping[str, bool], b: Mapping[str, bool]) -> Agreement:
    """Agreement rate and Cohen's kappa (statsmodels `cohens_kappa` on the 2x2 table) over the ids both judged.
    Raises ValueError when they share none."""
    import warnings

    import numpy as np
    from statsmodels.stats.inter_rater import cohens_kappa

    ids = sorted(set(a) & set(b))
    if not ids:
        raise ValueError("the two judges share no judged question ids")
    table = np.zeros((2, 2))
    for i in ids:
        table[int(bool(a[i])), int(bool(b[i]))] += 1
    with warnings.catch_warnings():  # a one-verdict table divides 0 by 0: kappa is undefined (nan)
        warnings.simplefilter("ignore", RuntimeWarning)
        kappa = float(cohens_kappa(table).kappa)
    disagree = tuple(i for i in ids if bool(a[i]) != bool(b[i]))
    return Agreement(n=len(ids), rate=1 - len(disagree) / len(ids), kappa=kappa, disagree_ids=disagree)


@dataclass(frozen=True)
class SelfConsistency:
    """One judge asked several times (judge.repeats) about the same questions."""

    n: int  # questions with more than one repeat
    unanimous: float  # share of those whose repeats all agree
    mean_agreement: float  # mean share of repeats agreeing with the majority verdict
    split_ids: tuple[str, ...]  # questions whose repeats disagree


def self_consistency(repeats: Mapping[str, Iterable[bool]]) -> SelfConsistency | None:
    """From question id -> the labels of its repeats; None when no question has two or more."""
    multi = {q: [bool(x) for x in ls] for q, ls in repeats.items()}
    multi = {q: ls for q, ls in multi.items() if len(ls) > 1}
    if not multi:
        return None
    agree = {q: max(sum(ls), len(ls) - sum(ls)) / len(ls) for q, ls in multi.items()}
    split = tuple(sorted(q for q, v in agree.items() if v < 1))
    return SelfConsistency(n=len(multi), unanimous=1 - len(split) / len(multi),
                           mean_agreement=sum(agree.values()) / len(agree), split_ids=split)


@dataclass(frozen=True)
class PanelAgreement:
    """A judge panel (judge.panel) on the same questions: how often its judges agree, and each one with the
    headline (strict-majority) verdict."""

    n: int  # questions every judge judged
    unanimous: int  # of those, questions on which every judge gave the same verdict
    with_headline: dict[str, float]  # judge model -> share of questions where its verdict is the headline's
    split_ids: tuple[str, ...]  # questions the judges split on, sorted

    def text(self) -> str:
        each = ", ".join(f"{m} {100 * a:.0f}%" for m, a in self.with_headline.items())
        return (f"unanimous on {self.unanimous} of {self.n} questions ({100 * self.unanimous / self.n:.0f}%); "
                f"each judge agrees with the headline on: {each}") if self.n else "no question judged by every judge"


def panel_agreement(votes: Mapping[str, Mapping[str, bool]], headline: Mapping[str, bool]) -> PanelAgreement:
    """From question id -> {judge model: its verdict} and question id -> the headline verdict (the questions of
    `votes` without a headline are left out)."""
    models = sorted({m for v in votes.values() for m in v})
    full = {q: v for q, v in votes.items() if q in headline and set(v) == set(models)}
    split = tuple(sorted(q for q, v in full.items() if len(set(map(bool, v.values()))) > 1))
    agree = {m: (sum(bool(v[m]) == bool(headline[q]) for q, v in full.items()) / len(full)) if full else float("nan")
             for m in models}
    return PanelAgreement(n=len(full), unanimous=len(full) - len(split), with_headline=agree, split_ids=split)


def panel_votes(calls: Iterable[tuple[str, str, bool]]) -> dict[str, dict[str, bool]]:
    """question id -> {judge model: its verdict} from (question id, judge model, label) per judge call, in call
    order; a judge asked several times (judge.repeats) gives its majority (a tie: its first call), as `Judge`."""
    got: dict[str, dict[str, list[bool]]] = {}
    for q, m, lab in calls:
        got.setdefault(q, {}).setdefault(m, []).append(bool(lab))
    return {q: {m: (sum(ls) * 2 > len(ls)) or (sum(ls) * 2 == len(ls) and ls[0]) for m, ls in v.items()}
            for q, v in got.items()}
