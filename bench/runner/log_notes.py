"""Whether OM's observation log stayed bounded, from the stored rows: a warning per run whose log grew well past its
reflection threshold (turns.memory_tokens, the observation tokens before each turn), with the cause: Reflector
outputs refused (om_core's guards; `refusal_notes` says how many) or reflections committed over their target
(the Reflector did not compress enough, so om_core waits for the log to change before it tries again)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

OVER = 1.5  # a log this many times its threshold is reported: one Observer batch past it is normal
REFLECT_EVENT = "reflect"  # om_core.engine.reflect: a reflection was committed


def log_size_notes(db_path: str | Path, rows: list[dict[str, Any]]) -> list[str]:
    """Per OM-like run of the summary's `rows` (those with memory diagnostics) whose observation log reached more
    than OVER x `strategies.<key>.params.observation_tokens` (default: OMParams'): one warning of two lines that
    fit 100 columns, naming the largest log, the threshold, the reflections committed and refused."""
    from bench.runner.run_facts import wrap_note
    from bench.runner.run_facts import event_counts as _event_counts
    from bench.runner.run_facts import strategy_params as _params
    from bench.store import Results
    from bench.strategies.om import OMParams

    with Results(db_path) as res:
        turns = res.turns()
        configs = {r.run_key: r.config for r in res.runs().itertuples()}
    out = []
    for r in rows:
        mem = r.get("memory")
        t = turns[turns.run_key == r["run_key"]]
        if mem is None or not len(t) or t.memory_tokens.isna().all():
            continue
        threshold = int(_params(r["strategy"] or "", configs.get(r["run_key"])).get("observation_tokens")
                        or OMParams.observation_tokens)
        peak = int(t.memory_tokens.max())
        if peak <= OVER * threshold:
            continue
        reflected = int(_event_counts(t, REFLECT_EVENT).sum())
        refused = mem.count("reflector", "rejected") + mem.count("reflector", "truncated")
        causes = (["committed ones came back over their target"] if reflected else []) + (
            [f"refused: {mem.top_reasons(1, roles=False)}"] if refused else [])
        cause = "; ".join(causes) or "no reflection ran"
        # wrapped, not cut: run names are long and the cause comes last
        head = f"warning: {r['label']}: the observation log reached {peak:,} tokens, {peak / threshold:.1f}x " \
               f"the reflection threshold {threshold:,}"
        tail = f"  ({reflected} reflections committed, {refused} refused; cause: {cause})"
        out.append(wrap_note(f"{head}\n{tail}"))
    return out
