"""How far a faithful, well-formed observation log stays from each output guard's threshold, measured on real
LongMemEval haystacks.

Each question's haystack is replayed through `om_core.ObservationalMemory` with the OFFLINE ENGINE as Observer
and Reflector (rule-based stand-ins, not an LLM: they always write well-formed, faithful logs in om_core's
format). Every Observer and Reflector exchange is recorded and judged again with `om_core.review.review_output`;
the script prints, per configuration, the largest value each overlap measure reached (copy of the input, echo of
om_core's prompt), the longest counting run, and every refusal (a faithful log should have none).

    LONGMEMEVAL_DATA_DIR=/work/shared/data .venv/bin/python scripts/guard_margins.py [--questions 6]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.benchmarks.longmemeval.loader import load_dataset  # noqa: E402
from bench.replay import build_timeline  # noqa: E402
from om_core import InMemoryStorage, Message, ObservationalMemory, OMConfig  # noqa: E402
from om_core import Completion  # noqa: E402
from om_core.formats import (  # noqa: E402
    COPY_LINE_SHARE,
    COPY_REPRODUCED_SHARE,
    ECHO_LINE_SHARE,
    detect_degenerate_repetition,
    is_observation_line,
    longest_count,
    reproduced_share,
    review_output,
    verbatim_line_share,
)

CONFIGS: dict[str, dict[str, Any]] = {
    "m31-resource": {"profile": "m31", "scope": "resource", "obscure_thread_ids": True},
    "m11-resource": {"profile": "m11", "scope": "resource", "obscure_thread_ids": True},
    "m31-thread": {"profile": "m31", "scope": "thread"},
}


@dataclass
class Recorder:
    """A ChatModel that forwards to `inner` and keeps every (request, completion)."""

    inner: Any
    exchanges: list[tuple[list[dict[str, Any]], Completion]] = field(default_factory=list)

    async def complete(self, messages: list[dict[str, Any]], **params: Any) -> Completion:
        out: Completion = await self.inner.complete(messages, **params)
        self.exchanges.append((messages, out))
        return out


@dataclass
class Margins:
    calls: Counter[str] = field(default_factory=Counter)
    copy_lines: float = 0.0
    copy_reproduced: float = 0.0
    echo: float = 0.0
    count_run: int = 0
    loops: int = 0
    refused: Counter[str] = field(default_factory=Counter)

    def add(self, role: str, profile: str, messages: list[dict[str, Any]], completion: Completion) -> None:
        r = review_output(role, profile, messages, completion, degenerate_check=True)
        c = r.candidate
        self.calls[role] += 1
        if role == "observer":
            self.copy_lines = max(self.copy_lines, verbatim_line_share(c.judged_text, c.source,
                                                                       whole_line=is_observation_line))
            self.copy_reproduced = max(self.copy_reproduced, reproduced_share(c.judged_text, c.source))
        self.echo = max(self.echo, verbatim_line_share(c.judged_text, c.instructions, whole_line=is_observation_line))
        self.count_run = max(self.count_run, longest_count(completion.text))
        self.loops += detect_degenerate_repetition(completion.text, source=c.source)
        if r.reason:
            self.refused[f"{role}:{r.reason}"] += 1


async def replay(inst: Any, cfg: OMConfig, models: dict[str, Recorder]) -> None:
    om = ObservationalMemory(cfg, InMemoryStorage(), models["observer"], models["reflector"])
    counts: dict[str, int] = {}
    for t in build_timeline(inst.view()):
        tid = "chat" if cfg.scope == "thread" else t.thread_id
        k = counts[tid] = counts.get(tid, 0) + 1
        if t.user is not None:
            await om.prepare_turn("r", tid, [Message(f"{tid}-{k}u", "user", t.user, t.user_at)], t.user_at)
        if t.assistant is not None:
            await om.finish_turn("r", tid, [Message(f"{tid}-{k}a", "assistant", t.assistant, t.assistant_at)],
                                 t.assistant_at)
        await om.wait_idle()
        om.take_background_events("r", tid)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="longmemeval_s", help="dataset name or path (default longmemeval_s)")
    ap.add_argument("--questions", type=int, default=6, help="questions, evenly spaced over the dataset")
    ap.add_argument("--message-tokens", type=int, default=8_000, help="Observer threshold (small: more calls)")
    ap.add_argument("--observation-tokens", type=int, default=6_000, help="Reflector threshold (small: reflections)")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated subset of " + ", ".join(CONFIGS))
    args = ap.parse_args()

    from bench.perf import offline_gateway

    gw = offline_gateway()
    ds = load_dataset(args.dataset)
    n = len(ds.instances)
    chosen = [ds.instances[k * n // args.questions] for k in range(args.questions)]
    names = [c for c in args.configs.split(",") if c]
    total = {name: Margins() for name in names}
    for inst in chosen:
        for name in names:
            cfg = OMConfig.from_dict({**CONFIGS[name], "observation": {"message_tokens": args.message_tokens},
                                      "reflection": {"observation_tokens": args.observation_tokens}})
            models = {r: Recorder(gw.model(r)) for r in ("observer", "reflector")}
            await replay(inst, cfg, models)
            for role, rec in models.items():
                for messages, completion in rec.exchanges:
                    total[name].add(role, cfg.profile, messages, completion)
            print(f"  {inst.question_id:<14} {name:<14} observer {len(models['observer'].exchanges):>3} "
                  f"reflector {len(models['reflector'].exchanges):>3}", file=sys.stderr)
    print(f"{args.dataset}: {', '.join(i.question_id for i in chosen)}; OFFLINE ENGINE (rule-based, not an LLM); "
          f"thresholds {args.message_tokens}/{args.observation_tokens} tokens")
    print(f"{'configuration':<15}{'obs':>5}{'refl':>5}{'copy lines':>12}{'reproduced':>12}{'echo':>8}"
          f"{'count run':>11}{'loops':>7}  refused")
    for name, m in total.items():
        print(f"{name:<15}{m.calls['observer']:>5}{m.calls['reflector']:>5}{m.copy_lines:>12.3f}"
              f"{m.copy_reproduced:>12.3f}{m.echo:>8.3f}{m.count_run:>11}{m.loops:>7}  {dict(m.refused) or 'none'}")
    print(f"thresholds: copy lines {COPY_LINE_SHARE}, reproduced {COPY_REPRODUCED_SHARE}, echo {ECHO_LINE_SHARE}, "
          "counting run 30")


if __name__ == "__main__":
    asyncio.run(main())
