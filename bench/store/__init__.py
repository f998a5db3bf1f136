"""Where results go: the contract (typed records, the `ResultSink` protocol, `FORMAT_VERSION`), the DuckDB store
and its read API, Parquet shards for sweeps, and external-run import. All SQL on a results file lives here."""

from bench.store.contract import (
    FORMAT_VERSION,
    CallRow,
    JudgmentRow,
    MemoryOutputRow,
    MemoryRow,
    QuestionResult,
    ResultSink,
    RetrievalRow,
    RunManifest,
    SampleRow,
    TurnRow,
)
from bench.store.reader import Results
from bench.store.shards import ShardWriter, SweepSink, merge_shards
from bench.store.writer import Store

__all__ = [
    "FORMAT_VERSION", "CallRow", "JudgmentRow", "MemoryOutputRow", "MemoryRow", "QuestionResult", "ResultSink", "RetrievalRow",
    "RunManifest", "SampleRow",
    "TurnRow", "Results", "Store", "ShardWriter", "SweepSink", "merge_shards",
]
