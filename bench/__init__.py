"""The benchmark harness: benchmarks (LongMemEval first), replay, strategies, model gateway, cache simulation,
evaluation, storage, reports."""
