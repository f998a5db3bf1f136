"""Benchmarks the harness runs: what makes each one itself lives in its own package (`bench.benchmarks.<name>`)."""
