"""The results contract: what a run records, and the one protocol every place results go implements.

A run is one `RunManifest` (its fields are the columns of the `runs` table). A question is one `QuestionResult`:
its `SampleRow` with the `CallRow`s, `TurnRow`s, `JudgmentRow`s, `MemoryRow`s, `RetrievalRow`s and
`MemoryOutputRow`s measured on the way, written together or not at all. A `ResultSink` takes both and answers which questions are done and which recorded an error, so a re-run
computes only what is missing or failed. Implementations: `Store` (DuckDB), `ShardWriter` (Parquet shards of one
sweep job), `SweepSink` (a job's shards plus the merged results file) and the dry run's in-memory sink.

`FORMAT_VERSION` is stamped on every run row and every shard; a results file of another version is refused with a
one-line error (see `bench.store.db.check_format`). Bump it whenever a table's columns change meaning or shape.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping, Protocol, Sequence

from bench.records import CallRecord

# 1: runs.format_version, samples.checkpoint_restored; provenance columns filled (before: no version, "format 0").
# 2: samples keep the question, gold answer and a second judge's verdict; turns the memory/raw split of the Actor
#    prompt; new tables call_texts (compressed prompts and responses), memory (question-time memory) and
#    retrieval (recall@k of retrieving strategies).
# 3: calls keep cost_known (False: no price known, shown as unpriced) and finish_reason; new table memory_outputs
#    (Observer/Reflector calls per role, outcome and guard reason, with their tokens).
# (no bump) new table answer_tries: an older file gains it empty when opened for writing; no column changed.
# (no bump) new table judge_audits (`ombench judge-audit` results per judge configuration): the same way.
# (no bump) answer_tries.label_second, judge_second_raw (the second judge on each retry): added last, empty in an
#    older file (schema.ADDED_COLUMNS).
FORMAT_VERSION = 3

# Per cache profile: {"cached": tokens, "prefill": tokens, "write": tokens, "cost_usd": USD} (as the simulators give)
CacheByProfile = Mapping[str, Mapping[str, float]]


@dataclass(frozen=True)
class RunManifest:
    """One row of `runs`: what was run, on which code, packages and data. Field order is the column order."""

    run_key: str
    name: str  # the experiment name (a sweep job adds its overrides)
    strategy: str
    config: Mapping[str, Any] = field(default_factory=dict)  # the resolved Hydra config; secrets scrubbed on write
    git_commit: str | None = None
    git_dirty: bool | None = None
    package_versions: Mapping[str, str | None] = field(default_factory=dict)
    dataset_name: str | None = None
    dataset_sha256: str | None = None
    dataset_split: str | None = None  # "oracle", "S (cleaned)", "synthetic", ...
    n_questions_planned: int | None = None
    tokenizer: str | None = None
    price_map_version: str | None = None
    actor_model: str | None = None
    judge_model: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # anything else worth keeping (run spec, data path)
    started_at: datetime | None = None  # None: now, on first write (an existing run keeps its start)
    finished_at: datetime | None = None
    status: str = "running"  # running | finished | imported
    format_version: int = FORMAT_VERSION


@dataclass(frozen=True)
class SampleRow:
    """One row of `samples` (less run_key): the answer to one question and its verdict."""

    question_id: str
    question_type: str | None = None
    is_abstention: bool | None = None  # by the benchmark's rule (Benchmark.is_abstention); None is stored as False
    hypothesis: str | None = None
    label: bool | None = None
    label_strict: bool | None = None
    judge_raw: str | None = None
    judge_model: str | None = None
    prompt_tokens: int | None = None  # the Actor's answer calls, tokens
    completion_tokens: int | None = None
    cost_usd: float | None = None  # every real call of the question, USD
    error: str | None = None  # set when a call failed after its retries: the next run retries the question
    checkpoint_restored: bool | None = None  # True when ingestion came from a checkpoint, not a replay
    answered_at: datetime | None = None  # None: now, on write
    question: str | None = None  # the question text, as asked
    gold_answer: str | None = None  # the dataset's answer (an int answer as text); never shown to the system
    question_date: str | None = None  # as in the file ("2023/05/30 (Tue) 23:40")
    label_second: bool | None = None  # the second judge's verdict (judge.second_model), None without one
    judge_second_raw: str | None = None
    judge_second_model: str | None = None


@dataclass(frozen=True)
class CallRow:
    """One row of `calls` (less run_key, question_id) plus its per-profile simulated cache numbers (`call_cache`)."""

    call_idx: int
    role: str  # actor | observer | reflector | judge | summarizer | embedder
    model: str
    phase: str  # ingest | answer | judge
    simulated: bool = False  # an Actor prompt measured during replay, never sent
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_reported: int = 0  # provider-reported cached prompt tokens
    cache_write_reported: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    response_cache_hit: bool = False
    retries: int = 0
    error: str | None = None
    sim_time: datetime | None = None  # the replay clock when the call was issued
    cost_known: bool = True  # False: the model has no known price (cost_usd 0 means unpriced, not free)
    finish_reason: str | None = None  # the provider's ("length": the output was cut short)
    cache: CacheByProfile = field(default_factory=dict)
    # the request and the reply as text (`call_texts`, stored compressed); None when not kept
    messages: Sequence[Mapping[str, Any]] | None = None
    response: str | None = None

    @classmethod
    def from_record(cls, rec: CallRecord, idx: int, phase: str | None = None) -> CallRow:
        """The row of a gateway/replay `CallRecord`; phase defaults to what the role implies. Its messages and
        response come along when the record kept them."""
        return cls(
            call_idx=idx, role=rec.role, model=rec.model, phase=phase or phase_of(rec.role, rec.simulated),
            simulated=rec.simulated, prompt_tokens=rec.prompt_tokens, completion_tokens=rec.completion_tokens,
            cached_reported=rec.cached_tokens_reported, cache_write_reported=rec.cache_write_tokens_reported,
            cost_usd=rec.cost_usd, latency_s=rec.latency_s, response_cache_hit=rec.response_cache_hit,
            retries=rec.retries, error=rec.error, sim_time=rec.sim_time, cost_known=rec.cost_known,
            finish_reason=rec.finish_reason, cache=dict(rec.cache),
            messages=list(rec.messages) if rec.messages is not None else None, response=rec.response,
        )

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CallRow:
        """From a JSON-decoded row (an ingestion checkpoint); CallRecord field names are accepted too."""
        m = dict(d)
        m.setdefault("cached_reported", m.get("cached_tokens_reported") or 0)
        m.setdefault("cache_write_reported", m.get("cache_write_tokens_reported") or 0)
        m.setdefault("phase", phase_of(str(m.get("role")), bool(m.get("simulated"))))
        m["sim_time"] = parse_time(m.get("sim_time"))
        m["cache"] = m.get("cache") or {}
        return cls(**_known(cls, m))


@dataclass(frozen=True)
class TurnRow:
    """One row of `turns` (less run_key, question_id): the Actor prompt at one replayed user turn."""

    turn: int
    sim_time: datetime | None = None
    prompt_tokens: int | None = None
    events: tuple[str, ...] = ()  # memory events of the turn: observe, reflect, activate, compact, ...
    # the prompt split, as the strategy reports it (Prompt.meta): tokens of its memory block (OM's observation
    # log) and of raw conversation messages; the memory's generation (OM: reflections so far). None: not reported
    memory_tokens: int | None = None
    raw_tokens: int | None = None
    generation: int | None = None
    cache: CacheByProfile = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TurnRow:
        """From the replay driver's turn dict (or its JSON in a checkpoint)."""
        ev = d.get("events") or ()
        events = tuple(e for e in ev.split(",") if e) if isinstance(ev, str) else tuple(map(str, ev))
        return cls(turn=int(d["turn"]), sim_time=parse_time(d.get("sim_time")),
                   prompt_tokens=_opt_int(d.get("prompt_tokens")), events=events,
                   memory_tokens=_opt_int(d.get("memory_tokens")), raw_tokens=_opt_int(d.get("raw_tokens")),
                   generation=_opt_int(d.get("generation")), cache=d.get("cache") or {})


