"""LongMemEval data: loading (path, mirror folder, HF hub), validation, provenance, subsets, the synthetic sample."""

from bench.data.dataset import Dataset
from bench.data.loader import load_dataset, read_dataset

__all__ = ["Dataset", "load_dataset", "read_dataset"]
