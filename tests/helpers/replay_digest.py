"""Digests of what a replay produced, per strategy and question: every Actor prompt and background request (the
messages, byte for byte), the turn rows (events, token counts, simulated cache results per profile), the
question-time prompt and its cache results, om_core's output verdicts and the strategy's exported state (OM's
observations, records and messages). Used by tests/test_replay_golden.py to prove a speed-up changed nothing.

Regenerate the golden file only when a change is meant to alter replays:
    python -m tests.helpers.replay_digest --write
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import json
import re
from pathlib import Path
from typing import Any, Sequence

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "replay.json"
QUESTIONS = 5  # the first N questions of LongMemEval_S
STRATEGIES = ("full_context", "rag", "compaction", "om", "om_m11", "oracle", "decay")
PROFILES = ("openai", "anthropic", "vllm")


_RANDOM = re.compile(r"om-[0-9a-f]{32}|(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])")  # om_core's uuid4 record / cycle ids


def _h(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, default=str)
    seen: dict[str, str] = {}  # each random id becomes its order of appearance, so the digest is reproducible
    text = _RANDOM.sub(lambda m: seen.setdefault(m.group(0), f"<id{len(seen)}>"), text)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def digest_ingestion(res: Any) -> dict[str, str]:
    """Short sha256 digests of the parts of one `bench.ingest.Ingestion`."""
    # wall time and the process-wide issue number are the things that vary between runs
    calls = [{k: v for k, v in dataclasses.asdict(c).items() if k != "issued"} | {"latency_s": 0} for c in res.calls]
    return {
        "turns": _h(res.turns),
        "prompts": _h([c["messages"] for c in calls if c["role"] == "actor"]),
        # concurrent background calls (one Observer call per thread) are recorded as they finish: compared as a set
        "background": _h(sorted(json.dumps(c, sort_keys=True, default=str) for c in calls if c["role"] != "actor")),
        "question": _h([res.question_prompt.to_messages(), res.question_cache, str(res.question_time)]),
        "outputs": _h(sorted(json.dumps(dataclasses.asdict(o), sort_keys=True) for o in res.outputs)),  # as they finish
        "state": _h(res.strategy.state()),
    }


async def compute(instances: Sequence[Any], strategies: Sequence[str] = STRATEGIES) -> dict[str, dict[str, dict[str, str]]]:
    """{strategy: {question_id: digests}}: each instance replayed through each strategy of `experiment=perf`
    (bench.perf's config: offline engine in every role, the three cache profiles)."""
    from bench.ingest import ingest_question
    from bench.assemble import cache_simulators, configured_strategy
    from bench.perf import offline_gateway, perf_config
    from om_core.tokens import default_counter

    cfg = perf_config()
    make_sims = cache_simulators(PROFILES, cfg.cachesim.params)
    gateway = offline_gateway()
    out: dict[str, dict[str, dict[str, str]]] = {}
    for key in strategies:
        spec = configured_strategy(cfg, key)
        for inst in instances:
            res = await ingest_question(inst, spec, gateway, default_counter(), make_sims(), keep_messages=True)
            out.setdefault(key, {})[inst.question_id] = digest_ingestion(res)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true", help=f"write {GOLDEN}")
    args = ap.parse_args()
    from bench.benchmarks.longmemeval.loader import load_dataset

    got = asyncio.run(compute(load_dataset("longmemeval_s").instances[:QUESTIONS]))
    if args.write:
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    print(json.dumps(got, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
