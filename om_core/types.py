"""Plain data types shared across om_core. Kept free of I/O so every module can import them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

Role = Literal["user", "assistant", "system", "tool"]


@dataclass(frozen=True)
class ToolCall:
    """One tool invocation inside an assistant message; `state` follows the call through its lifetime."""

    id: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)
    state: Literal["call", "result", "error", "denied"] = "result"
    result: Any = None


@dataclass(frozen=True)
class Message:
    """A chat message as stored and observed. `created_at` must be timezone-aware (UTC recommended)."""

    id: str
    role: Role
    content: str
    created_at: datetime
    thread_id: str | None = None
    resource_id: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True)
class ContextMessage:
    """One message of the Actor's context as om_core lays it out.

    `breakpoint` marks a natural prompt-cache breakpoint (end of a stable block); `key` is a stable
    identifier of the block (e.g. "om:preamble", "om:chunk:3", "msg:<id>") so callers can tell which
    parts stayed identical between turns without comparing text. A raw message keeps its `tool_calls`
    (arguments and results), which the caller turns into its provider's tool-call format.
    """

    role: Role
    content: str
    breakpoint: bool = False
    key: str = ""
    created_at: datetime | None = None
    tool_calls: tuple[ToolCall, ...] = ()
