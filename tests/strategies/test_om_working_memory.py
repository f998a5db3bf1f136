"""The om strategy with working memory on (strategies.om.params.working_memory): the offline Observer keeps the
user's name and stated preferences, the Actor's system block stays byte-identical while the block changes, and
the cache simulators, driven by the replay driver, show the break of a working-memory update after the system
block and the observation prefix, never inside them."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bench.render import prompt_units
from bench.cachesim import make_simulator
from bench.ingest import replay_question
from bench.prompt import Prompt
from bench.replay import build_timeline
from bench.strategies import make_strategy
from bench.strategies.om import OMParams, OMStrategy
from bench.strategies.base import ReplaySettings
from om_core.context import WORKING_MEMORY_KEY

from tests.helpers.strategies import chat, make_ctx, make_view, offline_models

WM = {"message_tokens": 900, "observation_tokens": 20000, "working_memory": True, "context_layout": "stable_prefix"}
PROFILE = [
    [("user", "Hi! My name is Dana Whitfield and I live in Portland. I love hiking in the Cascades."),
     ("assistant", "Nice to meet you, Dana. The Cascades have great trails.")],
    [("user", "I'm working on a kitchen remodel this spring. I'm allergic to peanuts, by the way."),
     ("assistant", "Good luck with the remodel.")],
    [("user", "My favorite color is teal. I don't like loud restaurants."), ("assistant", "Noted.")],
    [("user", "I moved: I live in Seattle now. I love pottery classes."), ("assistant", "Enjoy Seattle!")],
]


def view():
    """Four sessions, each opening with profile statements, then enough chat to pass the threshold."""
    return make_view([PROFILE[i] + chat(5, f"topic{i}", words=45) for i in range(4)])


def om(params=None):
    return make_strategy("om", {**WM, **(params or {})}, make_ctx(models=offline_models()))


def system_block(p: Prompt) -> list[tuple[str, str]]:
    """The static system block: the benchmark's system prompt and the engine's preamble (m31: its own message
    and '<observations>'; m11: its one system message up to the observations)."""
    out = []
    for s in p.segments:
        if s.key.startswith("sys") or s.key in ("om:preamble", "om:open"):
            out.append((s.key, s.text))
        elif s.key == "om:system":
            out.append((s.key, s.text[: s.text.index("<observations>")]))
    return out


def tokens_before(p: Prompt, k: int) -> int:
    """Tokens of the rendering before segment k (message headers included)."""
    n = 0
    for u in prompt_units(p):
        if u.block >= k:
            break
        n += len(u.ids)
    return n


def index(p: Prompt, key: str) -> int:
    return next(i for i, s in enumerate(p.segments) if s.key == key)


def last_chunk(p: Prompt) -> int:
    return max((i for i, s in enumerate(p.segments) if s.key.startswith("om:chunk:")), default=-1)


class Tap:
    def __init__(self, inner):
        self.inner, self.prompts = inner, []

    async def add_turn(self, turn):
        r = await self.inner.add_turn(turn)
        self.prompts.append(r.prompt)
        return r

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.mark.parametrize("profile", ["m11", "m31"])
async def test_offline_observer_keeps_name_and_preferences_and_the_system_block_never_changes(profile):
    s = om({"profile": profile})
    v = view()
    results = [await s.add_turn(t) for t in build_timeline(v)]
    changed = [i for i, r in enumerate(results) if "working_memory" in r.events]
    assert len(changed) >= 3
    wm = s.memory.working_memory("r-test")
    assert wm is not None and wm.get("name") == "Dana Whitfield" and wm.get("lives in") == "Seattle"
    assert "peanuts" in (wm.get("allergies") or "") and "pottery classes" in (wm.get("likes") or "")
    prompts = [r.prompt for r in results if r.prompt is not None]
    with_wm = [p for p in prompts if any(seg.key == WORKING_MEMORY_KEY for seg in p.segments)]
    assert len({next(seg.text for seg in p.segments if seg.key == WORKING_MEMORY_KEY) for p in with_wm}) >= 3
    blocks = {tuple(system_block(p)) for p in with_wm}
    assert len(blocks) == 1 and "Dana" not in str(blocks)
    assert len(blocks.pop()) == (2 if profile == "m11" else 3)  # the system prompt and the engine's static part
    assert all(p.meta["working_memory_tokens"] > 0 for p in with_wm)
    q = await s.question_prompt("What is my name?", v.question_date, v.question_date_str)
    seg = next(seg for seg in q.segments if seg.key == WORKING_MEMORY_KEY)
    assert "Dana Whitfield" in seg.text and index(q, WORKING_MEMORY_KEY) > last_chunk(q)
    assert q.meta["working_memory_tokens"] == wm.token_count
    # the memory view (what the viewer shows as memory at question time) ends with the block
    view_rows = OMStrategy.memory_view(s.state())
    assert view_rows[-1].kind == "working_memory" and view_rows[-1].text == wm.text()
    assert view_rows[-1].tokens == wm.token_count and view_rows[0].kind == "observations"


def first_diff(a: list, b: list) -> int:
    shape = lambda s: (s.role, s.text, s.key)  # noqa: E731
    return next((i for i, (x, y) in enumerate(zip(a, b)) if shape(x) != shape(y)), min(len(a), len(b)))


async def test_cache_simulators_break_after_the_observation_prefix_when_working_memory_changes():
    tap = Tap(om({"profile": "m31"}))
    sims = {"ideal": make_simulator("ideal"), "openai": make_simulator("openai")}
    out = await replay_question(tap, build_timeline(view()), sims, actor_model="gpt-4o")
    checked, _ = check_breaks(out.turns, tap.prompts)
    assert checked >= 2, "no turn changed an already shown working memory"
    assert all(r["cache"]["openai"]["cached"] <= r["cache"]["ideal"]["cached"] for r in out.turns if r["cache"])


async def test_a_working_memory_edit_alone_is_cached_up_to_its_own_message():
    tap = Tap(om({"profile": "m31"}))
    sims = {"ideal": make_simulator("ideal")}
    tl = build_timeline(view())
    first, rest = tl[:-1], tl[-1:]
    await replay_question(tap, first, sims, actor_model="gpt-4o")
    # an edit between two turns (no observation in between): only the block changes
    at = rest[0].user_at - timedelta(seconds=1)
    tap.inner.memory.set_working_memory("r-test", "- name: Dana W.\n- current projects: garden shed", at)
    out = await replay_question(tap, rest, sims, actor_model="gpt-4o")
    row, p = out.turns[0], tap.prompts[-1]
    assert not row["events"]
    wm = index(p, WORKING_MEMORY_KEY)
    assert "garden shed" in p.segments[wm].text
    cached = row["cache"]["ideal"]["cached"]
    assert tokens_before(p, wm) <= cached < tokens_before(p, wm + 1)


def test_key_params_leave_working_memory_out_while_it_is_off():
    settings = ReplaySettings(actor_model="gpt-4o")
    off = OMStrategy.key_params(OMParams(), settings)
    on = OMStrategy.key_params(OMParams(working_memory=True, working_memory_tokens=300), settings)
    assert "working_memory" not in off["config"]
    assert on["config"]["working_memory"] == {"enabled": True, "max_tokens": 300}
    assert {k: v for k, v in on["config"].items() if k != "working_memory"} == off["config"]


def check_breaks(rows: list[dict], prompts: list) -> tuple[int, int]:
    """For consecutive prompts whose working memory changed: the block sits after the system block and the
    observations, and the break sits where the prompts would part without the block, or at the block, whichever
    comes first (the block never breaks anything before it); the ideal cache reads up to the break. Returns
    (pairs checked, pairs whose break the block itself caused)."""
    checked = at_block = 0
    for a, b in zip(range(len(rows)), range(1, len(rows))):
        pa, pb = prompts[a], prompts[b]
        if pa is None or pb is None or not {WORKING_MEMORY_KEY} <= {s.key for s in pa.segments} & {s.key for s in pb.segments}:
            continue
        wa, wb = index(pa, WORKING_MEMORY_KEY), index(pb, WORKING_MEMORY_KEY)
        if pa.segments[wa].text == pb.segments[wb].text:
            continue
        assert wb > last_chunk(pb) >= len(system_block(pb))
        without = first_diff([s for s in pa.segments if s.key != WORKING_MEMORY_KEY],
                             [s for s in pb.segments if s.key != WORKING_MEMORY_KEY])
        with_wm = first_diff(pa.segments, pb.segments)
        # (an earlier break has another cause: an OTHER-conversations block before the observations, new chunks,
        # a reflection, relative dates on a new day)
        assert with_wm == min(without, wb)
        assert rows[b]["cache"]["ideal"]["cached"] >= tokens_before(pb, with_wm)
        checked += 1
        at_block += with_wm == wb
    return checked, at_block


@pytest.mark.realdata
@pytest.mark.slow
async def test_real_oracle_haystacks_break_only_after_the_observation_prefix():
    import os
    from pathlib import Path

    from bench.benchmarks.longmemeval.loader import load_dataset
    from bench.strategies import StrategyContext
    from om_core.tokens import default_counter

    folder = os.environ.get("LONGMEMEVAL_DATA_DIR")
    if not folder or not any(Path(folder).glob("longmemeval_oracle.json*")):
        pytest.skip("real LongMemEval oracle split needs LONGMEMEVAL_DATA_DIR")
    ds = load_dataset("longmemeval_oracle", folder)
    picked = [i for i in ds.instances if i.question_type == "single-session-preference"][:4] + \
             [i for i in ds.instances if i.question_type == "multi-session"][:4]
    total = changed = 0
    for k, inst in enumerate(picked):
        ctx = StrategyContext(models=offline_models(), embed=None, counter=default_counter(), actor_model="gpt-4o",
                              max_input_tokens=128000, output_budget=800, system_prompt="You are a helpful assistant.",
                              resource_id=f"r-{k}")
        tap = Tap(make_strategy("om", {**WM, "message_tokens": 1500, "context_layout": "mastra"}, ctx))
        out = await replay_question(tap, build_timeline(inst.view()), {"ideal": make_simulator("ideal")},
                                    actor_model="gpt-4o")
        checked, _ = check_breaks(out.turns, tap.prompts)
        total += checked
        changed += sum("working_memory" in r["events"] for r in out.turns)
    assert changed >= 4 and total >= 1, (changed, total)
