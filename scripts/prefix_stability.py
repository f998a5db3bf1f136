"""Prefix stability of OM's Actor context on real LongMemEval haystacks: the share of consecutive Actor renders
whose memory block (the context from its start through the end of the observations, `om_core.context.
memory_prefix`) is an exact prefix of the next render's. That share bounds how much of the memory a provider's
prefix cache can reuse from one call to the next.

Each question's haystack is replayed through `om_core.ObservationalMemory` turn by turn (one render per user turn,
`prepare_turn`), with the OFFLINE ENGINE as Observer and Reflector (rule-based stand-ins, not an LLM: the figures
describe the engine's layout and bookkeeping, not any model's memory). Mastra's thresholds (30k / 40k tokens)
unless given. Configurations:

* m31-thread:           m31, thread scope, the whole haystack as one conversation (async buffering on)
* m11-resource:         m11, resource scope, one thread per session in date order (Mastra's benchmark replay)
* m31-resource-mastra:  m31, resource scope, sessions interleaved `--width` at a time, Mastra's layout
* m31-resource-stable:  the same with `context_layout: stable_prefix` (OTHER-conversations block after the
                        observations)

    LONGMEMEVAL_DATA_DIR=/work/shared/data .venv/bin/python scripts/prefix_stability.py [--questions 3] [--ids a,b]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.benchmarks.longmemeval.loader import load_dataset  # noqa: E402
from bench.replay import ReplayTurn, build_timeline  # noqa: E402
from om_core import ContextMessage, InMemoryStorage, Message, ObservationalMemory, OMConfig  # noqa: E402
from om_core.formats import prefix_stability  # noqa: E402

CONFIGS: dict[str, dict[str, Any]] = {
    "m31-thread": {"profile": "m31", "scope": "thread"},
    "m11-resource": {"profile": "m11", "scope": "resource", "obscure_thread_ids": True},
    "m31-resource-mastra": {"profile": "m31", "scope": "resource", "obscure_thread_ids": True},
    "m31-resource-stable": {"profile": "m31", "scope": "resource", "obscure_thread_ids": True,
                            "context_layout": "stable_prefix"},
}
INTERLEAVED = {"m31-resource-mastra", "m31-resource-stable"}


def interleave(timeline: list[ReplayTurn], width: int) -> list[ReplayTurn]:
    """Sessions taken `width` at a time, their turns round-robin (a user juggling several chats), re-stamped one
    minute apart from the first session's date of each group so the clock never runs backwards."""
    sessions: dict[int, list[ReplayTurn]] = {}
    for t in timeline:
        sessions.setdefault(t.session_index, []).append(t)
    order = sorted(sessions)
    out: list[ReplayTurn] = []
    clock = None
    for g in range(0, len(order), width):
        group = [sessions[k] for k in order[g:g + width]]
        base = group[0][0].user_at
        clock = base if clock is None or base > clock else clock
        for r in range(max(len(s) for s in group)):
            for turns in group:
                if r < len(turns):
                    clock += timedelta(minutes=1)
                    out.append(replace(turns[r], index=len(out), user_at=clock,
                                       assistant_at=clock + timedelta(seconds=5)))
    return out


@dataclass
class Outcome:
    kept: int = 0
    pairs: int = 0
    renders: int = 0
    observe: int = 0
    reflect: int = 0
    seconds: float = 0.0


async def replay(turns: list[ReplayTurn], cfg: OMConfig, models: dict[str, Any]) -> tuple[list[list[ContextMessage]],
                                                                                         list[str]]:
    om = ObservationalMemory(cfg, InMemoryStorage(), models["observer"], models["reflector"])
    renders: list[list[ContextMessage]] = []
    events: list[str] = []
    counts: dict[str, int] = {}
    one_thread = cfg.scope == "thread"
    for t in turns:
        tid = "chat" if one_thread else t.thread_id
        k = counts[tid] = counts.get(tid, 0) + 1
        if t.user is not None:
            ctx = await om.prepare_turn("r", tid, [Message(f"{tid}-{k}u", "user", t.user, t.user_at)], t.user_at)
            renders.append(ctx.messages)
            events += ctx.events
        if t.assistant is not None:
            events += await om.finish_turn("r", tid, [Message(f"{tid}-{k}a", "assistant", t.assistant,
                                                              t.assistant_at)], t.assistant_at)
        await om.wait_idle()
        events += om.take_background_events("r", tid)
    return renders, events


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="longmemeval_s", help="dataset name or path (default longmemeval_s)")
    ap.add_argument("--questions", type=int, default=3,
                    help="how many questions, evenly spaced over the dataset (default 3)")
    ap.add_argument("--ids", default="", help="comma-separated question ids instead of --questions")
    ap.add_argument("--width", type=int, default=3, help="sessions interleaved at a time (default 3)")
    ap.add_argument("--message-tokens", type=int, default=30_000)
    ap.add_argument("--observation-tokens", type=int, default=40_000)
    ap.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated subset of " + ", ".join(CONFIGS))
    args = ap.parse_args()

    from bench.perf import offline_gateway

    gw = offline_gateway()
    models = {r: gw.model(r) for r in ("observer", "reflector")}
    ds = load_dataset(args.dataset)
    names = [c for c in args.configs.split(",") if c]
    total = {n: Outcome() for n in names}
    if args.ids:
        wanted = set(args.ids.split(","))
        chosen = [i for i in ds.instances if i.question_id in wanted]
    else:
        n = len(ds.instances)
        chosen = [ds.instances[k * n // args.questions] for k in range(args.questions)]
    for inst in chosen:
        timeline = build_timeline(inst.view())
        for name in names:
            cfg = OMConfig.from_dict({**CONFIGS[name], "observation": {"message_tokens": args.message_tokens},
                                      "reflection": {"observation_tokens": args.observation_tokens}})
            turns = interleave(timeline, args.width) if name in INTERLEAVED else timeline
            start = time.perf_counter()
            renders, events = await replay(turns, cfg, models)
            kept, pairs = prefix_stability(renders)
            o = total[name]
            o.kept += kept
            o.pairs += pairs
            o.renders += len(renders)
            o.observe += events.count("observe") + events.count("activate")
            o.reflect += events.count("reflect") + events.count("activate_reflection")
            o.seconds += time.perf_counter() - start
            print(f"  {inst.question_id:<14} {name:<22} kept {kept:>4}/{pairs:<4} renders {len(renders):>4}",
                  file=sys.stderr)
    print(f"{args.dataset}: {', '.join(i.question_id for i in chosen)}; offline engine "
          f"(rule-based, not an LLM); thresholds {args.message_tokens}/{args.observation_tokens} tokens; "
          f"interleaving width {args.width}")
    print(f"{'configuration':<22}{'renders':>9}{'pairs':>8}{'kept':>7}{'share':>8}{'obs+act':>9}{'reflect':>9}")
    for name, o in total.items():
        share = f"{100 * o.kept / o.pairs:6.1f}%" if o.pairs else "     -"
        print(f"{name:<22}{o.renders:>9}{o.pairs:>8}{o.kept:>7}{share:>8}{o.observe:>9}{o.reflect:>9}")


if __name__ == "__main__":
    asyncio.run(main())
