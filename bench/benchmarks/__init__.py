"""Benchmarks the harness runs, behind one protocol (`bench.benchmarks.base.Benchmark`) and one registry.

What makes a benchmark itself (its question types and metric order, the abstention rule, judge templates and
which one a question gets, its reader prompt, pinned files and hashes, export format, gold labels, its isolation
unit) lives in its own package; the rest of the harness asks the benchmark object. A dataset YAML names a
benchmark and a split (`benchmark: longmemeval`, `split: s`).

Adding a benchmark: a module with a class implementing `Benchmark` (and its data), and a dataset YAML naming
it, either by a registered name (one line in `BENCHMARKS`) or by its `module:attr` path, which needs no line
here (`benchmark: mypkg.mybench:MyBench`).
"""

from __future__ import annotations

from typing import Any, Iterable

from bench.benchmarks.base import Benchmark, Evidence, Unit, units_of
from bench.registry import Registry

BENCHMARKS: Registry[Any] = Registry("benchmark", {
    "longmemeval": "bench.benchmarks.longmemeval.benchmark:LongMemEval",
}, key="dataset.benchmark", external=True)

_BUILT: dict[str, Benchmark] = {}


def get_benchmark(name: str) -> Benchmark:
    """The benchmark registered as `name` (or at a `module:attr` path), built once per process. Raises
    ConfigError (one line listing the names) when unknown or when it is no `Benchmark`."""
    from bench.errors import ConfigError

    found = _BUILT.get(name)
    if found is not None:
        return found
    target = BENCHMARKS.get(name)
    bench = target() if isinstance(target, type) else target
    if not isinstance(bench, Benchmark):
        raise ConfigError(f"dataset.benchmark={name!r} is not a benchmark (see bench.benchmarks.base.Benchmark: "
                          "name, isolation_unit, question_types, load, judge_templates, ...)")
    _BUILT[name] = bench
    return bench


def reader_of(settings: Any) -> Any:
    """The reader layout the replay renders (`bench.benchmarks.base.Reader`): the benchmark's, or with
    `settings.reader_prompt == "official"` the benchmark's official text (its `official_reader(official_repo)`).
    Raises ConfigError (one line) when the benchmark has none or it cannot be read."""
    from bench.errors import ConfigError

    bench = get_benchmark(settings.benchmark)
    if getattr(settings, "reader_prompt", "packaged") != "official":
        return bench.reader
    make = getattr(bench, "official_reader", None)
    if make is None:
        raise ConfigError(f"answer.prompt=official: benchmark {bench.name!r} has no official reader text; use "
                          "answer.prompt=packaged")
    return make(settings.official_repo)


def benchmark_of_runs(extras: Iterable[Any]) -> Benchmark:
    """The benchmark of stored runs (each run's `extra.benchmark`, a JSON text or a mapping; LongMemEval for runs
    that predate it or name none). Runs of several benchmarks, or one that cannot be loaded here, read as
    LongMemEval's layout: tables never fail on it."""
    import json

    from bench.errors import ConfigError

    names: set[str] = set()
    for extra in extras:
        if isinstance(extra, str):
            try:
                extra = json.loads(extra)
            except ValueError:
                extra = {}
        name = extra.get("benchmark") if isinstance(extra, dict) else None
        names.add(str(name) if name else "longmemeval")
    names = names or {"longmemeval"}
    if len(names) == 1:
        try:
            return get_benchmark(names.pop())
        except ConfigError:
            pass
    return get_benchmark("longmemeval")


__all__ = ["BENCHMARKS", "Benchmark", "Evidence", "Unit", "benchmark_of_runs", "get_benchmark", "units_of"]
