"""Questions read from their file when iterated, not held: what a `Dataset` holds for a file too large to keep.

`QuestionMeta` is what a first pass over the file keeps per question (id, type, size); `StreamedQuestions` is a
read-only sequence of chosen questions that re-reads the file for each pass, parses only the chosen ones and stops
after the last of them. A selection small enough (`keep_chars`) is kept in memory after its first full pass."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Sequence, overload

from bench.data.schema import Instance
from bench.errors import DataError

# Characters of turn content a selection may hold to be kept in memory after its first pass (LongMemEval_S whole:
# 244M, ~0.4 GB of RSS as Instances); larger selections are read from the file on every pass.
KEEP_CHARS = 300_000_000


@dataclass(frozen=True)
class QuestionMeta:
    """One question as the first pass saw it: id, type, and `chars` (characters of its turns' content)."""

    question_id: str
    question_type: str
    chars: int = 0


def metas_of(instances: Iterable[Instance]) -> list[QuestionMeta]:
    """QuestionMeta of in-memory questions (or the kept metadata of streamed ones, without reading the file)."""
    if isinstance(instances, StreamedQuestions):
        return list(instances.metas)
    return [QuestionMeta(i.question_id, i.question_type, content_chars(i)) for i in instances]


def content_chars(inst: Instance) -> int:
    return sum(len(t.content) for s in inst.sessions for t in s.turns)


# reader(wanted ids) -> the file's questions with those ids, parsed, in file order (others skipped unparsed)
Reader = Callable[[frozenset[str]], Iterator[Instance]]


class StreamedQuestions(Sequence[Instance]):
    """The questions `metas` (file order) of a file read through `reader` on every pass.

    Iterating streams the file and stops after the last chosen question; `[k]` reads up to the k-th; a slice is
    another StreamedQuestions over the same file. `keep_chars`: a selection whose content is at most this many
    characters is kept in memory after its first complete pass."""

    def __init__(self, metas: Sequence[QuestionMeta], reader: Reader, *, source: str = "",
                 keep_chars: int = KEEP_CHARS) -> None:
        self.metas = tuple(metas)
        self._reader = reader
        self._source = source
        self._keep_chars = keep_chars
        self._kept: list[Instance] | None = None

    def restrict(self, ids: Iterable[str]) -> "StreamedQuestions":
        """The same file, only these ids (kept in file order)."""
        keep = set(ids)
        return StreamedQuestions([m for m in self.metas if m.question_id in keep], self._reader, source=self._source,
                                 keep_chars=self._keep_chars)

    def __len__(self) -> int:
        return len(self.metas)

    def __iter__(self) -> Iterator[Instance]:
        if self._kept is not None:
            yield from self._kept
            return
        wanted = frozenset(m.question_id for m in self.metas)
        if not wanted:
            return
        keep = sum(m.chars for m in self.metas) <= self._keep_chars
        got: list[Instance] = []
        left = set(wanted)
        for inst in self._reader(wanted):
            if inst.question_id not in left:
                continue
            left.discard(inst.question_id)
            if keep:
                got.append(inst)
            yield inst
            if not left:
                break
        if left:
            raise DataError(f"{self._source}: question {sorted(left)[0]}: no longer in the file ({len(left)} missing); "
                            "the file changed while the run read it; restore it or start the run again")
        if keep:
            self._kept = got

    @overload
    def __getitem__(self, index: int) -> Instance: ...

    @overload
    def __getitem__(self, index: slice) -> "StreamedQuestions": ...

    def __getitem__(self, index: int | slice) -> "Instance | StreamedQuestions":
        if isinstance(index, slice):
            return StreamedQuestions(self.metas[index], self._reader, source=self._source, keep_chars=self._keep_chars)
        meta = self.metas[index]
        for inst in self.restrict([meta.question_id]):
            return inst
        raise IndexError(index)  # pragma: no cover (restrict raises DataError first)

    def __repr__(self) -> str:
        return f"StreamedQuestions({len(self)} questions of {self._source})"
