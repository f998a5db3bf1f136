"""DuckDB store (runs, samples, calls, turns, judgments + views) and Parquet shards for sweeps."""

from bench.store.shards import ShardWriter, merge_shards
from bench.store.writer import Store, connect

__all__ = ["Store", "ShardWriter", "merge_shards", "connect"]
