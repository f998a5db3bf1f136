"""Benchmark data the harness replays: typed question records (`schema`), a loaded dataset with provenance and
reproducible subsets (`dataset`), summaries (`stats`). Reading a benchmark's files is its own
(`bench.benchmarks.<name>`)."""

from bench.data.dataset import Dataset

__all__ = ["Dataset"]
