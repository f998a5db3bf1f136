"""Internals of `om_core.memory.ObservationalMemory`: the observation, reflection and resource-scope steps and
the per-scope state they share. Steps see the orchestrator only through `engine.state.EngineContext`."""
