import pytest

from bench.errors import ConfigError
from bench.benchmarks.longmemeval.reader_prompt import render_reader_prompt, session_block
from bench.replay import build_timeline
from bench.strategies import make_strategy

from tests.helpers.strategies import chat, is_prefix, make_ctx, make_view


async def replay(strategy, view):
    results = []
    for turn in build_timeline(view):
        results.append(await strategy.add_turn(turn))
    return results


def body(prompt, from_message=1):
    """Text of the prompt after the system message."""
    return "".join(s.text for s in prompt.segments if s.message_index >= from_message)


async def test_turn_prompt_layout_and_question_prompt_is_the_official_reader_prompt():
    view = make_view([chat(2, "alpha"), chat(2, "beta"), chat(2, "gamma")])
    s = make_strategy("full_context", {}, make_ctx())
    results = await replay(s, view)
    p = results[5].prompt  # session 3, second user turn
    msgs = p.to_messages()
    assert msgs[0] == {"role": "system", "content": "You are a helpful assistant."}
    assert msgs[1]["role"] == "user"
    assert msgs[1]["content"].endswith(session_block(1, view.sessions[0]) + session_block(2, view.sessions[1]))
    assert [m["role"] for m in msgs[2:]] == ["user", "assistant", "user"]
    assert msgs[-1]["content"] == view.sessions[2].turns[2].content
    q = await s.question_prompt(view.question, view.question_date, view.question_date_str)
    assert body(q) == render_reader_prompt(view.sessions, view.question, view.question_date_str)
    assert q.meta["truncated"] is False


async def test_prompts_grow_append_only_within_a_session():
    view = make_view([chat(3, "alpha"), chat(4, "beta")])
    s = make_strategy("full_context", {}, make_ctx())
    prompts = [r.prompt for r in await replay(s, view)]
    within = [(a, b) for a, b in zip(prompts, prompts[1:])]
    assert all(is_prefix(a, b) for a, b in within[3:])  # session 2
    assert not is_prefix(prompts[2], prompts[3])  # the finished session is re-rendered as a block
    assert [x.text for x in prompts[3].segments[:2]] == [x.text for x in prompts[2].segments[:2]]  # system + instruction stay
    # cache breakpoints: system prompt, end of the history message, last message
    assert [i for i, x in enumerate(prompts[4].segments) if x.breakpoint] == [0, 3, len(prompts[4].segments) - 1]


async def test_a_finished_session_keeps_the_earlier_blocks_segment_objects():
    """A session's close adds one block to the history message: the prompt after it holds the very Segment objects
    of the blocks before (so the renderer and the simulators reuse their rendering by identity); only the block that
    loses the history's breakpoint and the new block are new objects."""
    view = make_view([chat(2, "alpha"), chat(2, "beta"), chat(2, "gamma"), chat(2, "delta")])
    s = make_strategy("full_context", {}, make_ctx())
    prompts = [r.prompt for r in await replay(s, view)]
    before, after = prompts[4].segments, prompts[6].segments  # session 3 and session 4, first user turn each
    n = 2 + 2 * 2  # system, instruction, two blocks of two segments
    assert all(a is b for a, b in zip(before[: n - 1], after[: n - 1]))
    assert after[n - 1] is not before[n - 1] and after[n - 1].text == before[n - 1].text
    assert not after[n - 1].breakpoint and after[n + 1].breakpoint
    q = await s.question_prompt(view.question, view.question_date, view.question_date_str)
    assert body(q) == render_reader_prompt(view.sessions, view.question, view.question_date_str)


async def test_drop_oldest_truncation_keeps_the_newest_sessions_within_budget():
    view = make_view([chat(3, f"topic{i}", words=60) for i in range(6)])
    ctx = make_ctx(max_input_tokens=2200, output_budget=100)
    s = make_strategy("full_context", {"reserve_tokens": 100}, ctx)
    results = await replay(s, view)
    events = [e for r in results for e in r.events]
    assert "truncate" in events
    last = results[-1].prompt
    assert last.meta["truncated"] and last.meta["dropped_sessions"] >= 1
    history = sum(ctx.tokens(seg.text) for seg in last.segments[2:])
    assert history <= 2000
    q = await s.question_prompt("Which topic?", view.question_date, view.question_date_str)
    text = body(q)
    assert "topic5" in text and "topic0" not in text
    assert "### Session 1:" in text  # renumbered from the first kept session
    # once the cut stops moving, no new event: events only where the prefix changed
    assert results[0].events == []


async def test_keep_head_truncation_keeps_the_oldest_like_the_official_script():
    view = make_view([chat(3, f"topic{i}", words=60) for i in range(6)])
    ctx = make_ctx(max_input_tokens=2200, output_budget=100)
    s = make_strategy("full_context", {"reserve_tokens": 100, "truncation": "keep_head"}, ctx)
    await replay(s, view)
    q = await s.question_prompt("Which topic?", view.question_date, view.question_date_str)
    text = body(q)
    assert "topic0" in text and "topic5" not in text
    assert q.meta["truncated"] and q.meta["partial_session"]
    assert sum(ctx.tokens(seg.text) for seg in q.segments[2:-1]) <= 2000


async def test_state_round_trip_gives_the_same_question_prompt():
    view = make_view([chat(2, "alpha"), chat(3, "beta")])
    s = make_strategy("full_context", {}, make_ctx())
    await replay(s, view)
    st = s.state()
    import json

    s2 = make_strategy("full_context", {}, make_ctx())
    s2.load_state(json.loads(json.dumps(st)))
    a = await s.question_prompt("q?", view.question_date, view.question_date_str)
    b = await s2.question_prompt("q?", view.question_date, view.question_date_str)
    assert a.segments == b.segments


def test_bad_params_are_one_line_config_errors():
    with pytest.raises(ConfigError, match="strategies.full_context.params.reserv_tokens"):
        make_strategy("full_context", {"reserv_tokens": 1}, make_ctx())
    with pytest.raises(ConfigError, match="truncation"):
        make_strategy("full_context", {"truncation": "middle"}, make_ctx())
    with pytest.raises(ConfigError, match="reserve_tokens"):
        make_strategy("full_context", {"reserve_tokens": 200000}, make_ctx())
    with pytest.raises(ConfigError, match="unknown strategy"):
        make_strategy("memgpt", {}, make_ctx())
    # the runner's common params are accepted everywhere
    make_strategy("full_context", {"method": "direct", "history_format": "nl", "await_background": True}, make_ctx())
