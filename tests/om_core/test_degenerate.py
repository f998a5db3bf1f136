import random
import string

from om_core.degenerate import detect_degenerate_repetition


def rand_text(n: int, seed: int, alphabet: str = string.ascii_letters + "  ") -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(n))


def test_short_text_never_degenerate():
    assert not detect_degenerate_repetition("abcdefghij" * 199)  # 1,990 chars of pure repetition


def test_long_pure_repetition_is_degenerate():
    assert detect_degenerate_repetition("abcdefghij" * 200)


def test_window_rule_above_threshold():
    # len 3000 -> step 60; second half repeats the first at an offset of 25 steps:
    # 22 of 47 sampled windows were seen before (46.8% > 40%).
    a = rand_text(1500, 1)
    assert detect_degenerate_repetition(a + a)


def test_window_rule_below_threshold():
    # Repeat at offset 1800 (30 steps): 17 of 47 windows repeat (36.2% <= 40%).
    a = rand_text(1800, 2)
    assert not detect_degenerate_repetition(a + a[:1200])


def test_long_line_rule():
    assert detect_degenerate_repetition(rand_text(50_001, 3))
    assert not detect_degenerate_repetition(rand_text(50_000, 3))


def _lines_text(unique: int, repeated: int) -> str:
    lines = [rand_text(250, 100 + i) for i in range(unique)]
    lines += ["the same line repeated!!"] * repeated  # exactly 24 chars
    return "\n".join(lines)


def test_duplicate_line_rule_above_threshold():
    text = _lines_text(8, 12)  # 20 counted lines, 11 duplicates: 55% > 50%
    assert len(text) >= 2000
    assert detect_degenerate_repetition(text)


def test_duplicate_line_rule_at_threshold_is_not_degenerate():
    assert not detect_degenerate_repetition(_lines_text(9, 11))  # 10 of 20 duplicates: exactly 50%


def test_duplicate_line_rule_needs_twenty_lines():
    text = _lines_text(8, 11)  # 19 counted lines, 10 duplicates
    assert len(text) >= 2000
    assert not detect_degenerate_repetition(text)


def test_duplicate_line_rule_ignores_short_lines():
    lines = [rand_text(250, 200 + i) for i in range(8)] + ["short line repeated!!!"] * 12  # 22 chars
    assert not detect_degenerate_repetition("\n".join(lines))


def test_varied_observations_are_fine():
    text = "\n".join(f"* 🔴 (09:{i % 60:02d}) User stated fact number {i} about {rand_text(30, i)}" for i in range(80))
    assert not detect_degenerate_repetition(text)