@dataclass(frozen=True)
class JudgmentRow:
    """One row of `judgments` (less run_key, question_id): one judge repeat."""

    repeat_idx: int
    judge_model: str | None = None
    raw: str | None = None
    label: bool | None = None


@dataclass(frozen=True)
class TryRow:
    """One row of `answer_tries` (less run_key, question_id): a retry of a wrong answer (answer.retries,
    bench.evaluate.retries). try_idx 1.. (the first try is the sample itself); its calls are in `calls` with phase
    `retry` (Actor) and `judge`."""

    try_idx: int
    hypothesis: str | None = None
    label: bool | None = None
    judge_raw: str | None = None
    error: str | None = None
    label_second: bool | None = None  # judge.second_model's verdict on this try (None: no second judge)
    judge_second_raw: str | None = None


@dataclass(frozen=True)
class MemoryRow:
    """One row of `memory` (less run_key, question_id): one item of the memory the question was answered from,
    as the strategy's `memory_view` reads its state (OM: the active observation log, earlier reflections,
    buffered chunks)."""

    item_idx: int
    kind: str  # observations | reflection | buffered | summary | ...
    text: str
    generation: int | None = None
    tokens: int | None = None


@dataclass(frozen=True)
class MemoryOutputRow:
    """One row of `memory_outputs` (less run_key, question_id): the Observer or Reflector calls of the question
    that ended alike, as om_core's output guards judged them (om_core.diagnostics.OutputRecord).

    outcome: clean (accepted from an <observations> block), fallback (accepted, observation lines picked out of
    untagged text), rejected (refused by the guard named in `reason`), truncated (cut at the output cap; asked
    for once more with a larger cap, then refused). input_tokens: what the calls were asked to compress; output_tokens:
    the observations they produced (both o200k tokens)."""

    role: str  # observer | reflector
    outcome: str
    reason: str = ""  # the guard's reason for rejected/truncated calls, "" for accepted ones
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    @classmethod
    def group(cls, records: Sequence[Any]) -> list[MemoryOutputRow]:
        """One row per (role, outcome, reason) of om_core `OutputRecord`s (anything with those attributes and
        input_tokens, output_tokens), in first-seen order."""
        rows: dict[tuple[str, str, str], list[int]] = {}
        for r in records:
            acc = rows.setdefault((str(r.role), str(r.outcome), str(r.reason or "")), [0, 0, 0])
            acc[0] += 1
            acc[1] += int(r.input_tokens)
            acc[2] += int(r.output_tokens)
        return [cls(role, outcome, reason, n, i, o) for (role, outcome, reason), (n, i, o) in rows.items()]


