"""The spending cap of one command (`run.max_usd`): no question starts once what this command spent plus an
estimate of the questions in flight would pass the cap. Finished questions are kept, so the same command run
again continues where it stopped.

With retries of wrong answers (answer.retries, a strategy with a question thread) the estimate of a question in
flight is its worst case: the mean first-try spend plus `retry_max` more tries (Actor answer + judge) at the mean
cost of one try, as if every question were answered wrongly every time."""

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


RETRY_PHASE = "retry"  # the calls phase of a retry's Actor call (bench.runner.question.RETRY_PHASE)


def split_spend(result: QuestionResult) -> tuple[float, float]:
    """(USD of the question without its retries, USD of one try: the first answer and the judge calls after it,
    before any retry). The calls are in order: ingestion, answer, judge, then each retry's Actor and judge calls."""
    calls = billed_calls(result)
    first_retry = next((i for i, c in enumerate(calls) if c.phase == RETRY_PHASE), len(calls))
    base = float(sum(c.cost_usd or 0.0 for c in calls[:first_retry]))
    one_try = float(sum(c.cost_usd or 0.0 for c in calls[:first_retry] if c.phase in ("answer", "judge")))
    return base, one_try


class Budget:
    """Shared by the workers of every strategy of one job (they run on one event loop: no lock needed).

    The estimate of a question in flight is the mean spend of the questions this command finished; until one
    has finished, questions run one at a time."""

    def __init__(self, max_usd: float | None, retry_max: int = 0) -> None:
        self.max_usd = max_usd
        self.retry_max = retry_max  # retries a question of the running strategy may make (set per strategy)
        self.spent = 0.0
        self.retried = 0.0  # spend of the finished questions' retries
        self.tries = 0.0  # spend of one try (answer + judge) summed over the finished questions
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
        mean = self.worst_case()
        if self.spent + (self.in_flight + 1) * mean <= self.max_usd:
            return "start"
        return "wait" if self.in_flight else "stop"

    def worst_case(self) -> float:
        """The estimate of one question in flight: the mean spend (without retries) plus `retry_max` tries at the
        mean cost of one; 0.0 before a question finished."""
        if not self.finished:
            return 0.0
        return (self.spent - self.retried + self.retry_max * self.tries) / self.finished

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
            base, one_try = split_spend(result)
            self.retried += spent_usd(result) - base
            self.tries += one_try
            self.finished += 1
        self._changed.set()
        self._changed = asyncio.Event()

    def stop_line(self, left: int) -> str:
        plan = (f" (planned for the worst case: {self.retry_max} retries of every question)" if self.retry_max
                else "")
        return (f"budget: run.max_usd=${self.max_usd:g} reached{plan} (${self.spent:.4f} spent by this command); {left} "
                "questions not started. Run the same command again to continue where it stopped (finished questions "
                "are kept), with a higher run.max_usd to spend more.")
