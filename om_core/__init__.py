"""Observational Memory: an Observer compresses conversation into a dated, prioritised observation log,
a Reflector rewrites that log when it grows, and the Actor's context is laid out to keep a stable,
prompt-cacheable prefix. This package knows nothing about benchmarks."""

__version__ = "0.1.0"
