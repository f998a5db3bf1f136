"""The sections of a question page, in order. Each is a function of the question's data that returns a
`Section` (its title, its template under templates/sections/ and the values the template reads) or None when it
has nothing to show. A new section is one function here, one template, and its name in `SECTIONS` (as
`memory_diagnostics` was added)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import pandas as pd

from bench.registry import Registry
from bench.store.contract import MemoryRow
from bench.store.reader import is_missing
from bench.view.svg import Marks, Series, line_chart


@dataclass
class RunMeta:
    run_key: str
    label: str
    kind: str
    color: str
    name: str
    slug: str
    dataset: str | None = None
    actor_model: str | None = None
    offline: bool = False


@dataclass
class QuestionData:
    """Everything the store holds about one question of one run."""

    run: RunMeta
    sample: dict[str, Any]
    calls: pd.DataFrame
    texts: dict[int, tuple[list[dict[str, Any]] | None, str | None]]
    turns: pd.DataFrame
    memory: list[MemoryRow]
    retrieval: pd.DataFrame
    judgments: pd.DataFrame
    profiles: list[str]
    outputs: pd.DataFrame = field(default_factory=pd.DataFrame)  # memory_outputs rows of the question
    tries: pd.DataFrame = field(default_factory=pd.DataFrame)  # answer_tries rows: retries of a wrong answer
    benchmark: Any = None  # the run's benchmark (bench.benchmarks); None: LongMemEval
    max_chars: int = 20000  # per message; 0 = everything (memory is shown whole, long memory folded)
    # the question's gold evidence sessions (`Benchmark.gold_sessions`: the human's view, never a strategy's);
    # None: not available (a benchmark without them, or the dataset file is gone)
    gold: list[Any] | None = None

    def clip(self, text: str | None) -> tuple[str, int]:
        """The text to show and how many characters were left out of its middle."""
        text = text or ""
        if not self.max_chars or len(text) <= self.max_chars:
            return text, 0
        half = self.max_chars // 2
        return text[:half] + "\n\n[…]\n\n" + text[-half:], len(text) - 2 * half


@dataclass
class Section:
    key: str  # the HTML id of the section
    title: str
    template: str  # under templates/sections/
    context: dict[str, Any] = field(default_factory=dict)


def _text_or_empty(value: Any) -> str:
    return "" if is_missing(value) else str(value)


def _verdict(v: Any) -> str:
    return "unjudged" if is_missing(v) else ("correct" if bool(v) else "wrong")


def question(q: QuestionData) -> Section:
    s = q.sample
    return Section("question", "Question and verdict", "question.html", {
        "s": s, "verdict": _verdict(s.get("label")), "strict": _verdict(s.get("label_strict")),
        "second": None if is_missing(s.get("label_second")) else _verdict(s.get("label_second")),
    })


def _messages(q: QuestionData, msgs: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    out = []
    for m in msgs or []:
        content = m.get("content")
        text, cut = q.clip(content if isinstance(content, str) else str(content))
        out.append({"role": m.get("role", "?"), "text": text, "cut": cut, "chars": len(str(content or ""))})
    return out


def _calls_of(q: QuestionData, phase: str) -> list[dict[str, Any]]:
    if q.calls.empty:
        return []
    rows = q.calls[(q.calls.phase == phase) & ~q.calls.simulated.fillna(False).astype(bool)]
    out = []
    for c in rows.itertuples():
        msgs, reply = q.texts.get(int(c.call_idx), (None, None))
        out.append({"idx": int(c.call_idx), "role": c.role, "model": c.model, "messages": _messages(q, msgs),
                    "reply": reply, "kept": msgs is not None or reply is not None})
    return out


def judge(q: QuestionData) -> Section | None:
    calls = _calls_of(q, "judge")
    reps = [{"idx": int(j.repeat_idx), "model": j.judge_model, "raw": j.raw, "label": _verdict(j.label)}
            for j in q.judgments.itertuples()] if not q.judgments.empty else []
    if not calls and not reps:
        return None
    return Section("judge", "Judge: prompt and verdict", "calls.html", {"calls": calls, "repeats": reps})


def tries(q: QuestionData) -> Section | None:
    """The retries of a wrong first answer (answer.retries): each try's answer, verdict (and the second judge's),
    judge reply and error, and whether the question counts as correct with retries (Mastra runner's count)."""
    if q.tries.empty:
        return None
    rows = [{"idx": int(t.try_idx), "hypothesis": _text_or_empty(t.hypothesis), "verdict": _verdict(t.label),
             "raw": _text_or_empty(t.judge_raw), "error": _text_or_empty(t.error),
             "second": None if is_missing(t.label_second) else _verdict(t.label_second),
             "second_raw": _text_or_empty(t.judge_second_raw)} for t in q.tries.itertuples()]
    first = q.sample.get("label")
    counted = None if is_missing(first) else bool(first) or any(r["verdict"] == "correct" for r in rows)
    return Section("tries", f"Retries of the wrong answer ({len(rows)})", "tries.html", {
        "tries": rows, "with_retries": _verdict(counted), "second": any(r["second"] for r in rows)})


def _prompt_text(q: QuestionData) -> str | None:
    """The Actor's question-time prompt as one text, or None when its text was not stored."""
    calls = [c for c in _calls_of(q, "answer") if c["kept"]]
    if not calls:
        return None
    idx = calls[-1]["idx"]
    msgs = q.texts.get(idx, (None, None))[0] or []
    return "\n".join(str(m.get("content", "")) for m in msgs)


def attribution_of(q: QuestionData) -> Any:
    """Where the gold answer went (bench.report.attribution) for this question."""
    from bench.benchmarks import get_benchmark
    from bench.report.attribution import attribute

    s = q.sample
    single = getattr(get_benchmark("longmemeval") if q.benchmark is None else q.benchmark, "single_answer", None)
    ok = not s.get("is_abstention") and (single is None or single(str(s.get("question_id")),
                                                                   str(s.get("question_type"))))
    label = s.get("label")
    return attribute(s.get("gold_answer"), None if label is None else bool(label),
                     [(m.item_idx, m.kind, m.text) for m in q.memory], _prompt_text(q), attributable=ok)


def evidence(q: QuestionData) -> Section | None:
    a = attribution_of(q)
    if not a.attributable:
        return None
    return Section("evidence", "Where the gold answer went", "evidence.html", {"a": a, "has_memory": bool(q.memory)})


def session_traces(q: QuestionData) -> list[Any] | None:
    """Where each gold evidence session went (bench.report.session_trace), or None without gold sessions."""
    from bench.report.session_trace import trace

    if q.gold is None:
        return None
    return trace(q.gold, [(m.item_idx, m.kind, m.text) for m in q.memory], _prompt_text(q))


def gold_sessions(q: QuestionData) -> Section | None:
    """The sessions that hold the evidence (shown to the human, never to a strategy), and where each went."""
    traces = session_traces(q)
    if traces is None:
        return None
    rows = [{"id": t.session_id, "date": t.date, "where": t.where, "lost": t.lost,
             "lines": sum(len(v) for v in t.lines.values()), "evidence": t.evidence, "all_turns": t.all_turns,
             "n": k + 1} for k, t in enumerate(traces)]
    return Section("gold-sessions", "Gold evidence sessions (shown to you, never to the strategy)", "gold.html",
                   {"rows": rows, "has_memory": bool(q.memory)})


MEMORY_FOLD_LINES = 40  # a memory item longer than this shows its first lines and a "show all" toggle


def memory(q: QuestionData) -> Section:
    items = []
    holding = set(attribution_of(q).holding)
    carried: dict[tuple[int, int], list[int]] = {}  # (item_idx, line) -> numbers of the evidence sessions
    for k, t in enumerate(session_traces(q) or []):
        for idx, lines in t.lines.items():
            for ln in lines:
                carried.setdefault((idx, ln), []).append(k + 1)
    for m in q.memory:
        lines = [{"text": ln, "sessions": carried.get((m.item_idx, i), [])}
                 for i, ln in enumerate((m.text or "").splitlines())]
        items.append({"kind": m.kind, "generation": m.generation, "tokens": m.tokens, "lines": lines,
                      "holds": m.item_idx in holding, "fold": len(lines) > MEMORY_FOLD_LINES,
                      "n_evidence": sum(1 for x in lines if x["sessions"])})
    gen = max((m.generation for m in q.memory if m.generation is not None), default=None)
    return Section("memory", "Memory at question time", "memory.html",
                   {"entries": items, "generation": gen, "kind": q.run.kind, "fold_lines": MEMORY_FOLD_LINES,
                    "gold": q.gold is not None})


def memory_diagnostics(q: QuestionData) -> Section | None:
    """What became of this question's Observer and Reflector outputs (om_core's output guards)."""
    from bench.report.diagnostics import MemoryDiagnostics, add_rows

    if q.outputs.empty:
        return None
    d = add_rows(MemoryDiagnostics(), q.outputs)
    gen = max((m.generation for m in q.memory if m.generation is not None), default=None)
    rows = [{"role": r.role, "outcome": r.outcome, "reason": r.reason or "", "calls": int(r.calls),
             "input_tokens": int(r.input_tokens), "output_tokens": int(r.output_tokens)}
            for r in q.outputs.itertuples()]
    ratio = d.compression_ratio
    return Section("memory-diagnostics", "Memory diagnostics (Observer and Reflector outputs)", "diagnostics.html",
                   {"rows": rows, "ratio": None if ratio is None else f"{ratio:.1f}x", "generation": gen,
                    "warning": d.warning(q.run.label), "refused": d.refused, "total": d.total})


def retrieval(q: QuestionData) -> Section | None:
    if q.retrieval.empty:
        return None
    return Section("retrieval", "Retrieval (LongMemEval recall@k, scored by the harness)", "retrieval.html",
                   {"rows": q.retrieval.to_dict("records")})


def actor_prompt(q: QuestionData) -> Section | None:
    calls = _calls_of(q, "answer")
    if not calls:
        return None
    return Section("actor", "Actor: question-time prompt and answer", "calls.html", {"calls": calls, "repeats": []})


def replay(q: QuestionData) -> Section | None:
    t = q.turns.dropna(subset=["prompt_tokens"]) if not q.turns.empty else q.turns
    if t.empty:
        return None
    xs = [float(x) for x in t.turn]
    ev = [(float(r.turn), float(r.prompt_tokens), str(r.events)) for r in t.itertuples() if r.events]
    size = line_chart([Series("Actor prompt tokens", xs, [float(y) for y in t.prompt_tokens], q.run.color)],
                      Marks(ev, "#000"), y_label="Actor prompt tokens")
    split, stale = "", False
    if "memory_tokens" in t and t.memory_tokens.notna().any():
        from bench.report.fig_replay import split_bands

        mem, raw, rest, stale = split_bands(t)
        split = line_chart([Series("memory (observations)", xs, mem, q.run.color),
                            Series("raw messages", xs, raw, "#bbbbbb"),
                            Series("system prompt and instructions", xs, rest, "#e4e4e4")],
                           y_label="tokens in the Actor's prompt", stacked=True)
    counts: dict[str, int] = {}
    for _, _, e in ev:
        for name in e.split(","):
            counts[name] = counts.get(name, 0) + 1
    return Section("replay", "Prompt size over the replay", "replay.html",
                   {"size": size, "split": split, "stale": stale, "events": sorted(counts.items()),
                    "n_turns": len(t)})


def cache(q: QuestionData) -> Section | None:
    if q.calls.empty:
        return None
    rows = []
    for c in q.calls.to_dict("records"):
        per = {}
        for p in q.profiles:
            cached = c.get(f"{p}_cached")
            if cached is not None and cached == cached and c.get("prompt_tokens"):
                per[p] = f"{100 * float(cached) / float(c['prompt_tokens']):.0f}%"
        rows.append({**c, "hits": per})
    real = [r for r in rows if not r.get("simulated")]
    sim = [r for r in rows if r.get("simulated")]
    return Section("cache", "Calls and simulated cache hits", "cache.html",
                   {"real": real, "sim": sim, "profiles": q.profiles})


# a question page's sections, in order (bench.registry)
SECTIONS: Registry[Callable[[QuestionData], Section | None]] = Registry("viewer section", {fn.__name__: fn for fn in (
    question, evidence, gold_sessions, judge, tries, memory, memory_diagnostics, retrieval, actor_prompt, replay, cache,
)})


def sections(q: QuestionData) -> list[Section]:
    return [s for s in (f(q) for f in SECTIONS.values()) if s is not None]
