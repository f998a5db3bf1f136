import json

import pytest

from bench.errors import ConfigError
from bench.replay import build_timeline
from bench.strategies import make_strategy
from bench.strategies.compaction import EXISTING_SUMMARY, SUMMARIZER_SYSTEM, SUMMARY_PREFIX, SUMMARY_REQUEST

from tests.helpers.strategies import ScriptedModel, chat, is_prefix, make_ctx, make_view


def ctx_with_summarizer(**kw):
    summ = ScriptedModel("summarizer", reply=lambda msgs: f"SUMMARY-{len(summ.calls)}")
    models = {"summarizer": summ, "observer": ScriptedModel("observer"), "reflector": ScriptedModel("reflector")}
    return make_ctx(models=models, **kw), summ


async def replay(strategy, view):
    return [await strategy.add_turn(t) for t in build_timeline(view)]


async def test_no_compaction_below_threshold_prompts_are_append_only():
    ctx, summ = ctx_with_summarizer()
    s = make_strategy("compaction", {}, ctx)
    view = make_view([chat(3, "alpha"), chat(3, "beta")])
    results = await replay(s, view)
    assert not summ.calls and all("compact" not in r.events for r in results)
    prompts = [r.prompt for r in results]
    assert all(is_prefix(a, b) for a, b in zip(prompts, prompts[1:]))  # across sessions too
    msgs = prompts[3].to_messages()
    assert msgs[0]["role"] == "system"
    assert msgs[1] == {"role": "system", "content": "[A new conversation session starts. Date: 2023/05/01 (Mon) 10:00]"}
    assert msgs[-1]["content"] == view.sessions[1].turns[0].content


async def test_compaction_summarises_overflow_keeps_recent_tail_and_chains_summaries():
    ctx, summ = ctx_with_summarizer()
    s = make_strategy("compaction", {"threshold": 1500, "keep_recent_tokens": 400, "summary_max_tokens": 50}, ctx)
    view = make_view([chat(6, f"topic{i}", words=40) for i in range(4)])
    results = await replay(s, view)
    compacted = [i for i, r in enumerate(results) if "compact" in r.events]
    assert len(compacted) >= 2 and len(summ.calls) == len(compacted)
    first, second = summ.calls[0], summ.calls[1]
    assert first[0]["content"] == SUMMARIZER_SYSTEM and first[-1] == {"role": "user", "content": SUMMARY_REQUEST}
    assert first[1]["role"] == "system" and first[1]["content"].startswith("[A new conversation session")  # no summary yet
    assert first[2] == {"role": "user", "content": view.sessions[0].turns[0].content}  # overflow as chat messages
    assert second[1] == {"role": "system", "content": EXISTING_SUMMARY + "SUMMARY-1"}  # chained
    overflow_texts = [m["content"] for m in second[2:-1]]
    assert not set(overflow_texts) & {m["content"] for m in first[2:-1]}  # each message is condensed once
    i = compacted[1]
    p = results[i].prompt
    summary = [seg for seg in p.segments if seg.key.startswith("compact:summary:")]
    assert summary and summary[0].text == SUMMARY_PREFIX + "SUMMARY-2"
    tail = [seg for seg in p.segments if seg.key.startswith("m:")][:-1]  # raw messages kept, minus the new one
    assert sum(ctx.tokens(seg.text) for seg in tail) <= 400
    assert ctx.tokens(p.text) <= 1500 + 200
    # between two compactions the prompt is append-only
    nxt = results[i + 1].prompt
    if "compact" not in results[i + 1].events:
        assert is_prefix(p, nxt)


async def test_threshold_as_a_fraction_of_the_window_and_bad_values():
    ctx, _ = ctx_with_summarizer(max_input_tokens=10000)
    assert make_strategy("compaction", {"threshold": 0.5, "keep_recent_tokens": 1000}, ctx).threshold == 5000
    with pytest.raises(ConfigError, match="keep_recent_tokens"):
        make_strategy("compaction", {"threshold": 1000, "keep_recent_tokens": 2000}, ctx)
    with pytest.raises(ConfigError, match="threshold"):
        make_strategy("compaction", {"threshold": "big"}, ctx)


async def test_question_prompt_and_state_round_trip():
    ctx, summ = ctx_with_summarizer()
    s = make_strategy("compaction", {"threshold": 1500, "keep_recent_tokens": 400}, ctx)
    view = make_view([chat(6, f"topic{i}", words=40) for i in range(3)])
    await replay(s, view)
    st = json.loads(json.dumps(s.state()))
    s2 = make_strategy("compaction", {"threshold": 1500, "keep_recent_tokens": 400}, ctx)
    s2.load_state(st)
    a = await s.question_prompt("Which topics?", view.question_date, view.question_date_str)
    b = await s2.question_prompt("Which topics?", view.question_date, view.question_date_str)
    assert a.segments == b.segments
    assert a.to_messages()[-1] == {"role": "user", "content": f"Current Date: {view.question_date_str}\nQuestion: Which topics?"}
