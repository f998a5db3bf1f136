"""Live progress per run: questions done of total, elapsed time and ETA, billed tokens and dollars (real calls
this command paid for) apart from simulated tokens (Actor prompts measured during replay, never sent), retries
and the cache hit rate of one profile. A rich bar on a terminal; sparse log lines in CI or when output is not a
TTY; nothing with mode 'off'. Notes (the budget stop) always print, and go to the run log."""

from __future__ import annotations

import logging
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from bench.runner.budget import billed_calls
from bench.runner.question import PAST_WINDOW_PREFIX
from bench.store.contract import QuestionResult

log = logging.getLogger("bench.run")


@dataclass
class _Tally:
    total: int = 0
    done: int = 0
    failed: int = 0
    billed_tokens: int = 0  # prompt + completion tokens of calls paid for now
    cost: float = 0.0  # USD of those calls
    simulated_tokens: int = 0  # Actor prompt tokens measured during replay (never sent)
    retries: int = 0
    cached: float = 0.0
    prompt: float = 0.0
    started: float = field(default_factory=time.monotonic)
    processed: int = 0  # questions this command finished, written or not (the ETA's rate)
    written: int = 0  # questions whose rows were written (a stored error included)
    stored_errors: int = 0  # of those, the ones stored with an error (the next run retries them)
    past_window: int = 0  # of those, prompts refused for the Actor's window (final: the next run does not retry them)
    last_log: int = -1


def resolve_mode(mode: str) -> str:
    if mode != "auto":
        return mode
    if os.environ.get("CI") or not sys.stderr.isatty():
        return "log"
    return "rich"


def tokens(n: float) -> str:
    """A token count in 5 characters or fewer: 950, 12.3k, 5.9M."""
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= div:
            return f"{n / div:.1f}{unit}"
    return f"{n:.0f}"


def duration(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else (f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s")


class Progress:
    def __init__(self, mode: str = "auto", profile: str = "openai", console: Any = None) -> None:
        """`console`: the rich Console the bar draws on (default: stderr's)."""
        self.mode = resolve_mode(mode)
        self._console = console
        self.profile = profile  # whose cache hit rate is shown
        self._tallies: dict[str, _Tally] = {}
        self._rich: Any = None
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> "Progress":
        if self.mode == "rich":
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as RichProgress
            from rich.table import Column

            # n/N, elapsed and ETA keep their width; the name is cut, then the bar goes, and the stats text (the
            # only column that may shrink) is cut with an ellipsis: at 80 columns the counts stay readable
            self._rich = RichProgress(
                TextColumn("[bold]{task.description}", table_column=Column(no_wrap=True, max_width=24,
                                                                             overflow="ellipsis")),
                BarColumn(bar_width=10), MofNCompleteColumn(table_column=Column(no_wrap=True)),
                TimeElapsedColumn(table_column=Column(no_wrap=True)), TextColumn("eta"),
                TimeRemainingColumn(table_column=Column(no_wrap=True)),
                TextColumn("{task.fields[stats]}", table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1,
                                                                          min_width=0)),
                transient=False, console=self._console, expand=True,
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
        t.processed += 1
        if failed:  # raised before its rows were written: nothing of it is stored
            t.failed += 1
        if result is not None:
            t.written += 1
            error = result.sample.error or ""
            final = error.startswith(PAST_WINDOW_PREFIX)
            t.stored_errors += bool(error) and not final
            t.past_window += final
            for c in billed_calls(result):
                t.billed_tokens += c.prompt_tokens + c.completion_tokens
                t.cost += c.cost_usd or 0.0
                t.retries += c.retries
            for c in result.calls:
                if c.simulated:
                    t.simulated_tokens += c.prompt_tokens
                if c.role == "actor":
                    prof = c.cache.get(self.profile)
                    if prof:
                        t.cached += float(prof.get("cached", 0))
                        t.prompt += c.prompt_tokens
        stats = self.stats(t)
        if self._rich is not None:
            self._rich.update(self._tasks[name], completed=t.done, stats=stats)
        elif self.mode == "log":
            step = max(1, t.total // 10)
            if t.done == t.total or t.done // step != t.last_log:
                t.last_log = t.done // step
                elapsed = time.monotonic() - t.started
                print(f"[{name}] {t.done}/{t.total} elapsed {duration(elapsed)} eta {self._eta(t)} {stats}",
                      file=sys.stderr, flush=True)

    def end_run(self, name: str) -> None:
        t = self._tallies.get(name)
        if t is None:
            return
        line = f"[{name}] finished: {self.counts(t)} in {duration(time.monotonic() - t.started)}; {self.stats(t)}"
        log.info(line)
        if self.mode == "log":
            print(line, file=sys.stderr, flush=True)

    def note(self, text: str) -> None:
        """A line the user must see whatever the mode (the budget stop); also written to the run log."""
        log.info(text)
        if self._rich is not None:
            self._rich.console.print(text, markup=False)
        else:
            print(text, file=sys.stderr, flush=True)

    @staticmethod
    def counts(t: _Tally) -> str:
        """What this command wrote, e.g. `4 written (1 with a stored error), 4 failed and not written`."""
        text = f"{t.written} written"
        if t.stored_errors:
            text += f" ({t.stored_errors} with a stored error, retried by the next run)"
        if t.past_window:
            text += (f" ({t.past_window} refused for the Actor's window, not retried while the window and answer "
                     "reserve stay the same)")
        if t.failed:
            text += f", {t.failed} failed and not written"
        return text

    def stats(self, t: _Tally) -> str:
        hit = f"{t.cached / t.prompt:.0%}" if t.prompt else "n/a"
        fail = f" failed {t.failed}" if t.failed else ""
        return (f"billed {tokens(t.billed_tokens)} tok ${t.cost:.4f} | simulated {tokens(t.simulated_tokens)} tok | "
                f"retries {t.retries} | {self.profile}-hit {hit}{fail}")

    @staticmethod
    def _eta(t: _Tally) -> str:
        if not t.processed:
            return "?"
        rate = (time.monotonic() - t.started) / t.processed
        return duration(rate * (t.total - t.done))
