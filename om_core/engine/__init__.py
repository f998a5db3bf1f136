"""Internals of `om_core.memory.ObservationalMemory`: observation, reflection and resource-scope paths,
per-scope state, and scripted offline models for tests and demos."""
