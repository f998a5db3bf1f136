"""Where a question's evidence sessions went, for one question of one run: which lines of the memory at question
time carry what an evidence session said, and whether it reached the Actor's prompt (as raw messages, or through
those memory lines). The sessions come from the benchmark (`Benchmark.gold_sessions`: the human's view, never a
strategy's); this module knows only texts.

Matching rule (docs/results.md, "Where the evidence sessions went"): a text's terms are its lower-cased whole words
of four or more letters and its whole numbers, less function words and the words of memory's markup and of any
conversation (`MARKUP`: thread, user, stated ...). A memory line carries an evidence turn when they share at least
three terms and the shared terms are at least two fifths of the line's terms (an observation restates a fact in
fewer words). A session's evidence turns are those the dataset marks as holding the answer, else its user
turns. An evidence turn is in the prompt raw when its first 200 characters occur there (lower-cased words and
numbers only: punctuation, JSON escapes and whitespace folded away); a
session reached the prompt through memory when a line carrying it occurs there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from bench.report.attribution import STOP

_TERM = re.compile(r"\b(?:[a-z]{4,}|[0-9]+(?:[.,][0-9]+)*)\b")
# words of memory's own markup and of every conversation: they say nothing about which session a line came from
MARKUP = frozenset("""thread user assistant stated asked said mentioned told date observations current task
suggested response they them their there this that with what when which would could should have been from about
some like just also really know""".split())
MIN_SHARED = 3
MIN_SHARE = 0.4
RAW_PREFIX = 200


def terms(text: str) -> set[str]:
    return {t for t in _TERM.findall(text.lower()) if t not in STOP and t not in MARKUP}


def carries(line: str | set[str], turn: str | set[str]) -> bool:
    """Whether a memory line carries what an evidence turn said (see the module's rule)."""
    a = terms(line) if isinstance(line, str) else line
    b = terms(turn) if isinstance(turn, str) else turn
    shared = len(a & b)
    return bool(a) and shared >= MIN_SHARED and shared >= MIN_SHARE * len(a)


_ESCAPE = re.compile(r"\\[nrt]")  # a JSON escape of a newline or tab (history_format=json)
_NON_WORD = re.compile(r"[^a-z0-9]+")


def _fold(text: str) -> str:
    """Lower-cased words and numbers joined by single spaces: quotes, escapes and whitespace folded away."""
    return " ".join(_NON_WORD.sub(" ", _ESCAPE.sub(" ", text.lower())).split())


@dataclass
class SessionTrace:
    """One evidence session: its id and date, its evidence turns, and where they went."""

    session_id: str
    date: str
    evidence: list[tuple[str, str]]  # (role, content) of its evidence turns
    all_turns: int
    reached_memory: bool | None = None  # None: the strategy keeps no memory view
    raw_in_prompt: bool | None = None  # None: the prompt text was not stored
    memory_in_prompt: bool | None = None
    lines: dict[int, list[int]] = field(default_factory=dict)  # memory item_idx -> line numbers carrying it

    @property
    def in_prompt(self) -> bool | None:
        """Whether it reached the Actor's prompt (raw, or through memory lines); None: the prompt was not stored."""
        if self.raw_in_prompt is None:
            return None
        return bool(self.raw_in_prompt or self.memory_in_prompt)

    @property
    def lost(self) -> bool:
        """Neither in the Actor's prompt nor (where known) in memory: what the question page marks as lost."""
        return self.where.startswith(("lost", "not"))

    @property
    def where(self) -> str:
        """One phrase: where this session's content went."""
        if self.raw_in_prompt:
            return "in the Actor's prompt (raw messages)"
        if self.reached_memory and self.memory_in_prompt:
            return "reached memory, in the Actor's prompt"
        if self.reached_memory and self.memory_in_prompt is False:
            return "reached memory, not in the Actor's prompt"
        if self.reached_memory:
            return "reached memory"
        if self.reached_memory is False and self.raw_in_prompt is False:
            return "lost: neither in memory nor in the prompt"
        if self.raw_in_prompt is False:
            return "not in the Actor's prompt"
        return "unknown (no memory view, prompt not stored)"


def trace(sessions: Iterable[Any], memory: Sequence[tuple[int, str, str]], prompt: str | None) -> list[SessionTrace]:
    """`sessions`: `GoldSession`s (session_id, date, turns of (role, content, is evidence)); `memory`: (item_idx,
    kind, text) of the memory view at question time; `prompt`: the Actor's question-time prompt text, or None."""
    folded = _fold(prompt) if prompt is not None else None
    split = [(idx, text.splitlines()) for idx, _, text in memory]
    line_terms = [(idx, [terms(ln) for ln in lines]) for idx, lines in split]
    out = []
    for s in sessions:
        marked = [(r, c) for r, c, ev in s.turns if ev]
        evidence = marked or [(r, c) for r, c, _ in s.turns if r == "user"]
        t = SessionTrace(s.session_id, s.date, evidence, len(s.turns))
        ev_terms = [terms(c) for _, c in evidence]
        for idx, lts in line_terms:
            hit = [k for k, lt in enumerate(lts) if any(carries(lt, et) for et in ev_terms)]
            if hit:
                t.lines[idx] = hit
        t.reached_memory = bool(t.lines) if memory else None
        if folded is not None:
            t.raw_in_prompt = any(_fold(c)[:RAW_PREFIX] in folded for _, c in evidence if c.strip())
            if memory:
                t.memory_in_prompt = any(_fold(lines[k]) in folded for idx, lines in split
                                         for k in t.lines.get(idx, []) if lines[k].strip())
        out.append(t)
    return out


def trace_runs(gold: dict[str, dict[str, list[Any]]], samples: Any, memory: Any,
               prompts: dict[tuple[str, str], str]) -> Any:
    """`trace` for every judged question that has gold sessions, as the question page traces it: one row per
    (run, question, evidence session) with run_key, question_id, label, session_id, reached_memory, in_prompt
    (None: not known), lost (a DataFrame). `gold`: run_key -> question id -> `GoldSession`s
    (bench.view.gold.gold_by_run); `samples`: run_key, question_id, label; `memory`: run_key, question_id,
    item_idx, kind, text (Results.memory_rows); `prompts`: Results.answer_prompts."""
    import pandas as pd

    mem: dict[tuple[str, str], list[tuple[int, str, str]]] = {}
    for r in memory.itertuples():
        mem.setdefault((str(r.run_key), str(r.question_id)), []).append((int(r.item_idx), str(r.kind), str(r.text)))
    rows = []
    for s in samples.itertuples():
        key = (str(s.run_key), str(s.question_id))
        sessions = gold.get(key[0], {}).get(key[1])
        if not sessions or pd.isna(s.label):
            continue
        for t in trace(sessions, mem.get(key, []), prompts.get(key)):
            rows.append({"run_key": key[0], "question_id": key[1], "label": bool(s.label),
                         "session_id": t.session_id, "reached_memory": t.reached_memory, "in_prompt": t.in_prompt,
                         "lost": t.lost})
    return pd.DataFrame(rows, columns=["run_key", "question_id", "label", "session_id", "reached_memory",
                                       "in_prompt", "lost"])


ALL_IN, SOME_IN, NONE_IN = "all evidence in prompt", "some in prompt", "none in prompt"


def wrong_split(rows: Any) -> dict[str, int]:
    """Wrong answers of one run by where their evidence sessions went (`rows`: `trace_runs` rows of the run):
    ALL_IN (the reader missed it), SOME_IN, NONE_IN (memory lost it, or never kept it), and "unknown" (the
    prompt was not stored)."""
    out = {ALL_IN: 0, SOME_IN: 0, NONE_IN: 0, "unknown": 0}
    wrong = rows[~rows.label.astype(bool)]
    for _, q in wrong.groupby("question_id"):
        known = q.in_prompt.dropna()
        if len(known) < len(q):
            out["unknown"] += 1
        else:
            n_in = int(known.astype(bool).sum())
            out[ALL_IN if n_in == len(q) else SOME_IN if n_in else NONE_IN] += 1
    return out
