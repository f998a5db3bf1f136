"""Working-memory steps: what the Observer is shown of the block, and the updates its outputs bring.

Not a Mastra feature (om_core.working_memory); runs only with `OMConfig.working_memory.enabled`. The block is
the resource's, in either scope. An update is written right after the observation that produced it, in its
own transaction: observations never depend on it, and the next observation can repeat a lost update.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable, Sequence

from om_core.engine.state import EngineContext, TurnLog
from om_core.records import BufferedChunk
from om_core.working_memory import Entry, WorkingMemory, format_entries, parse_entries, update_working_memory

WORKING_MEMORY_EVENT = "working_memory"  # turn event: the block changed


def observer_working_memory(om: EngineContext, resource_id: str) -> dict[str, Any]:
    """Keyword arguments of `om_core.observer.observe` that ask for the `<working-memory>` section and show the
    current block ({} when the feature is off)."""
    if not om.config.working_memory.enabled:
        return {}
    current = om.storage.get_working_memory(resource_id)
    return {"working_memory": current.text() if current is not None else ""}


def apply_updates(om: EngineContext, resource_id: str, updates: Iterable[Entry] | None, now: datetime,
                  log: TurnLog | None) -> WorkingMemory | None:
    """Merge `updates` into the resource's block, cap it, store it; the new block, or None when nothing
    changed (or the feature is off). Logs `working_memory` when it changed."""
    cfg = om.config.working_memory
    todo = list(updates or ())
    if not cfg.enabled or not todo:
        return None
    new = update_working_memory(om.storage.get_working_memory(resource_id), resource_id, todo,
                                max_tokens=cfg.max_tokens, count=om.counter.count_string,
                                truncate=om.counter.truncate, now=om.now(now))
    if new is None:
        return None
    om.storage.save_working_memory(new)
    if log is not None:
        log.append(WORKING_MEMORY_EVENT)
    return new


def chunk_updates(chunks: Sequence[BufferedChunk], cycle_ids: Iterable[str]) -> list[Entry]:
    """The working-memory updates of the activated chunks (by cycle id), in buffering order."""
    done = set(cycle_ids)
    return [e for c in chunks if c.cycle_id in done for e in (c.working_memory or ())]


def replace_block(om: EngineContext, resource_id: str, block: str | Sequence[Entry], now: datetime) -> WorkingMemory:
    """Set the block to exactly `block` (a user's edit: `label: value` lines, or (label, value) pairs), capped as
    the Observer's updates are."""
    cfg = om.config.working_memory
    entries = parse_entries(block) if isinstance(block, str) else [(str(a), str(b)) for a, b in block]
    new = update_working_memory(None, resource_id, entries, max_tokens=cfg.max_tokens, count=om.counter.count_string,
                                truncate=om.counter.truncate, now=now)
    stored = new or WorkingMemory(resource_id, (), 0, now)
    om.storage.save_working_memory(stored)
    return stored


def actor_text(om: EngineContext, resource_id: str) -> str | None:
    """The block's lines for the Actor's context (None when off or empty)."""
    if not om.config.working_memory.enabled:
        return None
    current = om.storage.get_working_memory(resource_id)
    return format_entries(current.entries) if current is not None and current.entries else None
