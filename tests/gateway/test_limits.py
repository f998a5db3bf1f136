"""Limits wait instead of failing: rate limits (aiolimiter), AIMD concurrency, backoff, error classification."""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys

import pytest

from bench.errors import ConfigError
from bench.gateway import GatewayConfig, RoleModel
from bench.gateway.errors import classify
from bench.gateway.limits import AdaptiveConcurrency, RateLimit, backoff_delay


async def test_token_bucket_waits_and_grants_in_order() -> None:
    bucket = RateLimit(rate=3, period_s=0.06)
    order: list[int] = []

    async def take(i: int) -> None:
        await bucket.acquire()
        order.append(i)

    tasks = []
    for i in range(9):
        tasks.append(asyncio.create_task(take(i)))
        await asyncio.sleep(0)  # queue them in a known order
    await asyncio.gather(*tasks)
    assert order == list(range(9))
    assert bucket.granted == 9 and bucket.waits >= 1


async def test_oversized_request_waits_for_a_full_bucket() -> None:
    bucket = RateLimit(rate=10, period_s=0.05)
    await bucket.acquire(10)
    await bucket.acquire(50)  # clamped to capacity: it waits for a refill rather than failing
    assert bucket.waits == 1


async def test_a_large_request_is_served_in_its_turn() -> None:
    limit = RateLimit(rate=10, period_s=0.05)
    await limit.acquire(10)  # empty now
    order: list[str] = []

    async def take(name: str, amount: float) -> None:
        await limit.acquire(amount)
        order.append(name)

    tasks = [asyncio.create_task(take("large", 8))]
    await asyncio.sleep(0)
    tasks += [asyncio.create_task(take(f"small{i}", 1)) for i in range(4)]
    await asyncio.gather(*tasks)
    # arrival order: smaller requests queued behind never overtake (aiolimiter alone wakes the smallest first)
    assert order == ["large", "small0", "small1", "small2", "small3"]
    assert limit.granted == 6 and limit.waits == 5


async def test_gateway_rpm_limit_queues_calls(make_gateway, fake_server, calls) -> None:
    gw = make_gateway(policy="off", cache_path=None, rpm={"openai": 2}, limit_period_s=0.05)
    model = gw.model("actor")
    outs = await asyncio.gather(*(model.complete([{"role": "user", "content": f"r{i}"}]) for i in range(6)))
    assert len(outs) == 6 and all(c.error is None for c in calls)
    assert fake_server.stats.requests == 6 and sum(fake_server.stats.faults.values()) == 0
    stats = gw.provider_stats()["openai"]
    assert stats["rpm_waits"] >= 1 and stats["attempts"] == 6


async def test_gateway_tpm_limit_queues_calls(make_gateway, fake_server) -> None:
    gw = make_gateway(policy="off", cache_path=None, tpm={"openai": 40}, limit_period_s=0.05)
    model = gw.model("actor")
    await asyncio.gather(*(model.complete([{"role": "user", "content": f"token budget {i}"}], max_tokens=20)
                           for i in range(4)))
    assert fake_server.stats.requests == 4 and gw.provider_stats()["openai"]["tpm_waits"] >= 1


async def test_gateway_concurrency_is_bounded(make_gateway, fake_server) -> None:
    fake_server.latency_s = 0.02
    gw = make_gateway(policy="off", cache_path=None, max_concurrency=3)
    model = gw.model("actor")
    await asyncio.gather(*(model.complete([{"role": "user", "content": f"c{i}"}]) for i in range(12)))
    assert fake_server.stats.requests == 12 and fake_server.stats.max_in_flight <= 3


async def test_aimd_cuts_once_per_generation_and_grows_back() -> None:
    ac = AdaptiveConcurrency(max_limit=10, grow_after=3)
    g1 = await ac.acquire()
    g2 = await ac.acquire()
    ac.on_rate_limited(g1)
    ac.on_rate_limited(g2)  # same burst: no second cut
    assert ac.limit == pytest.approx(8) and ac.cuts == 1
    g3 = await ac.acquire()
    ac.on_rate_limited(g3)  # started after the cut: counts
    assert ac.limit == pytest.approx(6.4) and ac.cuts == 2
    for _ in range(3):
        ac.on_success()
    assert ac.limit == pytest.approx(7.4)
    for _ in range(100):
        ac.on_success()
    assert ac.limit == 10


async def test_aimd_blocks_at_the_limit_until_release() -> None:
    ac = AdaptiveConcurrency(max_limit=2)
    await ac.acquire()
    await ac.acquire()
    third = asyncio.create_task(ac.acquire())
    await asyncio.sleep(0.01)
    assert not third.done() and ac.in_flight == 2
    await ac.release()
    await asyncio.wait_for(third, 1)
    assert ac.in_flight == 2


def test_backoff_is_exponential_jittered_capped_and_honours_retry_after() -> None:
    rng = random.Random(0)
    d = [backoff_delay(n, 1.0, 60.0, rng=rng) for n in range(1, 9)]
    assert 0.5 <= d[0] <= 1.0 and 4.0 <= d[3] <= 8.0 and all(x <= 60.0 for x in d)
    assert backoff_delay(1, 0.01, 1.0, retry_after_s=2.5, rng=rng) == 2.5


class _Err(Exception):
    def __init__(self, status: int, name: str = "") -> None:
        super().__init__(f"status {status}")
        self.status_code = status


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [(429, "rate_limit", True), (500, "server", True), (503, "server", True), (408, "timeout", True),
     (401, "auth", False), (403, "auth", False), (400, "bad_request", False), (404, "not_found", False)],
)
def test_classify_by_status(status: int, kind: str, retryable: bool) -> None:
    info = classify(_Err(status))
    assert (info.kind, info.retryable) == (kind, retryable)


def test_config_errors_are_one_line_and_name_the_fix() -> None:
    with pytest.raises(ConfigError, match="cache_policy='maybe' is invalid; use one of rw, ro, off"):
        GatewayConfig(roles={"actor": RoleModel("offline/reader")}, cache_policy="maybe")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="rpm.openai=0 must be a positive number"):
        GatewayConfig(roles={"actor": RoleModel("offline/reader")}, rpm={"openai": 0})
    with pytest.raises(ConfigError, match="max_concurrency"):
        GatewayConfig(roles={"actor": RoleModel("offline/reader")}, max_concurrency=0)
    from bench import offline
    from bench.gateway import Gateway

    offline.register()
    with pytest.raises(ConfigError, match="the offline provider has no model 'oracle'; use offline/<one of obs"):
        Gateway(GatewayConfig(roles={"actor": RoleModel("offline/oracle")}, cache_policy="off"))
    cfg = GatewayConfig.from_dict({"roles": {"actor": {"model": "offline/reader", "params": {"temperature": 0}}},
                                   "cache_policy": "off"})
    assert cfg.role_model("reader").params == {"temperature": 0}  # reader <-> actor alias
    with pytest.raises(ConfigError, match="unknown setting"):
        GatewayConfig.from_dict({"roles": {"actor": "offline/reader"}, "retries": 3})


@pytest.mark.slow  # a fresh Python process
def test_importing_the_gateway_imports_neither_litellm_nor_the_offline_engine() -> None:
    code = ("import sys, bench.gateway; print('bench.offline' in sys.modules); import bench.offline; "
            "bench.offline.register(); print('litellm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
