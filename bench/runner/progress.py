"""Live progress per run: questions done of total, calls, tokens, dollars and cache hit rate so far, ETA.
A rich bar on a terminal; sparse log lines in CI or when output is not a TTY; nothing with mode 'off'."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from bench.store.contract import QuestionResult


@dataclass
class _Tally:
    total: int = 0
    done: int = 0
    failed: int = 0
    calls: int = 0
    tokens: int = 0
    cost: float = 0.0
    cached: float = 0.0
    prompt: float = 0.0
    started: float = field(default_factory=time.monotonic)
    computed: int = 0
    last_log: int = -1


def resolve_mode(mode: str) -> str:
    if mode != "auto":
        return mode
    if os.environ.get("CI") or not sys.stderr.isatty():
        return "log"
    return "rich"


class Progress:
    def __init__(self, mode: str = "auto", profile: str = "openai") -> None:
        self.mode = resolve_mode(mode)
        self.profile = profile  # whose cache hit rate is shown
        self._tallies: dict[str, _Tally] = {}
        self._rich: Any = None
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> "Progress":
        if self.mode == "rich":
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn, TimeRemainingColumn

            self._rich = RichProgress(
                TextColumn("[bold]{task.description:<13}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[stats]}"), TimeRemainingColumn(), transient=False,
            )
            self._rich.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._rich is not None:
            self._rich.__exit__(*exc)
            self._rich = None

    def start_run(self, name: str, total: int, done: int = 0) -> None:
        self._tallies[name] = _Tally(total=total, done=done)
        if self._rich is not None:
            self._tasks[name] = self._rich.add_task(name, total=total, completed=done, stats="")
        elif self.mode == "log":
            print(f"[{name}] {done}/{total} already done, {total - done} to compute", file=sys.stderr, flush=True)

    def advance(self, name: str, result: QuestionResult | None = None, failed: bool = False) -> None:
        t = self._tallies[name]
        t.done += 1
        t.computed += 1
        if failed:
            t.failed += 1
        if result is not None:
            for c in result.calls:
                t.calls += 0 if c.simulated else 1
                t.tokens += c.prompt_tokens + c.completion_tokens
                t.cost += c.cost_usd
                if c.role == "actor":
                    prof = c.cache.get(self.profile)
                    if prof:
                        t.cached += float(prof.get("cached", 0))
                        t.prompt += c.prompt_tokens
        stats = self._stats(t)
        if self._rich is not None:
            self._rich.update(self._tasks[name], completed=t.done, stats=stats)
        elif self.mode == "log":
            step = max(1, t.total // 10)
            if t.done == t.total or t.done // step != t.last_log:
                t.last_log = t.done // step
                print(f"[{name}] {t.done}/{t.total} {stats} eta {self._eta(t)}", file=sys.stderr, flush=True)

    def end_run(self, name: str) -> None:
        t = self._tallies.get(name)
        if t and self.mode == "log":
            print(f"[{name}] finished: {t.computed} computed, {t.failed} failed", file=sys.stderr, flush=True)

    def _stats(self, t: _Tally) -> str:
        hit = f"{t.cached / t.prompt:.0%}" if t.prompt else "n/a"
        fail = f" failed {t.failed}" if t.failed else ""
        return f"calls {t.calls} tok {t.tokens:,} ${t.cost:.4f} {self.profile}-hit {hit}{fail}"

    @staticmethod
    def _eta(t: _Tally) -> str:
        if not t.computed:
            return "?"
        rate = (time.monotonic() - t.started) / t.computed
        return f"{rate * (t.total - t.done):.0f}s"
