"""The model roles of the harness, defined once.

Every model call is made for a role: the config schema has one `model.<role>` entry per role, the gateway is
built with one model per role, strategies declare the roles they call (`StrategyBase.roles`), and the run and
ingestion keys hash the models of the roles that shape a result. Adding a role: one value here and its
`model.<role>` entry in `bench.config.ModelCfg` and `bench/conf/model/*.yaml`.
"""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    """A model role. Members are strings (`Role.OBSERVER == "observer"`), so they key dicts and configs."""

    ACTOR = "actor"  # answers the question (its prompts are also simulated at every replayed user turn)
    JUDGE = "judge"  # grades the answer (LongMemEval's yes/no judge)
    OBSERVER = "observer"  # OM: compresses raw messages into observations
    REFLECTOR = "reflector"  # OM: rewrites the observation log when it grows past its threshold
    SUMMARIZER = "summarizer"  # compaction: condenses the oldest messages into a running summary
    EMBEDDER = "embedder"  # dense retrieval: turns texts into vectors
    EVALUATOR = "evaluator"  # decay: scores each new memory (importance, volatility, entities) as JSON

    @property
    def offline_model(self) -> str:
        """The offline engine's stand-in for this role (rule-based, not an LLM): `offline/<name>`."""
        return "offline/reader" if self is Role.ACTOR else f"offline/{self.value}"

    @classmethod
    def parse(cls, label: str) -> Role | None:
        """The role a call-record label stands for (`reader` and `answerer` are the actor), or None."""
        label = _ALIASES.get(label, label)
        return cls(label) if label in cls._value2member_map_ else None


# labels that calls may carry for a role (the offline engine names the actor "reader")
_ALIASES = {"reader": "actor", "answerer": "actor", "summariser": "summarizer"}

# roles a memory strategy may call in the background while a haystack is replayed
MEMORY_ROLES = frozenset({Role.OBSERVER, Role.REFLECTOR, Role.SUMMARIZER, Role.EMBEDDER, Role.EVALUATOR})
