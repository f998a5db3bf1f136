"""Streaming load: a file too large to hold (`keep_chars` exceeded) is read one question at a time, and its subsets
(limit, ids, stratified, per_type, sample) choose exactly the questions the in-memory load chooses, on the real
oracle file in every format (.json, .json.xz, .jsonl)."""

from __future__ import annotations

import hashlib
import json
import lzma
import os
from pathlib import Path

import pytest

from bench.benchmarks.longmemeval.loader import load_dataset, read_dataset
from bench.benchmarks.longmemeval.stream import iter_values
from bench.data.dataset import Dataset
from bench.data.streamed import StreamedQuestions
from bench.errors import DataError

ORACLE_SHA = "821a2034d219ab45846873dd14c14f12cfe7776e73527a483f9dac095d38620c"
# subset -> sha256[:16] of its ids joined by ",", as the loader before streaming chose them (commit ec28609, which
# read the whole file and filtered Instances): the streamed selection must be the same questions
SUBSETS: list[tuple[dict, str]] = [
    ({"first_n": 7}, "213605ffdd55a2a4"),
    ({"stratified": 12, "seed": 3}, "5923e93ee956ba31"),
    ({"per_type": {"multi-session": 2, "knowledge-update": 1}, "seed": 1}, "e9e107eba53844bf"),
    ({"per_type": 1}, "bed0deaac0a704bc"),
    ({"sample": 5, "seed": 2}, "20d34c1ed49b68c6"),
]


def oracle_xz() -> Path:
    folder = os.environ.get("LONGMEMEVAL_DATA_DIR")
    path = Path(folder or "/nonexistent") / "longmemeval_oracle.json.xz"
    if not path.is_file():
        pytest.skip("real data: set LONGMEMEVAL_DATA_DIR to the folder with longmemeval_oracle.json.xz")
    return path


@pytest.fixture(scope="module")
def oracle_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The real oracle file as .json.xz (as shipped), .json (decompressed) and .jsonl (one question per line)."""
    xz = oracle_xz()
    folder = tmp_path_factory.mktemp("oracle")
    plain = folder / "longmemeval_oracle.json"
    plain.write_bytes(lzma.decompress(xz.read_bytes()))
    lines = folder / "longmemeval_oracle.jsonl"
    with lines.open("w", encoding="utf-8") as fh:
        for q in iter_values(plain):
            fh.write(json.dumps(q, ensure_ascii=False) + "\n")
    return {"json.xz": xz, "json": plain, "jsonl": lines}


@pytest.fixture(scope="module")
def held() -> Dataset:
    ds = load_dataset(str(oracle_xz()))
    assert not ds.streamed  # the oracle file is small: held in memory, as before
    return ds


@pytest.mark.realdata
@pytest.mark.parametrize("fmt", ["json.xz", "json", "jsonl"])
def test_streamed_subsets_equal_the_held_ones(oracle_files: dict[str, Path], held: Dataset, fmt: str) -> None:
    streamed = read_dataset(oracle_files[fmt], keep_chars=0)
    assert streamed.streamed and isinstance(streamed.instances, StreamedQuestions)
    assert len(streamed) == len(held) == 500
    assert streamed.question_ids() == held.question_ids()
    assert streamed.type_counts() == held.type_counts()
    if fmt != "jsonl":  # the hash is of the decompressed bytes: .json and .json.xz are the official file
        assert streamed.sha256 == held.sha256 == ORACLE_SHA and streamed.official and streamed.split == "oracle"
    for kwargs, before in SUBSETS:
        a, b = held.subset(**kwargs), streamed.subset(**kwargs)
        assert hashlib.sha256(",".join(b.subset_ids or []).encode()).hexdigest()[:16] == before, kwargs
        assert a.subset_ids == b.subset_ids and (fmt == "jsonl" or a.note == b.note), kwargs
        assert list(b) == list(a), kwargs  # the same questions, parsed from the file on demand
    ids = [held.question_ids()[k] for k in (430, 3, 251)]
    assert streamed.subset(ids=ids).subset_ids == held.subset(ids=ids).subset_ids
    assert streamed.get(ids[0]) == held.get(ids[0])
    assert streamed.instances[499] == held.instances[499]


@pytest.mark.realdata
def test_a_streamed_selection_is_not_kept_and_a_small_one_is(oracle_files: dict[str, Path]) -> None:
    big = read_dataset(oracle_files["json"], keep_chars=0).subset(first_n=3)
    assert [q.question_id for q in big] == [q.question_id for q in big]  # two passes, each from the file
    assert big.instances._kept is None  # type: ignore[attr-defined]
    small = read_dataset(oracle_files["json"], keep_chars=0)
    small.instances._keep_chars = 10**9  # type: ignore[attr-defined]
    chosen = small.subset(first_n=3)
    assert len(list(chosen)) == 3 and chosen.instances._kept is not None  # type: ignore[attr-defined]


@pytest.mark.realdata
def test_a_file_changed_after_loading_is_refused(oracle_files: dict[str, Path], tmp_path: Path) -> None:
    copy = tmp_path / "oracle.json"
    copy.write_bytes(oracle_files["json"].read_bytes())
    ds = read_dataset(copy, keep_chars=0)
    with copy.open("ab") as fh:
        fh.write(b"\n")
    with pytest.raises(DataError, match="changed since it was loaded"):
        list(ds.subset(first_n=1))


def test_one_object_per_line_in_a_json_file_and_bad_shapes(tmp_path: Path) -> None:
    lines = tmp_path / "lines.json"
    lines.write_text('{"a": 1}\n{"a": 2}\n', encoding="utf-8")
    assert list(iter_values(lines)) == [{"a": 1}, {"a": 2}]
    one = tmp_path / "one.json"
    one.write_text('{"a": 1}', encoding="utf-8")
    with pytest.raises(DataError, match="holds a JSON dict, not an array"):
        list(iter_values(one))
    assert list(iter_values(one, one_object_ok=True)) == [{"a": 1}]
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"a": 1}\n{"a": \n', encoding="utf-8")
    with pytest.raises(DataError, match="invalid JSON on line 2"):
        list(iter_values(broken))
    floats = tmp_path / "floats.json"
    floats.write_text('[{"x": 1.5, "n": 3}]', encoding="utf-8")
    assert list(iter_values(floats)) == [{"x": 1.5, "n": 3}]  # floats as float, ints as int
