"""The SQLite response cache: keys, policies, errors never cached, sharing across tasks and processes."""

from __future__ import annotations

import asyncio
import multiprocessing
import sqlite3
import threading
from pathlib import Path

import pytest

from bench.errors import ConfigError
from bench.gateway import GatewayError
from bench.gateway.response_cache import CachedResponse, ResponseCache, request_key
from om_core.llm import Usage

MSGS = [{"role": "user", "content": "hello"}]


def test_key_is_canonical_and_excludes_secrets_and_routing() -> None:
    a = request_key("chat", "m", MSGS, {"temperature": 0, "max_tokens": 5, "api_key": "sk-1", "api_base": "x"})
    b = request_key("chat", "m", MSGS, {"max_tokens": 5, "temperature": 0, "api_key": "sk-2", "timeout": 9})
    assert a == b and len(a) == 64
    assert a != request_key("chat", "m", MSGS, {"max_tokens": 5, "temperature": 0}, epoch=1)
    assert a != request_key("chat", "m2", MSGS, {"max_tokens": 5, "temperature": 0})
    assert a != request_key("chat", "m", MSGS, {"max_tokens": 5, "temperature": 0.5})
    assert a != request_key("embed", "m", MSGS, {"max_tokens": 5, "temperature": 0})


async def test_roundtrip_and_read_only_policy(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    rw = ResponseCache(path, "rw")
    entry = CachedResponse(text="hi", usage=Usage(100, 5, 80, 0), cost_usd=0.25, latency_s=1.5, response_model="m")
    assert await rw.put("k1", "chat", "m", entry)
    got = await rw.get("k1")
    assert got is not None and got.text == "hi" and got.usage == Usage(100, 5, 80, 0) and got.cost_usd == 0.25
    assert await rw.get("nope") is None and (rw.hits, rw.misses) == (1, 1)
    rw.close()
    ro = ResponseCache(path, "ro")
    assert (await ro.get("k1")) is not None
    assert not await ro.put("k2", "chat", "m", entry)
    assert ro.count() == 1
    ro.close()


def test_read_only_without_a_file_and_unusable_paths_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cache_policy=ro"):
        ResponseCache(tmp_path / "missing.sqlite", "ro")
    (tmp_path / "dir.sqlite").mkdir()
    with pytest.raises(ConfigError, match="not a usable SQLite file"):
        ResponseCache(tmp_path / "dir.sqlite", "rw")


async def test_gateway_policies(make_gateway, fake_server, tmp_path: Path, calls) -> None:
    off = make_gateway(policy="off", tmp=tmp_path / "off", cache_path=None)
    await off.model("actor").complete(MSGS)
    await off.model("actor").complete(MSGS)
    assert fake_server.stats.requests == 2 and not (tmp_path / "off").exists()

    rw = make_gateway(policy="rw")
    first = await rw.model("actor").complete(MSGS)
    hit = await rw.model("actor").complete(MSGS)
    assert fake_server.stats.requests == 3
    assert not first.meta["response_cache_hit"] and hit.meta["response_cache_hit"]
    assert hit.text == first.text and hit.usage == first.usage
    assert hit.meta["cost_usd_paid"] == 0.0 and hit.meta["cost_usd"] == first.meta["cost_usd"]
    await rw.aclose()

    ro = make_gateway(policy="ro")
    assert (await ro.model("actor").complete(MSGS)).meta["response_cache_hit"]
    await ro.model("actor").complete([{"role": "user", "content": "new"}])  # miss: asks, does not store
    assert fake_server.stats.requests == 4
    assert ro.cache is not None and ro.cache.count() == 1
    assert [c.response_cache_hit for c in calls] == [False, False, False, True, True, False]


async def test_errors_are_never_cached(make_gateway, fake_server) -> None:
    fake_server.schedule = ["400"]
    gw = make_gateway()
    with pytest.raises(GatewayError):
        await gw.model("actor").complete(MSGS)
    assert gw.cache is not None and gw.cache.count() == 0
    out = await gw.model("actor").complete(MSGS)  # asks again, now succeeds and is stored
    assert not out.meta["response_cache_hit"] and gw.cache.count() == 1
    assert fake_server.stats.requests == 2


async def test_identical_concurrent_requests_share_one_call(make_gateway, fake_server, calls) -> None:
    fake_server.latency_s = 0.05
    gw = make_gateway()
    outs = await asyncio.gather(*(gw.model("actor").complete(MSGS) for _ in range(10)))
    assert fake_server.stats.requests == 1
    assert len({o.text for o in outs}) == 1
    assert sum(1 for o in outs if o.meta.get("deduplicated")) == 9
    assert sum(1 for c in calls if not c.response_cache_hit) == 1


async def test_two_caches_on_one_file_interleave_writes(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    a, b = ResponseCache(path), ResponseCache(path)
    entry = CachedResponse(text="x")
    await asyncio.gather(*(c.put(f"{name}{i}", "chat", "m", entry) for i in range(40)
                           for name, c in (("a", a), ("b", b))))
    assert a.count() == 80 and (await b.get("a7")) is not None
    a.close()
    b.close()


async def test_a_locked_database_is_retried_not_failed(tmp_path: Path) -> None:
    path = tmp_path / "locked.sqlite"
    cache = ResponseCache(path, busy_timeout_s=0.01)
    blocker = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    released = threading.Timer(0.15, lambda: blocker.execute("COMMIT"))
    released.start()
    ok = await cache.put("k", "chat", "m", CachedResponse(text="after the lock"))
    released.join()
    blocker.close()
    assert ok and cache.lock_retries > 0
    got = await cache.get("k")
    assert got is not None and got.text == "after the lock"
    cache.close()


def _writer(path: str, prefix: str, n: int) -> None:
    async def go() -> None:
        cache = ResponseCache(path)
        for i in range(n):
            await cache.put(f"{prefix}{i}", "chat", "m", CachedResponse(text=f"{prefix}{i}"))
        cache.close()

    asyncio.run(go())


def test_processes_share_one_file(tmp_path: Path) -> None:
    path = str(tmp_path / "multi.sqlite")
    ResponseCache(path).close()
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(path, p, 60)) for p in ("p", "q")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    cache = ResponseCache(path, "ro")
    assert cache.count() == 120
    cache.close()
