"""Python's cyclic collector during a replay: what is loaded before it is frozen, young collections run less often.

A replay allocates millions of short-lived objects (token lists, segments, rows) that reference counting frees;
CPython's default gen-0 threshold (700 allocations) then runs a young collection every few hundred of them, and
each full collection would walk the dataset and litellm's modules again. Freezing what exists when the replay
starts (`gc.freeze`: the dataset, imported modules) and raising the thresholds cut that work (measured with
`ombench perf --clock cpu --limit 10`, the seven strategies side by side: -8.6% CPU); cycles are still collected,
only in larger batches. Used by `ombench perf`, `ombench run` and the dry run; everything is restored on exit.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

# allocations between gen-0 collections, gen-0 collections per gen-1, gen-1 per gen-2 (CPython: 700, 10, 10)
REPLAY_THRESHOLDS = (50_000, 20, 100)


@contextmanager
def replay_gc() -> Iterator[None]:
    """Freeze every object alive now and raise the collector's thresholds until the block ends (then unfreeze
    and restore them). `refreeze()` inside the block freezes what was loaded since (litellm's first import)."""
    before = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(*REPLAY_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


def refreeze() -> None:
    """Freeze what was allocated since `replay_gc` began and is still alive (a module imported on first use)."""
    if gc.isenabled() and gc.get_freeze_count():
        gc.collect()
        gc.freeze()
