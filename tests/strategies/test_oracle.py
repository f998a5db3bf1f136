from datetime import datetime

from bench.benchmarks.longmemeval.dates import format_lme_date
from bench.data.schema import Instance, Session, Turn
from bench.replay import build_timeline
from bench.strategies import make_strategy, strategy_class

from tests.helpers.strategies import make_ctx


def instance() -> Instance:
    def sess(sid, day, text):
        d = datetime(2023, 5, day, 9, 0)
        return Session(sid, d, format_lme_date(d), (Turn("user", text), Turn("assistant", f"noted: {text}")))

    return Instance(
        "q1", "single-session-user", "What is my dog's name?", "Pixel",
        datetime(2023, 5, 20, 9, 0), format_lme_date(datetime(2023, 5, 20, 9, 0)),
        (sess("filler_1", 1, "I like tea"), sess("answer_abc", 3, "My dog is called Pixel"), sess("filler_2", 5, "Rain today")),
        ("answer_abc",),
    )


def test_only_oracle_uses_the_oracle_view():
    assert strategy_class("oracle").uses_oracle_view is True
    for name in ("full_context", "rag", "compaction", "om"):
        assert getattr(strategy_class(name), "uses_oracle_view", False) is False


async def test_oracle_renders_the_evidence_sessions_like_full_context():
    inst = instance()
    oracle = make_strategy("oracle", {}, make_ctx())
    full = make_strategy("full_context", {}, make_ctx())
    ov = inst.oracle_view()
    for turn in build_timeline(ov):
        a, b = await oracle.add_turn(turn), await full.add_turn(turn)
        assert a.prompt.segments == b.prompt.segments
    q = await oracle.question_prompt(inst.question, inst.question_date, inst.question_date_str)
    text = q.text
    assert "Pixel" in text and "tea" not in text and "Rain" not in text
    assert "answer_abc" not in text  # labels stay opaque even in the oracle view
    assert "### Session 1:" in text and "### Session 2:" not in text
