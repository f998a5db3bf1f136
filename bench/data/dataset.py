"""A loaded dataset: questions plus provenance (benchmark, sha256, official or not, split), and reproducible subsets."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, Sequence

from bench.data.schema import Instance
from bench.data.streamed import QuestionMeta, StreamedQuestions, metas_of
from bench.errors import DataError

if TYPE_CHECKING:
    import datasets


def stratified_quotas(counts: Mapping[str, int], n: int) -> dict[str, int]:
    """Questions to take per type for a subset of `n` that keeps the dataset's type proportions: the largest
    remainder method over `counts`, with every type getting at least one question when `n` allows (so the
    task average covers every type). Quotas never exceed a type's count; their sum is min(n, total)."""
    total = sum(counts.values())
    n = min(n, total)
    types = [t for t in counts if counts[t] > 0]
    if n <= 0 or not types:
        return {}
    exact = {t: n * counts[t] / total for t in types}
    quota = {t: int(exact[t]) for t in types}
    for t in sorted(types, key=lambda t: (-(exact[t] - quota[t]), -counts[t], t))[: n - sum(quota.values())]:
        quota[t] += 1
    if n >= len(types):  # lift empty types to one question, taken from the largest quotas
        for t in [t for t in types if quota[t] == 0]:
            donor = max(types, key=lambda d: (quota[d], counts[d]))
            quota[donor] -= 1
            quota[t] = 1
    return {t: q for t, q in quota.items() if q > 0}


