"""Throughput of the cache simulators on a synthetic growing conversation.

One haystack: a system prompt, a memory block that grows every 10 turns (a segment that changes in
place), 250 user/assistant turns (prompt grows to ~120k tokens), and every 20 turns an old assistant
message rewritten (a change in the middle). Turns are 30 s apart; every 25 turns a new session starts 8 h
later (in-memory and 5m/1h caches expire, 24h retention survives). Every turn's prompt goes through every profile.
Times are reported as ratios to tokenising all distinct text once with tiktoken in this process.

    .venv/bin/python scripts/perf_cachesim.py [--turns 250] [--haystacks 1]
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.cachesim import PROFILES, make_simulator  # noqa: E402
from bench.prompt import Prompt  # noqa: E402
from bench.render import prompt_units  # noqa: E402
from om_core.formats import get_encoding  # noqa: E402


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def conversation(rng: random.Random, turns: int) -> list[Prompt]:
    vocab = ["".join(rng.choice("etaoinshrdlucmfw") for _ in range(rng.randint(2, 7))) for _ in range(3000)]

    def text(n_words: int) -> str:
        return " ".join(rng.choice(vocab) for _ in range(n_words))

    system = text(1100)
    memory = [text(220)]
    history: list[tuple[str, str]] = []
    prompts = []
    for k in range(turns):
        if k and k % 10 == 0:
            memory.append(text(30))  # the memory block grows in place
        if k >= 40 and k % 20 == 0:
            j = 2 * rng.randrange(5, k // 2) + 1  # rewrite an old assistant message
            history[j] = ("assistant", text(150))
        history.append(("user", text(52)))
        p = Prompt()
        p.add("system", system, key="sys", breakpoint=True)
        p.add("system", "\n".join(memory), key="memory", breakpoint=True, new_message=False)
        for i, (role, t) in enumerate(history):
            p.add(role, t, key=f"turn:{i}", breakpoint=(i == len(history) - 1))
        prompts.append(p)
        history.append(("assistant", text(150)))
    return prompts


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=250)
    ap.add_argument("--haystacks", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(0)
    names = list(PROFILES)
    t_tok = t_render = 0.0
    t_obs = dict.fromkeys(names, 0.0)
    n_prompts = n_tokens = max_prompt = n_distinct = 0
    cached = dict.fromkeys(names, 0)
    rss0 = rss_mb()
    for _ in range(args.haystacks):
        prompts = conversation(rng, args.turns)
        enc = get_encoding("o200k_base")
        enc.encode("warm up")
        distinct = {s.text for p in prompts for s in p.segments}
        t0 = time.perf_counter()
        for s in distinct:
            n_distinct += len(enc.encode(s, disallowed_special=()))
        t_tok += time.perf_counter() - t0
        sims = {n: make_simulator(n) for n in names}
        for turn, p in enumerate(prompts):
            t0 = time.perf_counter()
            units = prompt_units(p)
            t_render += time.perf_counter() - t0
            n = sum(len(u.ids) for u in units)
            n_prompts, n_tokens, max_prompt = n_prompts + 1, n_tokens + n, max(max_prompt, n)
            for name, sim in sims.items():
                t0 = time.perf_counter()
                t = turn * 30.0 + (turn // 25) * 8 * 3600.0
                r = sim.observe(t, p, model="gpt-4o" if "openai" in name else "claude-sonnet-4-5")
                t_obs[name] += time.perf_counter() - t0
                cached[name] += r.cached_tokens
    print(f"{args.haystacks} haystack(s) x {args.turns} turns: {n_prompts} prompts, {n_tokens:,} prompt tokens, "
          f"largest {max_prompt:,}")
    print(f"tokenise distinct text once (tiktoken): {t_tok:.3f} s  = 1.00")
    print(f"render prompts (Prompt.units)         : {t_render:.3f} s  = {t_render / t_tok:.2f}")
    for name in names:
        print(f"{name:<14} observe: {t_obs[name]:.3f} s = {t_obs[name] / t_tok:5.2f}x   "
              f"hit rate {cached[name] / n_tokens:.3f}")
    total = t_render + sum(t_obs.values())
    per_prompt = sum(t_obs.values()) / n_prompts / len(names)
    print(f"all profiles + render: {total:.3f} s = {total / t_tok:.2f}x; per prompt per profile "
          f"{1e3 * per_prompt:.2f} ms = {1e9 * per_prompt * n_prompts / n_tokens:.1f} ns per prompt token; "
          f"tiktoken {1e9 * t_tok / n_distinct:.0f} ns per distinct token")
    print(f"peak RSS {rss_mb():.0f} MiB (before the run {rss0:.0f} MiB)")


if __name__ == "__main__":
    main()
