"""LongMemEval harness: data, replay, strategies, model gateway, cache simulation, evaluation, storage, reports."""

__version__ = "0.1.0"
