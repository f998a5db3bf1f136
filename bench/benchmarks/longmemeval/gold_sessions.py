"""The evidence sessions of LongMemEval questions, for the human reading results (`ombench view`), never for a
strategy: a question's `answer_session_ids` sessions with their `has_answer` turns marked (the dataset's gold
labels, xiaowu0162/LongMemEval data format). Read again from the run's dataset file, one question at a time
(`iter_values`), so the results file needs no copy of the haystack."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.benchmarks.base import GoldSession
from bench.data.schema import Instance


def of_instance(inst: Instance) -> list[GoldSession]:
    """The question's answer sessions in date order; evidence turns are those marked `has_answer` (a session
    without any marked turn keeps every turn unmarked)."""
    wanted = set(inst.answer_session_ids)
    out = [GoldSession(s.session_id, s.date_str, tuple((t.role, t.content, bool(t.has_answer)) for t in s.turns))
           for s in sorted(inst.sessions, key=lambda s: s.date) if s.session_id in wanted]
    return out


def gold_sessions(benchmark: Any, source: str | None, question_ids: set[str],
                  data_dir: str | None = None) -> dict[str, list[GoldSession]]:
    """question id -> `of_instance` for the ids asked, from `source`: a file path (streamed; only the questions
    asked are parsed) or a split/name `benchmark` (LongMemEval) loads (the synthetic sample). {} for no source."""
    from bench.benchmarks.longmemeval.format import parse_instance
    from bench.benchmarks.longmemeval.stream import iter_values

    if not source or not question_ids:
        return {}
    path = Path(source)
    out: dict[str, list[GoldSession]] = {}
    if path.is_file():
        for i, raw in enumerate(iter_values(path)):
            qid = raw.get("question_id") if isinstance(raw, dict) else None
            if qid in question_ids:
                out[qid] = of_instance(parse_instance(raw, str(path), i))
                if len(out) == len(question_ids):
                    break
        return out
    ds: Any = benchmark.load(source, data_dir)
    return {q.question_id: of_instance(q) for q in ds.instances if q.question_id in question_ids}
