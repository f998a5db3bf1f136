"""What OM's memory held when the question was asked, read from the om strategy's checkpoint state: the
observation log the Actor saw, the logs earlier generations replaced (reflections), chunks still buffered, and
the working memory (when the option was on).

The state is om_core's `Storage.export_state` snapshot (records with their history, threads, messages, working
memory) under `"om"`; records are read with `OMRecord.from_dict` and the working memory with
`WorkingMemory.from_dict`, so this follows om_core's formats."""

from __future__ import annotations

from typing import Any, Mapping

from bench.store.contract import MemoryRow


def memory_view(state: Mapping[str, Any]) -> list[MemoryRow]:
    """Per lookup key (one for resource scope, one per thread for thread scope), newest generation first: its
    active observations (`observations`), its buffered chunks (`buffered`) and buffered reflection
    (`buffered_reflection`), then each older generation's log (`reflection` when a reflection produced it,
    else `initial`); last, the resource's working memory (`working_memory`, its `- label: value` lines) when it
    has one. [] for a state without records."""
    from om_core.records import OMRecord
    from om_core.working_memory import WorkingMemory

    snap = state.get("om") if isinstance(state, Mapping) else None
    raw = snap.get("records") if isinstance(snap, Mapping) else None
    if not raw:
        return []
    records = [OMRecord.from_dict(r) for r in raw]
    by_key: dict[str, list[OMRecord]] = {}
    for r in records:
        by_key.setdefault(r.lookup_key, []).append(r)
    out: list[MemoryRow] = []

    def add(kind: str, text: str, generation: int | None, tokens: int | None) -> None:
        out.append(MemoryRow(item_idx=len(out), kind=kind, text=text, generation=generation, tokens=tokens))

    for key in sorted(by_key):
        history = sorted(by_key[key], key=lambda r: r.generation_count, reverse=True)
        head = history[0]
        add("observations", head.active_observations, head.generation_count, head.observation_token_count)
        for c in head.buffered_observation_chunks:
            add("buffered", c.observations, head.generation_count, c.token_count)
        if head.buffered_reflection:
            add("buffered_reflection", head.buffered_reflection, head.generation_count,
                head.buffered_reflection_tokens)
        for old in history[1:]:
            add("reflection" if old.origin_type == "reflection" else "initial", old.active_observations,
                old.generation_count, old.observation_token_count)
    working = snap.get("working_memory") if isinstance(snap, Mapping) else None
    if working:
        wm = WorkingMemory.from_dict(working)
        if wm.entries:
            add("working_memory", wm.text(), None, wm.token_count)
    return out
