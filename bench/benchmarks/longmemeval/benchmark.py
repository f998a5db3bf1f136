"""LongMemEval as a `Benchmark` (xiaowu0162/LongMemEval; Wu et al., ICLR 2025): a haystack of chat sessions per
question, so every question is its own isolation unit; five judge templates chosen by type (abstention
overrides), the official reader layout, retrieval scored against `answer_session_ids` and `has_answer` turns.

Its knowledge sits in this package, one module each: `rules` (types, metric order, labels, the abstention rule,
template choice, the official judge), `judge_templates` + `templates/` (the project's wording, or the official
text read at run time through `official_source`), `reader_prompt`, `retrieval` (gold labels and scores),
`loader` / `format` / `hub` / `dates` (files, their format, pinned revisions and hashes), `synthetic*` (the
deterministic sample in its format), `export` (the official JSONL files and metrics printout).
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from bench.benchmarks.base import Evidence, GoldSession, IsolationUnit
from bench.benchmarks.longmemeval import rules
from bench.data.schema import Instance

if TYPE_CHECKING:
    from bench.data.dataset import Dataset
    from bench.evaluate.templates import TemplateSet
    from bench.store.contract import RetrievalRow

# split -> the dataset name the loader knows (and runs are labelled with)
SPLITS = {
    "oracle": "longmemeval_oracle",
    "s": "longmemeval_s",
    "s_cleaned": "longmemeval_s_cleaned",
    "s_original": "longmemeval_s_original",
    "m": "longmemeval_m",
    "m_cleaned": "longmemeval_m_cleaned",
    "synthetic": "synthetic",
}


class LongMemEval:
    name = "longmemeval"
    title = "LongMemEval"
    isolation_unit: IsolationUnit = "question"
    question_types = rules.METRIC_ORDER
    short_labels = rules.SHORT_LABELS
    legend = rules.LEGEND
    reference_judge: str | None = rules.OFFICIAL_JUDGE

    @property
    def reader(self) -> ModuleType:
        from bench.benchmarks.longmemeval import reader_prompt

        return reader_prompt

    def official_reader(self, official_repo: str | None = None) -> Any:
        """The reader with run_generation.py's own sentences (`answer.prompt=official`; ConfigError, one line,
        when the file cannot be had)."""
        from bench.benchmarks.longmemeval.official_reader import official_reader

        return official_reader(official_repo)

    def mastra_actor(self, runner_file: str | None = None) -> Any:
        """Mastra's LongMemEval runner's Actor system text (`answer.prompt=mastra`; a `RunnerActor`; ConfigError,
        one line, when it cannot be had or is not the pinned text)."""
        from bench.benchmarks.longmemeval.mastra_runner import runner_actor

        return runner_actor(runner_file)

    @property
    def export(self) -> ModuleType:
        """Its official file formats (hypothesis and `.eval-results` JSONL, the metrics printout, reference
        loading): `ombench export`, `ombench import` and `ombench metrics` speak them."""
        from bench.benchmarks.longmemeval import export

        return export

    def splits(self) -> tuple[str, ...]:
        return tuple(SPLITS)

    def load(self, split: str, data_dir: str | None = None) -> Dataset:
        """A split (`oracle`, `s`, `m`, their `_cleaned` forms, `synthetic[:knobs]`), a dataset name
        (`longmemeval_s`) or a path to a file in LongMemEval's format (bench.benchmarks.longmemeval.loader)."""
        from bench.benchmarks.longmemeval.loader import load_dataset

        name = SPLITS.get(split, split)
        if split.startswith("synthetic:"):
            name = split
        return load_dataset(name, data_dir)

    def unit_of(self, question: Instance) -> str:
        return question.question_id

    def is_abstention(self, question: Instance) -> bool:
        return rules.is_abstention(question.question_id)

    def evidence(self, question: Instance) -> Evidence:
        from bench.benchmarks.longmemeval.retrieval import gold_turn_ids

        return Evidence(frozenset(question.answer_session_ids), gold_turn_ids(question))

    def gold_sessions(self, source: str | None, question_ids: Iterable[str],
                      data_dir: str | None = None) -> dict[str, list[GoldSession]]:
        """question id -> its answer sessions (`answer_session_ids`, turns marked `has_answer`) read from the
        dataset `source` (a run's dataset path, or a split name such as a synthetic spec), for the viewer: the
        human's view of where the evidence is. Optional on a benchmark. Raises DataError (one line) when the file
        cannot be read."""
        from bench.benchmarks.longmemeval.gold_sessions import gold_sessions

        return gold_sessions(self, source, set(question_ids), data_dir)

    def judge_templates(self, source: str = "builtin", official_repo: str | None = None, *,
                        ask_reason: bool = False, download: bool = True) -> TemplateSet:
        from bench.benchmarks.longmemeval.judge_templates import resolve_templates

        return resolve_templates(source, official_repo, ask_reason=ask_reason, download=download)

    def template_for(self, question_id: str, question_type: str) -> str:
        return rules.template_name(question_id, question_type)

    def retrieval_rows(self, question: Instance, meta: Mapping[str, Any], key: str | None = None) -> list[RetrievalRow]:
        from bench.benchmarks.longmemeval.retrieval import retrieval_rows

        return retrieval_rows(question, meta)

    def single_answer(self, question_id: str, question_type: str) -> bool:
        """Whether the question has one answer a text can hold (not an abstention `_abs`, not a preference
        question's rubric): what evidence attribution (bench.report.attribution) can trace."""
        return not rules.is_abstention(question_id) and question_type != "single-session-preference"

    def judge_probes(self, questions: Sequence[Instance], n: int, seed: int = 0) -> list[Any]:
        """Wrong-but-on-topic and correct responses to `n` of `questions` for `ombench judge-audit`
        (bench.benchmarks.longmemeval.judge_probes)."""
        from bench.benchmarks.longmemeval.judge_probes import judge_probes

        return list(judge_probes(questions, n, seed))

    def judge_name(self, model: str) -> str:
        """A judge model as the official scripts name it (`openai/gpt-4o-2024-08-06` -> `gpt-4o-2024-08-06`)."""
        return rules.official_model_name(model)
