import math
import random

import numpy as np
import pytest

from bench.evaluate.metrics import format_metrics, mcnemar_exact, paired_compare, summarize, wilson


def _wilson_hand(c: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = c / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


@pytest.mark.parametrize("c,n", [(0, 10), (7, 10), (421, 500), (30, 30), (1, 3)])
def test_wilson_matches_formula(c, n):
    lo, hi = wilson(c, n)
    elo, ehi = _wilson_hand(c, n)
    assert lo == pytest.approx(max(elo, 0.0), abs=1e-12) and hi == pytest.approx(min(ehi, 1.0), abs=1e-12)


def test_mcnemar_exact_hand_values():
    # two-sided exact binomial on discordant pairs: b=1, c=5 -> 2 * (C(6,0)+C(6,1)) / 2^6
    assert mcnemar_exact(1, 5) == pytest.approx(2 * 7 / 64)
    assert mcnemar_exact(5, 1) == pytest.approx(2 * 7 / 64)
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(3, 3) == pytest.approx(1.0)
    # b=0, c=10 -> 2 / 1024
    assert mcnemar_exact(0, 10) == pytest.approx(2 / 1024)


def test_paired_compare_counts_bootstrap_and_seed():
    rnd = random.Random(3)
    ids = [f"q{i}" for i in range(200)]
    a = {i: rnd.random() < 0.7 for i in ids}
    b = {i: (a[i] if rnd.random() < 0.8 else not a[i]) for i in ids}
    b["only_in_b"] = True
    c = paired_compare(a, b, n_boot=2000, seed=7)
    assert c.n == 200
    only_a = sum(a[i] and not b[i] for i in ids)
    only_b = sum(b[i] and not a[i] for i in ids)
    assert (c.only_a, c.only_b) == (only_a, only_b)
    assert c.diff == pytest.approx((only_a - only_b) / 200)
    assert c.ci_low <= c.diff <= c.ci_high
    # independent re-computation of the same seeded bootstrap
    d = np.array([float(a[i]) - float(b[i]) for i in sorted(ids)])
    idx = np.random.default_rng(7).integers(0, 200, size=(2000, 200))
    lo, hi = np.quantile(d[idx].mean(axis=1), [0.025, 0.975])
    assert (c.ci_low, c.ci_high) == pytest.approx((lo, hi))
    assert paired_compare(a, b, n_boot=2000, seed=7) == c
    same = paired_compare(a, a, n_boot=500)
    assert (same.diff, same.ci_low, same.ci_high, same.mcnemar_p) == (0.0, 0.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="share no"):
        paired_compare({"x": True}, {"y": True})


def test_summarize_micro_macro_abstention_and_partial_note():
    rows = (
        [{"question_id": f"u{i}", "question_type": "single-session-user", "label": i < 3} for i in range(4)]
        + [{"question_id": f"m{i}_abs", "question_type": "multi-session", "label": i == 0, "is_abstention": True}
           for i in range(2)]
        + [{"question_id": "t0", "question_type": "temporal-reasoning", "label": None}]
    )
    m = summarize(rows, n_total=500)
    assert m.per_type["single-session-user"].acc == 0.75 and m.per_type["multi-session"].acc == 0.5
    assert "temporal-reasoning" not in m.per_type and m.unjudged == ["t0"]
    assert m.overall.correct == 4 and m.overall.n == 6
    assert m.task_averaged == pytest.approx((0.75 + 0.5) / 2)
    assert (m.abstention.correct, m.abstention.n) == (1, 2)
    text = format_metrics(m)
    for head in ("Task-averaged", "Overall", "Abstention"):
        line = next(x for x in text.splitlines() if x.startswith(head))
        assert line.endswith("(n=6 of 500)"), line
    assert "(n=" not in format_metrics(summarize(rows[:6], n_total=6))


def test_judge_agreement_kappa_by_hand():
    from bench.evaluate.metrics import judge_agreement

    # 10 questions: both yes 4, both no 3, A yes/B no 2 (q7, q8), A no/B yes 1 (q9)
    a = {f"q{i}": v for i, v in enumerate([1, 1, 1, 1, 0, 0, 0, 1, 1, 0])}
    b = {f"q{i}": v for i, v in enumerate([1, 1, 1, 1, 0, 0, 0, 0, 0, 1])}
    g = judge_agreement(a, b)
    # p_o = 7/10; A says yes 6/10, B 5/10: p_e = .6*.5 + .4*.5 = .5; kappa = (.7 - .5) / (1 - .5) = .4
    assert (g.n, g.rate, g.disagree_ids) == (10, 0.7, ("q7", "q8", "q9"))
    assert g.kappa == pytest.approx(0.4)
    one = judge_agreement({"x": True, "y": True}, {"x": True, "y": True})
    assert one.rate == 1.0 and one.kappa != one.kappa  # one verdict throughout: kappa undefined (nan)


def test_self_consistency_of_repeats():
    from bench.evaluate.metrics import self_consistency

    sc = self_consistency({"a": [True, True, True], "b": [True, False, True], "c": [False]})
    assert sc is not None and sc.n == 2 and sc.unanimous == 0.5 and sc.split_ids == ("b",)
    assert sc.mean_agreement == pytest.approx((1 + 2 / 3) / 2)
    assert self_consistency({"a": [True]}) is None
