"""The offline engine: a deterministic, rule-based dry-run stand-in for every model role.

Its outputs are well-formed (observation logs, yes/no verdicts, short answers) and its usage numbers are
real o200k counts, but its accuracy is not an LLM's. Use it for pipeline tests and cost/cache dry runs,
never for headline accuracy numbers.
"""

from bench.gateway.offline.engine import ROLES, canonical_role, run_role

__all__ = ["ROLES", "canonical_role", "run_role"]
