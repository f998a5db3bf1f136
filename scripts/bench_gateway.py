"""Gateway throughput against the local fake OpenAI server (not a test; prints a table).

For server latency L and concurrency C the ideal throughput is C/L calls per second. We run N calls
through the full path (Gateway → limits → litellm → HTTP → fake server), response cache off, with and
without injected faults, and report achieved throughput as a ratio of the ideal.

    .venv/bin/python scripts/bench_gateway.py [--latency 0.05] [--calls 200] [--conc 1,8,32] [--faults 0.2]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import sys
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the fake server lives in the test helpers

from bench.gateway import Gateway, GatewayConfig, RoleModel  # noqa: E402
from tests.helpers.fakeserver import FakeOpenAIServer  # noqa: E402


@dataclass
class Row:
    conc: int
    faults: float
    calls: int
    wall_s: float
    requests: int
    retries: int
    failed: int
    final_limit: float

    @property
    def throughput(self) -> float:
        return self.calls / self.wall_s


def _serve(conn: Connection, kwargs: dict) -> None:
    """Child process: run the fake server (so its CPU does not compete with the client for one GIL)."""
    with FakeOpenAIServer(**kwargs) as srv:
        conn.send(srv.base_url)
        conn.recv()  # stop signal
        conn.send(srv.stats.requests)


class ServerProcess:
    def __init__(self, **kwargs: object) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, kwargs), daemon=True)

    def __enter__(self) -> "ServerProcess":
        self.proc.start()
        self.base_url: str = self.conn.recv()
        return self

    def stop(self) -> int:
        self.conn.send("stop")
        requests = int(self.conn.recv())
        self.proc.join(10)
        return requests

    def __exit__(self, *exc: object) -> None:
        if self.proc.is_alive():
            self.proc.kill()


async def run_one(srv: ServerProcess, conc: int, n: int, timeout_s: float, backoff_s: float,
                  offset: int, grow_after: int) -> tuple[float, int, int, float]:
    cfg = GatewayConfig(
        roles={"actor": RoleModel("openai/bench-model", {"api_key": "sk-bench", "max_tokens": 32})},
        cache_path=None, cache_policy="off", max_concurrency=conc, timeout_s=timeout_s,
        api_base={"openai": srv.base_url}, backoff_base_s=backoff_s, max_attempts=10, aimd_grow_after=grow_after,
    )
    gw = Gateway(cfg)
    model = gw.model("actor")  # no collect_calls() block: the call records are dropped
    # warm the client pool and litellm's lazy imports outside the timed window
    await model.complete([{"role": "user", "content": "warm-up"}])
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(n):
        queue.put_nowait(i)
    retries = failed = 0

    async def worker() -> None:
        nonlocal retries, failed
        while not queue.empty():
            i = queue.get_nowait()
            try:
                c = await model.complete([{"role": "user", "content": f"call {offset + i}"}])
                retries += c.meta["retries"]
            except Exception:
                failed += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(conc)))
    wall = time.perf_counter() - t0
    limit = gw.provider_stats()["openai"]["concurrency_limit"]
    await gw.aclose()
    return wall, retries, failed, limit


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--conc", default="1,8,32")
    ap.add_argument("--faults", type=float, default=0.2)
    ap.add_argument("--timeout", type=float, default=0.5, help="client timeout; a 'timeout' fault costs this much")
    ap.add_argument("--backoff", type=float, default=0.02, help="backoff base (s)")
    ap.add_argument("--fault-kinds", default="429,500,timeout,malformed")
    ap.add_argument("--grow-after", type=int, default=10, help="AIMD: successes before the limit grows by one")
    args = ap.parse_args()
    rows: list[Row] = []
    offset = 0
    for fr in (0.0, args.faults):
        for conc in [int(c) for c in args.conc.split(",")]:
            n = args.calls if conc > 1 else max(20, args.calls // 8)  # C=1 is slow; fewer calls suffice
            kinds = tuple(args.fault_kinds.split(","))
            with ServerProcess(latency_s=args.latency, fault_rate=fr, fault_kinds=kinds, seed=7,
                               retry_after_s=args.latency, hang_s=args.timeout * 4, count_tokens=False) as srv:
                wall, retries, failed, limit = asyncio.run(
                    run_one(srv, conc, n, args.timeout, args.backoff, offset, args.grow_after))
                rows.append(Row(conc, fr, n, wall, srv.stop() - 1, retries, failed, limit))
            offset += n
    print(f"fake server latency L={args.latency * 1000:.0f} ms, client timeout {args.timeout}s, "
          f"backoff base {args.backoff}s, AIMD grow-after {args.grow_after}, cache off; "
          f"fault kinds {args.fault_kinds}; server in its own process")
    print(f"{'faults':>6} {'C':>3} {'N':>4} {'wall s':>7} {'calls/s':>8} {'ideal':>7} {'ratio':>6} "
          f"{'HTTP req':>8} {'retries':>7} {'failed':>6} {'limit end':>9}")
    for r in rows:
        ideal = r.conc / args.latency
        print(f"{r.faults:>6.0%} {r.conc:>3} {r.calls:>4} {r.wall_s:>7.2f} {r.throughput:>8.1f} {ideal:>7.0f} "
              f"{r.throughput / ideal:>6.2f} {r.requests:>8} {r.retries:>7} {r.failed:>6} {r.final_limit:>9.0f}")


if __name__ == "__main__":
    main()
