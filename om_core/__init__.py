"""Observational Memory: an Observer compresses conversation into a dated, prioritised observation log,
a Reflector rewrites that log when it grows, and the Actor's context is laid out to keep a stable,
prompt-cacheable prefix. This package knows nothing about benchmarks.

The public API is importable from here (`from om_core import ObservationalMemory, OMConfig, SQLiteStorage,
Message`); docs/om-engine.md describes it. Names load on first use, so `import om_core` stays cheap (no
tiktoken, sqlite3 or asyncio until something needs them). Test doubles live in `om_core.testing`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:  # the same names as _EXPORTS, for type checkers and IDEs
    from om_core.config import ObservationConfig, OMConfig, ReflectionConfig, RetrievalConfig, WorkingMemoryConfig
    from om_core.context import build_actor_context
    from om_core.diagnostics import OutputRecord, collect_outputs
    from om_core.engine.state import Rejection, TurnContext
    from om_core.errors import (
        ConfigError,
        DegenerateOutputError,
        EmptyReflectionError,
        FormatVersionError,
        InputError,
        ModelOutputError,
        OMError,
        RejectedOutputError,
        StorageError,
        TokenizerError,
    )
    from om_core.llm import ChatModel, Completion, Usage
    from om_core.memory import ObservationalMemory
    from om_core.observer import ObserverOutput, observe
    from om_core.retrieval import recall, recall_tool_schema
    from om_core.records import BufferedChunk, OMRecord, ThreadMeta
    from om_core.reflector import ReflectionResult, reflect
    from om_core.storage import InMemoryStorage, SQLiteStorage, Storage
    from om_core.storage.postgres import PostgresStorage
    from om_core.tokens import TokenCounter, default_counter
    from om_core.types import ContextMessage, Message, Role, ToolCall
    from om_core.working_memory import WorkingMemory

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # the engine
    "ObservationalMemory": "om_core.memory",
    "TurnContext": "om_core.engine.state",
    "Rejection": "om_core.engine.state",
    # configuration
    "OMConfig": "om_core.config",
    "ObservationConfig": "om_core.config",
    "ReflectionConfig": "om_core.config",
    "RetrievalConfig": "om_core.config",
    "WorkingMemoryConfig": "om_core.config",
    # messages and stored state
    "Message": "om_core.types",
    "ToolCall": "om_core.types",
    "ContextMessage": "om_core.types",
    "Role": "om_core.types",
    "OMRecord": "om_core.records",
    "ThreadMeta": "om_core.records",
    "BufferedChunk": "om_core.records",
    "WorkingMemory": "om_core.working_memory",
    # models and tokens
    "ChatModel": "om_core.llm",
    "Completion": "om_core.llm",
    "Usage": "om_core.llm",
    "TokenCounter": "om_core.tokens",
    "default_counter": "om_core.tokens",
    # storage
    "Storage": "om_core.storage",
    "SQLiteStorage": "om_core.storage",
    "InMemoryStorage": "om_core.storage",
    "PostgresStorage": "om_core.storage.postgres",  # psycopg is imported only when the class is constructed
    # recall (retrieval mode)
    "recall": "om_core.retrieval",
    "recall_tool_schema": "om_core.retrieval",
    # building blocks: one Observer / Reflector call, the Actor context
    "observe": "om_core.observer",
    "ObserverOutput": "om_core.observer",
    "reflect": "om_core.reflector",
    "ReflectionResult": "om_core.reflector",
    "build_actor_context": "om_core.context",
    # what became of every Observer / Reflector output (output guards, docs/om-engine.md)
    "collect_outputs": "om_core.diagnostics",
    "OutputRecord": "om_core.diagnostics",
    # errors
    "OMError": "om_core.errors",
    "ConfigError": "om_core.errors",
    "InputError": "om_core.errors",
    "StorageError": "om_core.errors",
    "FormatVersionError": "om_core.errors",
    "ModelOutputError": "om_core.errors",
    "RejectedOutputError": "om_core.errors",
    "DegenerateOutputError": "om_core.errors",
    "EmptyReflectionError": "om_core.errors",
    "TokenizerError": "om_core.errors",
}

__all__ = [  # written out for static tools; tests check it equals _EXPORTS and the TYPE_CHECKING imports
    "__version__",
    "ObservationalMemory", "TurnContext", "Rejection",
    "OMConfig", "ObservationConfig", "ReflectionConfig", "RetrievalConfig", "WorkingMemoryConfig",
    "Message", "ToolCall", "ContextMessage", "Role", "OMRecord", "ThreadMeta", "BufferedChunk", "WorkingMemory",
    "ChatModel", "Completion", "Usage", "TokenCounter", "default_counter",
    "Storage", "SQLiteStorage", "InMemoryStorage", "PostgresStorage",
    "recall", "recall_tool_schema",
    "observe", "ObserverOutput", "reflect", "ReflectionResult", "build_actor_context",
    "collect_outputs", "OutputRecord",
    "OMError", "ConfigError", "InputError", "StorageError", "FormatVersionError", "ModelOutputError",
    "RejectedOutputError", "DegenerateOutputError", "EmptyReflectionError", "TokenizerError",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'om_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
