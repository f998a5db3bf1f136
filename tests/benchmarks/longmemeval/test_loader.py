"""Loading LongMemEval files by name or path, provenance (sha256, official, split), offline errors, subsets."""

from __future__ import annotations

import gzip
import json
import lzma
import os
from pathlib import Path

import pytest

from bench.benchmarks.longmemeval.rules import is_abstention
from bench.data.dataset import Dataset
from bench.benchmarks.longmemeval.loader import load_dataset, read_dataset
from bench.data.stats import token_summary
from bench.benchmarks.longmemeval.synthetic import generate
from bench.benchmarks.longmemeval.format import QUESTION_TYPES
from bench.errors import DataError

ORACLE_SHA = "821a2034d219ab45846873dd14c14f12cfe7776e73527a483f9dac095d38620c"


def real_dir() -> str:
    folder = os.environ.get("LONGMEMEVAL_DATA_DIR")
    if not folder:
        pytest.skip("real data: set LONGMEMEVAL_DATA_DIR to the folder with the LongMemEval files")
    return folder


@pytest.fixture(scope="module")
def s498() -> tuple[Dataset, dict[str, int]]:
    """LongMemEval_S (the 498 subset) loaded once per module; its token summary computed once."""
    folder = real_dir()
    ds = load_dataset("longmemeval_s", folder)
    return ds, token_summary(ds.instances)


@pytest.mark.realdata
def test_oracle_from_env_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LONGMEMEVAL_DATA_DIR", real_dir())
    ds = load_dataset("longmemeval_oracle")
    assert len(ds) == 500 and ds.sha256 == ORACLE_SHA
    assert ds.official and ds.is_full_official and ds.split == "oracle" and ds.subset_ids is None
    assert ds.type_counts() == {
        "multi-session": 133, "temporal-reasoning": 133, "knowledge-update": 78,
        "single-session-user": 70, "single-session-assistant": 56, "single-session-preference": 30,
    }
    assert ds.abstention_count(lambda i: is_abstention(i.question_id)) == 30
    assert sum(isinstance(i.answer, int) for i in ds.instances) == 32  # int answers survive validation


@pytest.mark.realdata
@pytest.mark.slow  # loads LongMemEval_S and counts its tokens
def test_s498_is_the_known_subset(s498: tuple[Dataset, dict[str, int]]) -> None:
    ds, tokens = s498
    assert len(ds) == 498 and not ds.official and ds.split == "S (cleaned)"
    assert ds.path is not None and ds.path.name == "longmemeval_s_cleaned_498.json.xz"
    assert "498-of-500" in ds.note
    assert ds.abstention_count(lambda i: is_abstention(i.question_id)) == 30
    ids = {i.question_id for i in ds.instances}
    assert "7e00a6cb" not in ids and "gpt4_7a0daae1" not in ids
    assert tokens["p50"] > 100_000 and tokens["max"] >= tokens["p50"] >= tokens["min"]


@pytest.mark.realdata
@pytest.mark.slow  # loads LongMemEval_S and counts its tokens
def test_s498_subsets_are_reproducible(s498: tuple[Dataset, dict[str, int]]) -> None:
    ds, _ = s498
    a = ds.subset(per_type=2, seed=7)
    b = ds.subset(per_type=2, seed=7)
    assert a.subset_ids == b.subset_ids and len(a) == 12
    assert all(n == 2 for n in a.type_counts().values())
    assert ds.subset(ids=a.subset_ids).subset_ids == a.subset_ids  # a recorded subset replays exactly
    assert a.sha256 == ds.sha256 and not a.is_full_official


def _write_all_formats(tmp_path: Path, raw: list[dict]) -> list[Path]:
    text = json.dumps(raw, indent=1)
    lines = "".join(json.dumps(q) + "\n" for q in raw)
    paths = {
        "d.json": text.encode(), "d.json.xz": lzma.compress(text.encode()), "d.json.gz": gzip.compress(text.encode()),
        "d.jsonl": lines.encode(), "d.jsonl.xz": lzma.compress(lines.encode()), "lines.json": lines.encode(),
    }
    for name, data in paths.items():
        (tmp_path / name).write_bytes(data)
    return [tmp_path / name for name in paths]


def test_json_xz_jsonl_load_the_same_instances(tmp_path: Path) -> None:
    raw = generate(n_per_type=1, haystack_tokens=800, seed=3, abstention_per_type=1)
    raw[0]["answer"] = 42  # an int answer must survive every format
    loaded = [load_dataset(str(p)) for p in _write_all_formats(tmp_path, raw)]
    first = loaded[0]
    assert len(first) == len(raw) and first.instances[0].answer == 42
    for ds in loaded[1:]:
        assert ds.instances == first.instances, ds.path
    # the hash is of the decompressed bytes: .json and .json.xz agree
    assert loaded[0].sha256 == loaded[1].sha256 == loaded[2].sha256
    assert loaded[3].sha256 == loaded[4].sha256


def test_unknown_file_is_not_official_and_split_is_inferred(tmp_path: Path) -> None:
    small = tmp_path / "tiny.json"
    raw = generate(n_per_type=1, haystack_tokens=0, seed=1, abstention_per_type=0)  # evidence only: 1-4 sessions
    small.write_text(json.dumps(raw), encoding="utf-8")
    ds = read_dataset(small)
    assert not ds.official and ds.split == "oracle-like" and ds.name == "tiny" and "inferred" in ds.note
    big = tmp_path / "big.jsonl"
    big.write_text("".join(json.dumps(q) + "\n" for q in generate(n_per_type=1, haystack_tokens=3000)), encoding="utf-8")
    assert read_dataset(big).split == "S-like"


