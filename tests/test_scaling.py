"""bench.scaling: haystacks scaled from real ones, and the growth exponent fitted on binned timings."""

from __future__ import annotations

import pytest

from bench.benchmarks.longmemeval.loader import load_dataset
from bench.scaling import _chars, fit_exponent, local_exponents, render_scaling, scaled_instances


@pytest.mark.parametrize("power", [1.0, 1.5, 2.0])
def test_fit_recovers_the_power_of_noisy_timings(power: float) -> None:
    import random

    rng = random.Random(1)
    pts = [(t, 1e-6 * t**power * rng.uniform(0.8, 1.25)) for t in range(10_000, 400_000, 2_000)]
    fit = fit_exponent(pts)
    assert fit is not None and fit.bins == 5 and abs(fit.exponent - power) < 0.1
    assert 10_000 < fit.min_tokens < fit.max_tokens < 400_000


def test_no_fit_without_a_spread_of_sizes_or_points() -> None:
    assert fit_exponent([(100_000 + i, 1.0 + i / 1e5) for i in range(50)]) is None  # S-like: all ~100k
    assert fit_exponent([(1000, 1.0), (4000, 4.0)]) is None  # two points: no bins to fit through
    assert fit_exponent([]) is None


def test_scaled_haystacks_take_a_prefix_below_one_and_borrow_sessions_above() -> None:
    insts = load_dataset("synthetic:n_per_type=1,haystack_tokens=3000").instances[:3]
    out = scaled_instances(insts, [0.5, 1, 4])  # 4x of three haystacks: a second lap
    assert [i.question_id for i in out[:3]] == [f"{i.question_id}@x0.5" for i in insts]
    for base, half, one, quad in zip(insts, out[0:3], out[3:6], out[6:9]):
        assert half.sessions == base.sessions[: len(half.sessions)] and 0 < len(half.sessions) < len(base.sessions)
        assert one.sessions == base.sessions
        assert quad.sessions[: len(base.sessions)] == base.sessions
        assert _chars(quad.sessions) >= 4 * _chars(base.sessions) > _chars(quad.sessions[:-1])
        ids = [s.session_id for s in quad.sessions]
        assert len(ids) == len(set(ids))  # borrowed sessions get their own ids, even on a second lap
        assert quad.question == base.question and quad.answer_session_ids == base.answer_session_ids
    with pytest.raises(ValueError, match="factors must be > 0"):
        scaled_instances(insts, [0])
    with pytest.raises(ValueError, match="at least one question"):
        scaled_instances([], [1])


def test_local_exponents_show_a_change_of_regime_the_single_fit_averages() -> None:
    tokens = [100_000, 200_000, 400_000, 800_000]
    seconds = [1.0, 4.0, 8.0, 16.0]  # quadratic up to 2x (memory filling up), then linear
    got = local_exponents(tokens, seconds)
    assert got[0] is None and got[1] == pytest.approx(2.0) and got[2] == pytest.approx(1.0) == got[3]
    assert local_exponents([1, 1], [1.0, 2.0]) == [None, None]  # equal sizes: no slope
    insts = load_dataset("synthetic:n_per_type=1").instances[:1] * 4
    text = render_scaling([1, 2, 4, 8], insts, tokens, {"om": list(zip(tokens, seconds))})
    assert "1.000" in text.splitlines()[2] and "[" not in text.splitlines()[2]
    assert "4.000 [2.00]" in text and "16.000 [1.00]" in text
    fit = fit_exponent(list(zip(tokens, seconds)), bins=4)
    assert fit is not None and 1.1 < fit.exponent < 1.5  # what the one number says
