"""The one protocol every memory strategy implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from bench.prompt import Prompt
from bench.replay import ReplayTurn


@dataclass
class TurnResult:
    """What the live agent would have sent to the Actor at this user turn, and what memory did."""

    prompt: Prompt | None  # None when the turn has no user message (nothing would be sent)
    events: list[str] = field(default_factory=list)  # buffer | activate | observe | reflect | compact | retrieve | truncate


class Strategy(Protocol):
    name: str

    async def add_turn(self, turn: ReplayTurn) -> TurnResult:
        """Render the Actor prompt at this user turn (history so far + the user message), then commit the pair.

        Background model calls (observer, summariser, embeddings) go through the gateway, which records
        them in bench.records.current_calls.
        """
        ...

    async def question_prompt(self, question: str, question_date: datetime, question_date_str: str) -> Prompt:
        """The Actor prompt at question time (the answering call)."""
        ...

    def state(self) -> dict[str, Any]:
        """JSON-serialisable memory state after ingestion (for ingestion checkpoints)."""
        ...

    def load_state(self, state: dict[str, Any]) -> None: ...
