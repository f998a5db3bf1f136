"""Activation arithmetic of Mastra's buffering-coordinator.ts, thresholds.ts and `swapBufferedToActive`
(mastra-ai/mastra), checked with numbers."""

import pytest

from om_core.activation import (
    activation_ratio,
    buffer_interval,
    dynamic_threshold,
    plan_activation,
    resolve_block_after,
    resolve_buffer_tokens,
    retention_floor,
    should_buffer,
)


def test_worked_example_activates_all_five_chunks():
    plan = plan_activation([6000] * 5, pending=31_000, threshold=30_000, ratio=0.8)
    assert plan.floor == 6000 and plan.target == 25_000
    assert plan.count == 5 and plan.message_tokens == 30_000 and plan.choice == "over"


def test_under_chosen_when_over_leaves_too_little():
    # over = 24,000 would leave 500 < 1,000 tokens raw, so the largest prefix under target wins
    plan = plan_activation([4000, 20_000], pending=24_500, threshold=30_000, ratio=0.8)
    assert plan.target == 18_500
    assert (plan.count, plan.message_tokens, plan.choice) == (1, 4000, "under")


def test_under_chosen_when_overshoot_too_large():
    # over = 20,000 overshoots the 10,000 target by 10,000 > 0.95·6,000; under = 8,000 is fine
    plan = plan_activation([8000, 12_000], pending=25_000 - 9000, threshold=30_000, ratio=0.8)
    assert plan.target == 10_000
    assert plan.choice == "under" and plan.count == 1


def test_forced_max_takes_over_despite_overshoot():
    # floor 24,000: overshoot limit 22,800; over = 38,900 overshoots by 22,900 but leaves 1,100 ≥ 1,000
    chunks = [10_000, 28_900]
    normal = plan_activation(chunks, pending=40_000, threshold=30_000, ratio=0.2)
    forced = plan_activation(chunks, pending=40_000, threshold=30_000, ratio=0.2, force_max=True)
    assert normal.choice == "under" and normal.count == 1
    assert forced.choice == "forced" and forced.count == 2


def test_single_chunk_fallback_to_over():
    # one chunk that leaves only 500 raw tokens: neither rule applies, the lone "over" candidate is taken
    plan = plan_activation([30_000], pending=30_500, threshold=30_000, ratio=0.8)
    assert plan.choice == "fallback_over" and plan.count == 1


def test_activation_is_always_a_prefix_and_nonempty():
    for pending in range(0, 60_000, 1700):
        plan = plan_activation([3000, 7000, 2000, 9000], pending=pending, threshold=30_000, ratio=0.8)
        assert 1 <= plan.count <= 4
        assert plan.message_tokens == sum([3000, 7000, 2000, 9000][: plan.count])
    assert plan_activation([], pending=40_000, threshold=30_000, ratio=0.8).count == 0


def test_retention_floor_and_ratio():
    assert retention_floor(30_000, 0.8) == 6000
    assert retention_floor(30_000, None) == 0  # buffering disabled keeps no raw tail
    assert retention_floor(30_000, 5000) == 5000  # absolute = tokens to retain
    assert activation_ratio(5000, 30_000) == pytest.approx(1 - 5000 / 30_000)
    with pytest.raises(ValueError, match="buffer_activation"):
        activation_ratio(500, 30_000)  # (1, 1000) is invalid
    with pytest.raises(ValueError, match="buffer_activation"):
        activation_ratio(0, 30_000)


def test_resolve_buffer_tokens_and_block_after():
    assert resolve_buffer_tokens(0.2, 30_000) == 6000
    assert resolve_buffer_tokens(4000, 30_000) == 4000
    assert resolve_buffer_tokens(False, 30_000) is None
    with pytest.raises(ValueError, match="smaller than"):
        resolve_buffer_tokens(30_000, 30_000)
    assert resolve_block_after(1.2, 30_000) == 36_000
    assert resolve_block_after(50_000, 30_000) == 50_000
    with pytest.raises(ValueError, match="below the threshold"):
        resolve_block_after(20_000, 30_000)
    with pytest.raises(ValueError, match="multiplier"):
        resolve_block_after(0.5, 30_000)


def test_should_buffer_at_each_interval_and_halves_near_threshold():
    assert not should_buffer(5999, 0, 30_000, 6000)
    assert should_buffer(6000, 0, 30_000, 6000)
    assert not should_buffer(11_000, 6000, 30_000, 6000)
    assert should_buffer(12_100, 6000, 30_000, 6000)
    # ramp point = 30,000 − 6,600 = 23,400: the interval becomes 3,000
    assert buffer_interval(23_399, 30_000, 6000) == 6000
    assert buffer_interval(23_400, 30_000, 6000) == 3000
    assert should_buffer(24_100, 23_500, 30_000, 6000)  # 8 > 7 in 3,000-token steps
    assert not should_buffer(23_900, 23_500, 30_000, 6000)
    assert not should_buffer(30_000, 0, 30_000, 6000)  # at the threshold we observe, not buffer
    assert not should_buffer(12_000, 0, 30_000, None)


def test_dynamic_threshold_for_shared_budget():
    assert dynamic_threshold(30_000, 40_000, 10_000, share_budget=False) == 30_000
    assert dynamic_threshold(30_000, 40_000, 10_000, share_budget=True) == 60_000
    assert dynamic_threshold(30_000, 40_000, 50_000, share_budget=True) == 30_000  # never below the minimum
