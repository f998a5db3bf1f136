"""What a benchmark is to the harness: the `Benchmark` protocol, its isolation units, and its gold labels.

A benchmark says how to load its splits, what its question categories are (in the order its metrics print), which
questions are unanswerable, how an answer is judged (templates and which one a question gets), what reader
prompt layout strategies render, and which questions share a replay: its **isolation unit**. LongMemEval gives
every question its own haystack (`"question"`); a LoCoMo-shaped benchmark asks many questions about one
conversation (`"conversation"`), which is then replayed once, each question asked at its own time.

Gold labels (`Evidence`: the answer sessions, the evidence turns) are for evaluation only; the system under
test sees `Instance.view()` (opaque labels), never them.

Model: vectorize-io/agent-memory-benchmark `src/memory_bench/dataset/base.py` (`isolation_unit`, `categories`,
`build_judge_prompt`); lm-evaluation-harness task YAMLs (a dataset YAML names a benchmark and a split).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Literal, Mapping, Protocol, Sequence, runtime_checkable

from bench.data.schema import Instance

if TYPE_CHECKING:
    from bench.data.dataset import Dataset
    from bench.evaluate.templates import TemplateSet
    from bench.store.contract import RetrievalRow

IsolationUnit = Literal["question", "conversation"]


@dataclass(frozen=True)
class GoldSession:
    """One session that holds a question's evidence, as the human sees it (the viewer; never a strategy): its
    dataset id, date as in the file, and turns as (role, content, is an evidence turn)."""

    session_id: str
    date: str
    turns: tuple[tuple[str, str, bool], ...]


@dataclass(frozen=True)
class Evidence:
    """Gold labels of one question, for evaluation only: the dataset ids of its answer sessions, and of its evidence
    turns (`<session id>_<1-based position>`)."""

    sessions: frozenset[str]
    turns: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Unit:
    """One replay: the questions that share it, in the order they are asked (question date, then file order).

    `key` is what the unit's opaque labels are derived from (session labels, the memory's resource id): the
    question text for a unit of one question (so nothing changes for LongMemEval), the unit id otherwise."""

    id: str
    questions: tuple[Instance, ...]
    key: str

    @property
    def single(self) -> bool:
        return len(self.questions) == 1

    @classmethod
    def of(cls, inst: Instance) -> Unit:
        """The unit of one question replayed alone."""
        return cls(inst.question_id, (inst,), inst.question)


class Reader(Protocol):
    """The reader prompt layout a benchmark's strategies render (LongMemEval: its official reader layout).

    `parts` gives ordered (key, text) pairs (instruction, one block per session, the question) so a strategy can
    cut them into cache-friendly segments; `text_sha256` hashes the layout's own words for one method and history
    format (it keys ingestion checkpoints)."""

    def reader_prompt_parts(self, sessions: Sequence[Any], question: str, question_date_str: str, *,
                            method: Any = "con", history_format: Any = "json") -> list[tuple[str, str]]: ...

    def session_block(self, i: int, session: Any, history_format: Any = "json") -> str: ...

    def question_block(self, question: str, question_date_str: str, method: Any = "con") -> str: ...

    def reader_text_sha256(self, method: str = "con", history_format: str = "json") -> str: ...


@runtime_checkable
class Benchmark(Protocol):
    """A benchmark the harness runs. Registered by name in `bench.benchmarks.BENCHMARKS` (or named by a
    `module:attr` path in a dataset YAML); `bench.benchmarks.get_benchmark(name)` builds it once.

    - `name`, `title`: the registry name and the name people know it by.
    - `isolation_unit`: `"question"` (a haystack per question) or `"conversation"` (questions share one).
    - `question_types`: its categories, in the order its metrics print; `short_labels`: their column labels.
    - `reference_judge`: the judge model whose labels compare with published scores (None: none).
    - `reader`: the reader prompt layout (`Reader`).
    """

    name: str
    title: str
    isolation_unit: IsolationUnit
    question_types: tuple[str, ...]
    short_labels: Mapping[str, str]
    reference_judge: str | None
    reader: Reader

    def splits(self) -> tuple[str, ...]:
        """The split names `load` knows (a benchmark may also accept a file path)."""
        ...

    def load(self, split: str, data_dir: str | None = None) -> Dataset:
        """The questions of `split` with their provenance. Raises DataError (one line) for a missing or
        malformed file."""
        ...

    def unit_of(self, question: Instance) -> str:
        """The id of the isolation unit the question belongs to (its own id for `"question"`)."""
        ...

    def is_abstention(self, question: Instance) -> bool:
        """Whether the question is unanswerable (the right answer declines)."""
        ...

    def evidence(self, question: Instance) -> Evidence:
        """Its gold labels, for evaluation only."""
        ...

    def judge_templates(self, source: str = "builtin", official_repo: str | None = None, *,
                        ask_reason: bool = False, download: bool = True) -> TemplateSet:
        """The judge templates of `source` (`builtin`: the project's words; a benchmark may offer `official`).
        Raises ConfigError (one line)."""
        ...

    def template_for(self, question_id: str, question_type: str) -> str:
        """The name of the template (in `judge_templates`) that judges this question."""
        ...

    def retrieval_rows(self, question: Instance, meta: Mapping[str, Any], key: str | None = None) -> list[RetrievalRow]:
        """Retrieval scores of what a strategy reported it retrieved (its question prompt's meta) against the
        gold labels; [] when the benchmark does not score retrieval. `key`: the unit's key (labels)."""
        ...


def units_of(benchmark: Benchmark, questions: Iterable[Instance], *, alone: bool = False) -> Iterator[Unit]:
    """The questions grouped into the benchmark's isolation units, in order of first appearance; within a unit,
    in the order they are asked (question date, then given order). `alone`: every question its own unit (a
    strategy that replays each question's own evidence, the oracle). A benchmark isolated by question is
    streamed; one isolated by conversation is grouped in memory. Group every question of the dataset, not only
those left to compute: a unit's replay (labels, the rows each question carries) is the same on every run."""
    if alone or benchmark.isolation_unit == "question":
        for inst in questions:
            yield Unit.of(inst)
        return
    groups: dict[str, list[Instance]] = {}
    for inst in questions:
        groups.setdefault(benchmark.unit_of(inst), []).append(inst)
    for uid, members in groups.items():
        ordered = sorted(members, key=lambda q: q.question_date)  # stable: same date keeps the given order
        yield Unit(uid, tuple(ordered), uid)


__all__ = ["Benchmark", "Evidence", "IsolationUnit", "Reader", "Unit", "units_of"]
