"""What each strategy could see of the haystack, from the stored rows: questions whose question-time prompt passed
the Actor's window (not sent, stored failed with kind `context_window`: bench.runner.question.past_window) and
questions whose prompt the strategy cut to the window during the replay (turn event `truncate`, full context),
and the share of the haystack full context's question prompt held (event `haystack_in_window=x`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

TRUNCATE_EVENT = "truncate"  # bench.strategies.full_context: the prompt was cut to the Actor's window


def window_notes(db_path: str | Path, rows: list[dict[str, Any]]) -> list[str]:
    """Per run of the summary's `rows`: one warning when questions were not answered because their prompt passed
    the window, one note when the strategy cut prompts to the window; each two lines that fit 100 columns."""
    from bench.runner.question import CONTEXT_WINDOW
    from bench.runner.run_facts import event_counts as _event_counts
    from bench.runner.run_facts import wrap_note
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
        shares = _shares(t)
        if shares:
            mean = (sum(shares.values()) + (total - len(shares))) / max(1, total)  # the others held it all
            out.append(f"note: {r['label']}: at question time the Actor's window held {100 * mean:.1f}% of the "
                       f"haystack on average\n  ({len(shares)} of {total} questions cut to the window, the least "
                       f"{100 * min(shares.values()):.1f}%; {cut} cut during the replay)")
        elif cut:
            out.append(f"note: {r['label']}: {cut} of {total} questions' prompts hit the Actor's window and were "
                       "cut\n  (the oldest history dropped: the answer saw only the most recent part of the haystack)")
    return [wrap_note(n) for n in out]


def _shares(turns: Any) -> dict[str, float]:
    """question_id -> the share of its haystack inside the window (event `haystack_in_window=x`, full context)."""
    from bench.strategies.full_context import HAYSTACK_IN_WINDOW

    out: dict[str, float] = {}
    prefix = f"{HAYSTACK_IN_WINDOW}="
    for qid, events in zip(turns.question_id, turns.events):
        for e in str(events).split(",") if isinstance(events, str) else ():
            if e.startswith(prefix):
                out[qid] = float(e[len(prefix):])
    return out
