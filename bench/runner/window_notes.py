"""What each strategy could see of the haystack, from the stored rows: questions whose question-time prompt passed
the Actor's window (not sent, stored failed with kind `context_window`: bench.runner.question.past_window) and
questions whose prompt the strategy cut to the window during the replay (turn event `truncate`, full context)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

TRUNCATE_EVENT = "truncate"  # bench.strategies.full_context: the prompt was cut to the Actor's window


def window_notes(db_path: str | Path, rows: list[dict[str, Any]]) -> list[str]:
    """Per run of the summary's `rows`: one warning when questions were not answered because their prompt passed
    the window, one note when the strategy cut prompts to the window; each two lines that fit 100 columns."""
    from bench.runner.question import CONTEXT_WINDOW
    from bench.runner.summary import _event_counts
    from bench.store import Results

    with Results(db_path) as res:
        samples = res.samples()
        turns = res.turns()
    out = []
    for r in rows:
        s = samples[samples.run_key == r["run_key"]]
        total = len(s)
        refused = s[s.error.fillna("").str.contains(f": {CONTEXT_WINDOW}: ", regex=False)]
        if len(refused):
            out.append(f"warning: {r['label']}: {len(refused)} of {total} questions not answered: their prompt "
                       f"passed the Actor's window\n  (not sent, stored as failed; the strategy must fit its prompt "
                       "to model.actor_max_input_tokens)")
        t = turns[turns.run_key == r["run_key"]]
        cut = t[_event_counts(t, TRUNCATE_EVENT) > 0].question_id.nunique() if len(t) else 0
        if cut:
            out.append(f"note: {r['label']}: {cut} of {total} questions' prompts hit the Actor's window and were "
                       "cut\n  (the oldest history dropped: the answer saw only the most recent part of the haystack)")
    return out
