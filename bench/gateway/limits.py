"""Per-provider limits that wait instead of failing: RPM/TPM rate limits, AIMD concurrency, Retry-After.

litellm's Router raises when its rpm/tpm are exceeded; a benchmark wants the opposite (queue and go on). The
rates are aiolimiter's `AsyncLimiter`; the AIMD concurrency and the Retry-After pause are ours. One
`ProviderGate` per provider; a call holds a concurrency slot only while its HTTP attempt is in flight, never
while it sleeps between retries.
"""

from __future__ import annotations

import asyncio
import random
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import AsyncIterator

from aiolimiter import AsyncLimiter


class RateLimit:
    """`rate` units (requests or tokens) per `period_s`, bursting up to `rate`: aiolimiter's leaky bucket, served
    in arrival order. `acquire` waits until enough capacity is free; `waits` and `granted` count acquisitions."""

    def __init__(self, rate: float, period_s: float = 60.0) -> None:
        self.limiter = AsyncLimiter(float(rate), float(period_s))
        # aiolimiter wakes the smallest waiting amount first and lets a newcomer take free capacity ahead of a
        # woken waiter; holding this lock while waiting keeps strict FIFO, so a large TPM request never starves
        self._lock = asyncio.Lock()
        self.waits = 0  # how many acquisitions had to wait (observable in tests and reports)
        self.granted = 0

    @property
    def capacity(self) -> float:
        return self.limiter.max_rate

    async def acquire(self, amount: float = 1.0) -> None:
        amount = min(float(amount), self.capacity)  # a request larger than the bucket waits for a full one
        async with self._lock:
            if not self.limiter.has_capacity(amount):
                self.waits += 1
            await self.limiter.acquire(amount)
            self.granted += 1


class AdaptiveConcurrency:
    """A semaphore whose size follows AIMD: ×`decrease` on a rate-limit, +1 after `grow_after` successes.

    Each slot carries the generation it was acquired in; a rate-limit cuts the limit only if its request
    started after the previous cut, so one burst of 429s from requests already in flight counts once.
    """

    def __init__(self, max_limit: int, min_limit: int = 1, decrease: float = 0.8, grow_after: int = 10) -> None:
        self.max_limit = max_limit
        self.min_limit = min_limit
        self.decrease = decrease
        self.grow_after = grow_after
        self.limit = float(max_limit)
        self.in_flight = 0
        self.generation = 0
        self.cuts = 0
        self._successes = 0
        self._cond = asyncio.Condition()

    async def acquire(self) -> int:
        async with self._cond:
            await self._cond.wait_for(lambda: self.in_flight < max(1, int(self.limit)))
            self.in_flight += 1
            return self.generation

    async def release(self) -> None:
        async with self._cond:
            self.in_flight -= 1
            self._cond.notify_all()

    def on_success(self) -> None:
        self._successes += 1
        if self._successes >= self.grow_after and self.limit < self.max_limit:
            self.limit = min(float(self.max_limit), self.limit + 1)
            self._successes = 0

    def on_rate_limited(self, generation: int) -> None:
        if generation != self.generation:
            return  # part of a burst already answered by a cut
        self._successes = 0
        # kept fractional so that small limits shrink by ×0.8 too, not by a whole slot per cut
        self.limit = max(float(self.min_limit), self.limit * self.decrease)
        self.generation += 1
        self.cuts += 1


@dataclass
class ProviderGate:
    """Everything a provider's calls pass through before an HTTP attempt."""

    name: str
    concurrency: AdaptiveConcurrency
    rpm: RateLimit | None = None
    tpm: RateLimit | None = None
    paused_until: float = 0.0  # monotonic time before which no new attempt starts (Retry-After)
    pauses: int = 0
    stats: dict[str, int] = field(default_factory=lambda: {"attempts": 0, "rate_limited": 0})

    def pause_for(self, seconds: float) -> None:
        until = time.monotonic() + seconds
        if until > self.paused_until:
            self.paused_until = until
            self.pauses += 1

    @asynccontextmanager
    async def slot(self, tokens: float = 0.0) -> AsyncIterator[int]:
        delay = self.paused_until - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        if self.rpm is not None:
            await self.rpm.acquire(1)
        if self.tpm is not None and tokens > 0:
            await self.tpm.acquire(tokens)
        generation = await self.concurrency.acquire()
        self.stats["attempts"] += 1
        try:
            yield generation
        finally:
            await self.concurrency.release()

    def on_rate_limited(self, generation: int, retry_after_s: float | None) -> None:
        self.stats["rate_limited"] += 1
        self.concurrency.on_rate_limited(generation)
        if retry_after_s:
            self.pause_for(retry_after_s)


def backoff_delay(attempt: int, base_s: float, max_s: float, retry_after_s: float | None = None,
                  rng: random.Random | None = None) -> float:
    """Exponential backoff with jitter ("equal jitter": half fixed, half random), at least Retry-After."""
    r = rng or random
    expo = min(max_s, base_s * (2 ** max(0, attempt - 1)))
    delay = expo / 2 + r.uniform(0, expo / 2)
    return max(delay, retry_after_s or 0.0)