def test_mirror_folder_lookup_by_name(tmp_path: Path) -> None:
    raw = generate(n_per_type=1, haystack_tokens=300)
    (tmp_path / "longmemeval_oracle.jsonl").write_text("".join(json.dumps(q) + "\n" for q in raw), encoding="utf-8")
    ds = load_dataset("longmemeval_oracle", tmp_path)
    assert ds.name == "longmemeval_oracle" and ds.path == tmp_path / "longmemeval_oracle.jsonl"
    assert not ds.official  # a name does not make a file official; its hash does


def test_offline_without_files_says_what_to_put_where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("LONGMEMEVAL_DATA_DIR", raising=False)
    with pytest.raises(DataError) as info:
        load_dataset("longmemeval_s", tmp_path)
    msg = str(info.value)
    assert "\n" not in msg and str(tmp_path) in msg and "longmemeval_s_cleaned.json" in msg and "98d7416c" in msg
    with pytest.raises(DataError, match="LONGMEMEVAL_DATA_DIR"):
        load_dataset("longmemeval_oracle")  # no folder at all: the message names the env variable


def test_unknown_names_and_missing_paths(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="unknown dataset"):
        load_dataset("longmemeval_x")
    with pytest.raises(DataError, match="file not found"):
        load_dataset(str(tmp_path / "nope.json"))
    broken = tmp_path / "broken.json"
    broken.write_text('[{"question_id": ', encoding="utf-8")
    with pytest.raises(DataError, match="invalid JSON"):
        load_dataset(str(broken))
    not_xz = tmp_path / "fake.json.xz"
    not_xz.write_bytes(b"plain text")
    with pytest.raises(DataError, match="cannot decompress"):
        load_dataset(str(not_xz))


def test_synthetic_names() -> None:
    default = load_dataset("synthetic")
    assert default.split == "synthetic" and not default.official and default.path is None
    assert load_dataset(default.name).sha256 == default.sha256  # the name reproduces the sample
    one = load_dataset("synthetic:1")
    assert len(one) == 6 + 4
    other = load_dataset("synthetic:n_per_type=1,seed=5,haystack_tokens=500,abstention_per_type=0")
    assert len(other) == 6 and other.sha256 != one.sha256
    with pytest.raises(DataError, match="unknown parameter"):
        load_dataset("synthetic:colour=3")
    with pytest.raises(DataError, match="integer"):
        load_dataset("synthetic:seed=x")


def test_subset_filters_and_determinism() -> None:
    ds = load_dataset("synthetic:n_per_type=4,haystack_tokens=200,abstention_per_type=1")
    order = [i.question_id for i in ds.instances]
    first = ds.subset(first_n=5)
    assert first.subset_ids == order[:5] and first.note.startswith(ds.note)
    per = ds.subset(per_type={"multi-session": 2, "temporal-reasoning": 1}, seed=1)
    assert per.type_counts() == {"multi-session": 2, "temporal-reasoning": 1}
    assert per.subset_ids == [q for q in order if q in set(per.subset_ids)]  # file order kept
    assert ds.subset(per_type=3).type_counts() == {t: 3 for t in QUESTION_TYPES}
    sampled = [ds.subset(sample=6, seed=s).subset_ids for s in (0, 0, 1)]
    assert sampled[0] == sampled[1] and sampled[0] != sampled[2] and len(sampled[0]) == 6
    wanted = [order[7], order[2]]
    assert ds.subset(ids=wanted).subset_ids == [order[2], order[7]]
    chained = ds.subset(per_type=4, sample=10, first_n=3, seed=2)
    assert len(chained) == 3 and chained.subset_ids == ds.subset(per_type=4, sample=10, seed=2).subset_ids[:3]
    with pytest.raises(DataError, match="unknown question type"):
        ds.subset(per_type={"abstention": 1})
    with pytest.raises(DataError, match="syn_missing"):
        ds.subset(ids=["syn_missing"])
    assert ds.get(order[3]).question_id == order[3]


def test_a_folder_given_as_the_data_file_is_named_as_a_folder(tmp_path: Path) -> None:
    folder = tmp_path / "longmemeval_oracle.json"
    folder.mkdir()
    with pytest.raises(DataError) as err:
        load_dataset(str(folder))
    msg = str(err.value)
    assert "is a folder, not a data file" in msg and "dataset.data_dir" in msg and "\n" not in msg


def test_a_file_of_another_benchmark_is_named_not_longmemeval(tmp_path: Path) -> None:
    locomo = tmp_path / "locomo10.json"
    locomo.write_text(json.dumps([{"sample_id": "conv-26", "qa": [{"question": "q", "answer": "a"}],
                                   "conversation": {"speaker_a": "Caroline"}}]))
    with pytest.raises(DataError) as err:
        load_dataset(str(locomo))
    msg = str(err.value)
    assert "not LongMemEval" in msg and "sample_id" in msg and "\n" not in msg


@pytest.mark.parametrize("kind", ["missing", "file", "folder-inside"])
def test_a_data_dir_that_cannot_hold_the_file_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """Found by scripts/fault_trial.py: a missing data_dir, a file given as data_dir and a folder named like the data
    file inside it were all only "not found in <dir>"."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    data_dir = tmp_path / "data"
    if kind == "file":
        data_dir.write_text("x")
    elif kind == "folder-inside":
        (data_dir / "longmemeval_oracle.json").mkdir(parents=True)
    with pytest.raises(DataError) as err:
        load_dataset("longmemeval_oracle", data_dir=data_dir)
    want = {"missing": f"{data_dir} does not exist", "file": f"{data_dir} is a file, not a folder",
            "folder-inside": "longmemeval_oracle.json is a folder, not a data file"}[kind]
    assert want in str(err.value) and "\n" not in str(err.value)