@dataclass
class Dataset:
    """Questions in file order. `official` is about the file (its sha256 is an official release); a subset keeps
    the file's sha256 and official flag and records its chosen ids in `subset_ids` (None = the whole file).
    `benchmark` names the benchmark it belongs to (bench.benchmarks); `types` its question types in the order
    summaries and per-type subsets go through them (types it does not list follow in order of appearance).

    Iterate it (`for q in ds`, `len(ds)`) rather than reaching for `instances`: a large file's questions are a
    `StreamedQuestions` (bench.data.streamed), read from the file on each pass; ids, types and subsets come from
    the metadata of its first pass (`metas()`, `question_ids()`) without reading the file again."""

    instances: Sequence[Instance]
    name: str
    path: Path | None
    sha256: str
    official: bool
    split: str  # "oracle", "S (cleaned)", "M (cleaned)", "synthetic", "oracle-like", "S-like", "M-like", "unknown"
    subset_ids: list[str] | None = None
    note: str = ""
    format_notes: tuple[str, ...] = ()  # what was accepted that the official format does not have (ISO dates)
    benchmark: str = "longmemeval"
    types: tuple[str, ...] = ()
    shard: tuple[int, int] | None = None  # (i, n): the i-th of n parts of the run's questions (`shard`)
    run_size: int | None = None  # questions of the whole run a shard belongs to (None: this dataset is the run)
    _by_id: dict[str, Instance] = field(default_factory=dict, init=False, repr=False, compare=False)
    _metas: list[QuestionMeta] | None = field(default=None, init=False, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.instances)

    def __iter__(self) -> Iterator[Instance]:
        return iter(self.instances)

    @property
    def is_full_official(self) -> bool:
        """The whole of an official file: the only case where scores compare with published ones."""
        return self.official and self.subset_ids is None

    @property
    def planned(self) -> int:
        """Questions of the run this dataset computes (all its shards together)."""
        return self.run_size if self.run_size is not None else len(self)

    def part(self, index: int, count: int, unit_of: Callable[[Instance], str] | None = None) -> "Dataset":
        """The `index`-th (1-based) of `count` parts of these questions, for one run split across processes or
        machines: isolation units (`unit_of`, None = every question its own) in order of first appearance are dealt
        round-robin, so the parts differ by at most one unit and a unit's questions stay together. Deterministic;
        the parts are disjoint and together hold every question. A part keeps `sha256` and `subset_ids` (the run
        key is the whole run's: its shards merge into one run) and records `shard` and `run_size`."""
        if not 1 <= index <= count:
            raise DataError(f"shard {index}/{count}: write i/n with 1 <= i <= n")
        if unit_of is None:
            keys = [m.question_id for m in self.metas()]
            key_of = {k: k for k in keys}
        else:
            key_of = {i.question_id: unit_of(i) for i in self.instances}
            keys = list(key_of.values())
        slot = {u: k % count for k, u in enumerate(dict.fromkeys(keys))}
        ids = [m.question_id for m in self.metas() if slot[key_of[m.question_id]] == index - 1]
        note = f"shard {index}/{count}: {len(ids)} of the run's {len(self)} questions"
        return replace(self, instances=self._select(ids), shard=(index, count), run_size=self.planned,
                       note=f"{self.note}; {note}" if self.note else note)

    @property
    def streamed(self) -> bool:
        """Whether the questions are read from the file on each pass (a file too large to hold)."""
        return isinstance(self.instances, StreamedQuestions)

    def metas(self) -> list[QuestionMeta]:
        """(id, type, content characters) of every question, in file order, without reading a streamed file."""
        if self._metas is None:
            self._metas = metas_of(self.instances)
        return self._metas

    def question_ids(self) -> list[str]:
        return [m.question_id for m in self.metas()]

    def get(self, question_id: str) -> Instance:
        if question_id not in {m.question_id for m in self.metas()}:
            raise DataError(f"{self.path or self.name}: question {question_id}: not in this dataset; check the id")
        if isinstance(self.instances, StreamedQuestions):
            return self.instances.restrict([question_id])[0]
        if not self._by_id:
            self._by_id = {i.question_id: i for i in self.instances}
        return self._by_id[question_id]

    def type_counts(self) -> dict[str, int]:
        counts = Counter(m.question_type for m in self.metas())
        return {t: counts[t] for t in self._type_order(counts) if counts[t]}

    def _type_order(self, counts: Mapping[str, int]) -> list[str]:
        return [*self.types, *(t for t in counts if t not in self.types)]

    def coverage_warning(self, full: "Dataset", knobs: str = "this subset") -> str | None:
        """One line when this subset covers fewer question types than `full`, else None."""
        have, all_types = self.type_counts(), full.type_counts()
        missing = [t for t in all_types if t not in have]
        if not missing:
            return None
        kept = ", ".join(have) or "none"
        return (f"{knobs} keeps {len(have)} of the {len(all_types)} question types of {full.name} ({kept}): the macro "
                f"average covers only those and the official task average is nan; for a representative subset use "
                f"dataset.stratified=N (per type, in proportion, seeded)")

    def abstention_count(self, is_abstention: Callable[[Instance], bool]) -> int:
        """Unanswerable questions, by the benchmark's rule (`Benchmark.is_abstention`)."""
        return sum(1 for i in self.instances if is_abstention(i))

    def to_hf(self) -> "datasets.Dataset":
        """These questions (a subset keeps only its own) as a `datasets.Dataset` with LongMemEval's columns,
        for the Hugging Face API (map, filter, to_pandas, push_to_hub); `answer` is a string there."""
        from bench.benchmarks.longmemeval.hub import to_hf_dataset

        return to_hf_dataset(list(self.instances), self.name)

    def subset(
        self,
        first_n: int | None = None,
        per_type: Mapping[str, int] | int | None = None,
        ids: list[str] | None = None,
        sample: int | None = None,
        seed: int = 0,
        stratified: int | None = None,
        names: Mapping[str, str] | None = None,
    ) -> "Dataset":
        """Filters applied in this order: `ids` (kept in file order), `per_type` (a seeded random pick of up to
        the quota per question_type; an int applies to every type of the benchmark), `stratified` (N questions split over the
        types in proportion to their counts, see `stratified_quotas`, a seeded random pick within each),
        `sample` (seeded random pick of that many), `first_n`. The result is in file order and deterministic
        for the same arguments; quotas above what a type holds take all of it. `names`: what the caller calls
        each argument (`{"first_n": "dataset.limit"}` for `ombench run`, `--first-n` for `ombench data`), used
        in errors and in the subset's note."""
        source = str(self.path or self.name)
        name = {k: k for k in ("first_n", "per_type", "ids", "sample", "seed", "stratified")} | dict(names or {})
        chosen = self.metas()
        # empty `ids` / `per_type` mapping mean "no filter" (config defaults), never "select nothing"
        ids = list(ids) if ids else None
        if per_type is not None and not isinstance(per_type, int) and not per_type:
            per_type = None
        if ids is not None:
            wanted = list(dict.fromkeys(ids))
            have = {i.question_id for i in chosen}
            missing = [q for q in wanted if q not in have]
            if missing:
                raise DataError(f"{source}: question {missing[0]}: not in this dataset ({len(missing)} unknown ids); check the ids of the subset "
                                "(quote ids that look like numbers, e.g. dataset.ids=['1e043500'])")
            keep = set(wanted)
            chosen = [i for i in chosen if i.question_id in keep]
        if per_type is not None:
            known = self.types or tuple(self._type_order(Counter(i.question_type for i in chosen)))
            quotas = {t: int(per_type) for t in known} if isinstance(per_type, int) else dict(per_type)
            unknown = [t for t in quotas if t not in known]
            if unknown:
                raise DataError(f"{source}: {name['per_type']} names unknown question type {unknown[0]!r}; use one of " + ", ".join(known))
            rng = random.Random(f"per_type:{seed}")
            keep_ids: set[str] = set()
            for qtype, quota in quotas.items():
                pool = [i.question_id for i in chosen if i.question_type == qtype]
                if quota < 0:
                    raise DataError(f"{source}: {name['per_type']} quota for {qtype!r} is {quota}; quotas must be >= 0")
                keep_ids.update(rng.sample(pool, min(quota, len(pool))))
            chosen = [i for i in chosen if i.question_id in keep_ids]
        if stratified is not None:
            if stratified < 0:
                raise DataError(f"{source}: {name['stratified']} is {stratified}; it must be >= 0")
            counts = Counter(i.question_type for i in chosen)
            rng = random.Random(f"stratified:{seed}")
            keep_ids = set()
            for qtype, quota in stratified_quotas(dict(counts), stratified).items():
                pool = [i.question_id for i in chosen if i.question_type == qtype]
                keep_ids.update(rng.sample(pool, quota))
            chosen = [i for i in chosen if i.question_id in keep_ids]
        if sample is not None:
            if sample < 0:
                raise DataError(f"{source}: {name['sample']} is {sample}; it must be >= 0")
            picked = set(random.Random(f"sample:{seed}").sample([i.question_id for i in chosen], min(sample, len(chosen))))
            chosen = [i for i in chosen if i.question_id in picked]
        if first_n is not None:
            if first_n < 0:
                raise DataError(f"{source}: {name['first_n']} is {first_n}; it must be >= 0")
            chosen = chosen[:first_n]
        given = {"ids": len(ids) if ids is not None else None, "per_type": per_type, "stratified": stratified,
                 "sample": sample, "first_n": first_n}
        how = ", ".join(f"{name[k]}={v}" for k, v in given.items() if v is not None)
        if per_type is not None or sample is not None or stratified is not None:
            how += f", {name['seed']}={seed}"
        note = f"subset of {len(chosen)}/{len(self)} questions ({how})"
        return replace(
            self,
            instances=self._select([m.question_id for m in chosen]),
            subset_ids=[m.question_id for m in chosen],
            note=f"{self.note}; {note}" if self.note else note,
        )

    def _select(self, ids: list[str]) -> Sequence[Instance]:
        """These questions (ids in file order), held as this dataset holds its own (in memory, or streamed)."""
        if isinstance(self.instances, StreamedQuestions):
            return self.instances.restrict(ids)
        keep = set(ids)
        return [i for i in self.instances if i.question_id in keep]
