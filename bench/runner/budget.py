"""The spending cap of one command (`run.max_usd`): no question starts once what this command spent plus an
estimate of the questions in flight would pass the cap. Finished questions are kept, so the same command run
again continues where it stopped."""

from __future__ import annotations

import asyncio
from typing import Literal

from bench.store.contract import CallRow, QuestionResult

Decision = Literal["start", "wait", "stop"]


def billed_calls(result: QuestionResult) -> list[CallRow]:
    """The calls of the question this command paid for: real calls, less response-cache hits (paid earlier) and
    less the ingestion calls of a restored checkpoint (paid by the run that saved it)."""
    restored = bool(result.sample.checkpoint_restored)
    return [c for c in result.calls
            if not c.simulated and not c.response_cache_hit and not (restored and c.phase == "ingest")]


def spent_usd(result: QuestionResult) -> float:
    """USD this command paid for the question (list prices of its `billed_calls`)."""
    return float(sum(c.cost_usd or 0.0 for c in billed_calls(result)))


class Budget:
    """Shared by the workers of every strategy of one job (they run on one event loop: no lock needed).

    The estimate of a question in flight is the mean spend of the questions this command finished; until one
    has finished, questions run one at a time."""

    def __init__(self, max_usd: float | None) -> None:
        self.max_usd = max_usd
        self.spent = 0.0
        self.finished = 0
        self.in_flight = 0
        self.stopped = False  # the cap stopped scheduling at least once
        self.announced = False  # the stop line was printed (once per job)
        self._changed = asyncio.Event()

    def decide(self) -> Decision:
        if self.max_usd is None:
            return "start"
        if self.spent >= self.max_usd:
            return "stop"
        if self.finished == 0:
            return "start" if self.in_flight == 0 else "wait"
        mean = self.spent / self.finished
        if self.spent + (self.in_flight + 1) * mean <= self.max_usd:
            return "start"
        return "wait" if self.in_flight else "stop"

    async def acquire(self) -> bool:
        """Wait until a question may start (True), or the cap says no more (False; `stopped` is set)."""
        while True:
            d = self.decide()
            if d == "start":
                self.in_flight += 1
                return True
            if d == "stop":
                self.stopped = True
                return False
            await self._changed.wait()  # a question in flight finishes: decide again

    def release(self, result: QuestionResult | None) -> None:
        """A question finished (its result) or failed (None: what it spent is unknown)."""
        self.in_flight -= 1
        if result is not None:
            self.spent += spent_usd(result)
            self.finished += 1
        self._changed.set()
        self._changed = asyncio.Event()

    def stop_line(self, left: int) -> str:
        return (f"budget: run.max_usd=${self.max_usd:g} reached (${self.spent:.4f} spent by this command); {left} "
                "questions not started. Run the same command again to continue where it stopped (finished questions "
                "are kept), with a higher run.max_usd to spend more.")
