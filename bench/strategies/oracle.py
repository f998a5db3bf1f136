"""oracle: the ceiling. full_context's rendering over the evidence sessions only.

The replay pipeline hands this strategy `Instance.oracle_view()` instead of `view()` (`uses_oracle_view`):
that view is the only place answer_session_ids are used, and nothing else about the strategy differs.
"""

from __future__ import annotations

from bench.strategies.full_context import FullContextStrategy


class OracleStrategy(FullContextStrategy):
    name = "oracle"
    uses_oracle_view = True