@dataclass(frozen=True)
class RetrievalRow:
    """One row of `retrieval` (less run_key, question_id): LongMemEval's retrieval metrics at one k and level,
    computed by the harness from the ids a retrieving strategy reported (src/retrieval/eval_utils.py)."""

    level: str  # session | turn | turn_session (turn results mapped to sessions)
    k: int
    recall_any: float
    recall_all: float
    ndcg_any: float
    n_gold: int = 0  # gold items in the corpus
    n_retrieved: int = 0  # items the strategy retrieved (its top_k, or fewer)


@dataclass(frozen=True)
class QuestionResult:
    """Everything one question writes, in one transaction (or one set of shard files)."""

    sample: SampleRow
    calls: Sequence[CallRow] = ()
    turns: Sequence[TurnRow] = ()
    judgments: Sequence[JudgmentRow] = ()
    memory: Sequence[MemoryRow] = ()
    retrieval: Sequence[RetrievalRow] = ()
    outputs: Sequence[MemoryOutputRow] = ()
    tries: Sequence[TryRow] = ()  # retries of a wrong answer (answer.retries), in order

    @property
    def question_id(self) -> str:
        return self.sample.question_id


class ResultSink(Protocol):
    """Where a run's results go. Writes are idempotent per (run_key, question_id)."""

    def upsert_run(self, run: RunManifest) -> None:
        """Insert the run or update its fields (an existing run keeps its started_at)."""

    def finish_run(self, run_key: str, status: str = "finished", notes: Mapping[str, Any] | None = None) -> None:
        """Mark the run `status` ("finished" or "stopped"); `notes` (JSON-able, redacted on write) join its `extra`:
        `stopped` (why it stopped early) and `failures` (questions that failed before any row of theirs was
        stored, with their reasons: they are not results, so the same command retries them)."""

    def done_ids(self, run_key: str) -> set[str]:
        """Question ids with a stored sample (errored or not)."""

    def errored_ids(self, run_key: str) -> set[str]:
        """The subset of done_ids whose sample recorded an error: a re-run computes these again (unless the
        error is final for the run, bench.runner.question.final_error)."""

    def errors(self, run_key: str) -> dict[str, str]:
        """Question id -> the stored error, for every question of errored_ids."""

    def unjudged_ids(self, run_key: str) -> set[str]:
        """The subset of done_ids stored without an error and without a second judge's verdict: judged before
        judge.second_model was set, so a run with it computes them again (bench.runner.experiment)."""

    def write_question(self, run_key: str, result: QuestionResult, *, replace: bool = False) -> bool:
        """Write one question's rows together. False (nothing written) when it is stored and replace is False."""

    def close(self) -> None: ...


def phase_of(role: str, simulated: bool) -> str:
    if role in ("judge", "second_judge") or role.startswith("panel_judge_"):
        return "judge"
    return "answer" if role in ("actor", "reader") and not simulated else "ingest"


def parse_time(v: Any) -> datetime | None:
    """A naive datetime (any offset dropped, as DuckDB TIMESTAMP keeps it) from a datetime or ISO string."""
    if v is None or v == "":
        return None
    t = v if isinstance(v, datetime) else datetime.fromisoformat(str(v))
    return t.replace(tzinfo=None)


def _opt_int(v: Any) -> int | None:
    return None if v is None else int(v)


def _known(cls: type, m: Mapping[str, Any]) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in m.items() if k in names}
