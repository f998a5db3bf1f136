"""`ombench` that kills itself with SIGKILL at a named moment, for crash tests and `make soak`.

    KILL_AT=<moment>:<n> python -m tests.helpers.killpoints <ombench args...>

runs `ombench <args>` in this process with the moment's function wrapped so that its n-th occurrence (1-based,
counted in this process) ends the process with SIGKILL, the way a power cut or the OOM killer would: no
`finally`, no atexit, no flush. Without KILL_AT it is plain `ombench`. The moments:

| moment | the process dies |
|---|---|
| `model_call` | right after the n-th model call through the gateway (Observer, Reflector, answer, judge) is recorded: a question in flight |
| `question` | right after the n-th question's rows are written (between questions) |
| `checkpoint_write` | halfway through writing the n-th checkpoint's temporary file (before its rename) |
| `duckdb_write` | inside the n-th question's DuckDB transaction: samples and calls inserted, not committed |
| `om_sqlite_write` | inside an OM SQLite transaction: the n-th write statement executed, not committed |
| `shard_write` | halfway through the n-th shard file's temporary (a sweep job, before its rename) |
| `merge` | inside the merge transaction (MergeShards at the end of a sweep, or `ombench merge`): rows of the n-th table inserted, not committed |
| `response_cache_write` | inside the n-th response-cache insert, before it commits |

Only code running in this process is wrapped: sweeps must use Hydra's basic launcher (the default).

    PAUSE_AT=question:<n> PAUSE_FILE=<path> python -m tests.helpers.killpoints <ombench args...>

pauses instead, right after the n-th question's rows are written (the results file open, the run mid-way): it
creates `<path>.paused`, then waits until `<path>` exists (at most PAUSE_MAX_S seconds) and goes on. A test uses
it to act while a run holds its files, whatever the machine's speed.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any, Callable

ENV = "KILL_AT"
PAUSE_ENV, PAUSE_FILE_ENV = "PAUSE_AT", "PAUSE_FILE"
PAUSE_MAX_S = 300.0


def die() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)


class _Counter:
    def __init__(self, n: int) -> None:
        self.n = n
        self.seen = 0

    def hit(self) -> bool:
        self.seen += 1
        return self.seen == self.n


def _wrap(owner: Any, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    setattr(owner, name, make(getattr(owner, name)))


def _half_then_die(path: Any, data: bytes) -> None:
    """Write half of `data` into a temporary beside `path` (as bench.fsio names them), then die."""
    from pathlib import Path

    from bench.fsio import temp_path

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(Path(path))
    with open(tmp, "wb") as fh:
        fh.write(data[: max(1, len(data) // 2)])
        fh.flush()
        os.fsync(fh.fileno())
    die()


def install(spec: str) -> None:
    """Arm the kill point `moment:n`. Raises ValueError for an unknown moment."""
    moment, _, count = spec.partition(":")
    c = _Counter(int(count or 1))
    if moment == "model_call":
        import bench.gateway.gateway as gw  # every model call, the offline engine's too, is recorded there

        def make_record(orig: Callable[..., Any]) -> Callable[..., Any]:
            def record_call(*a: Any, **k: Any) -> Any:
                out = orig(*a, **k)
                if c.hit():
                    die()
                return out
            return record_call

        _wrap(gw, "record_call", make_record)
    elif moment == "question":
        from bench.store.writer import Store

        def make_write(orig: Callable[..., Any]) -> Callable[..., Any]:
            def write_questions(self: Any, *a: Any, **k: Any) -> Any:
                out = orig(self, *a, **k)
                if c.hit():
                    die()
                return out
            return write_questions

        _wrap(Store, "write_questions", make_write)
    elif moment == "checkpoint_write":
        import bench.runner.checkpoint as cp

        def make_atomic(orig: Callable[..., Any]) -> Callable[..., Any]:
            def atomic_write_bytes(path: Any, data: bytes, **k: Any) -> Any:
                if c.hit():
                    _half_then_die(path, data)
                return orig(path, data, **k)
            return atomic_write_bytes

        _wrap(cp, "atomic_write_bytes", make_atomic)
    elif moment == "duckdb_write":
        import bench.store.writer as writer

        def make_insert(orig: Callable[..., Any]) -> Callable[..., Any]:
            def insert_rows(con: Any, table: str, rows: list[dict[str, Any]]) -> None:
                orig(con, table, rows)
                if table == "calls" and c.hit():  # samples and calls are in, the transaction is open
                    die()
            return insert_rows

        _wrap(writer, "insert_rows", make_insert)
    elif moment == "om_sqlite_write":
        from om_core.storage.sqlite import SQLiteStorage

        def make_exec(orig: Callable[..., Any]) -> Callable[..., Any]:
            def _exec(self: Any, sql: str, params: Any = ()) -> Any:
                out = orig(self, sql, params)
                writing = self._depth and sql.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
                if writing and self.path != ":memory:" and c.hit():
                    die()
                return out
            return _exec

        _wrap(SQLiteStorage, "_exec", make_exec)
    elif moment == "shard_write":
        import bench.store.shards as shards

        def make_shard(orig: Callable[..., Any]) -> Callable[..., Any]:
            def atomic_write(path: Any, write: Callable[..., Any], **k: Any) -> Any:
                if c.hit():
                    import io

                    buf = io.BytesIO()
                    write(buf)
                    _half_then_die(path, buf.getvalue())
                return orig(path, write, **k)
            return atomic_write

        _wrap(shards, "atomic_write", make_shard)
    elif moment == "merge":
        import bench.store.shards as shards

        def make_sql(orig: Callable[..., Any]) -> Callable[..., Any]:
            def sql(con: Any, statement: str, params: Any = None) -> Any:
                out = orig(con, statement, params)
                if statement.startswith("INSERT OR IGNORE INTO") and c.hit():
                    die()
                return out
            return sql

        _wrap(shards, "sql", make_sql)
    elif moment == "response_cache_write":
        from bench.gateway.response_cache import ResponseCache

        def make_put(orig: Callable[..., Any]) -> Callable[..., Any]:
            def _put_sync(self: Any, key: str, kind: str, model: str, entry: Any) -> Any:
                if c.hit():
                    self._conn.execute("BEGIN IMMEDIATE")
                    self._conn.execute("INSERT OR REPLACE INTO responses (key, kind, model, payload, created_at) "
                                       "VALUES (?, ?, ?, ?, ?)", (key, kind, model, entry.to_json()[:20], ""))
                    die()
                return orig(self, key, kind, model, entry)
            return _put_sync

        _wrap(ResponseCache, "_put_sync", make_put)
    else:
        raise ValueError(f"unknown kill moment {moment!r}; see tests/helpers/killpoints.py")


MOMENTS = ("model_call", "question", "checkpoint_write", "duckdb_write", "om_sqlite_write", "shard_write", "merge",
           "response_cache_write")


def install_pause(spec: str, gate: str) -> None:
    """Arm the pause point `question:n` (the only moment a pause supports) with the gate file `gate`."""
    import time
    from pathlib import Path

    from bench.store.writer import Store

    moment, _, count = spec.partition(":")
    if moment != "question":
        raise ValueError(f"unknown pause moment {moment!r}: only question:<n>")
    c = _Counter(int(count or 1))

    def make_write(orig: Callable[..., Any]) -> Callable[..., Any]:
        def write_questions(self: Any, *a: Any, **k: Any) -> Any:
            out = orig(self, *a, **k)
            if c.hit():
                Path(f"{gate}.paused").touch()
                deadline = time.monotonic() + PAUSE_MAX_S
                while not Path(gate).exists() and time.monotonic() < deadline:
                    time.sleep(0.05)
            return out
        return write_questions

    _wrap(Store, "write_questions", make_write)


def main(argv: list[str]) -> int:
    spec = os.environ.get(ENV, "")
    if spec:
        install(spec)
    pause = os.environ.get(PAUSE_ENV, "")
    if pause:
        install_pause(pause, os.environ[PAUSE_FILE_ENV])
    from bench.cli import main as ombench

    return ombench(argv)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
