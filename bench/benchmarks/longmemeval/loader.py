"""Find, read, hash and validate a LongMemEval file: explicit path -> mirror folder -> HF hub (pinned revision).

Parsing is plain `json`, not `datasets.load_dataset("json")`: LongMemEval's `answer` is a str or an int, which an
Arrow schema rejects (`Dataset.to_hf()` gives a `datasets.Dataset` with the answer as text).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import lzma
import os
from pathlib import Path
from dataclasses import dataclass
from typing import Any

from bench.benchmarks.longmemeval import hub
from bench.benchmarks.longmemeval.rules import QUESTION_TYPES
from bench.data.dataset import Dataset
from bench.data.schema import Instance
from bench.benchmarks.longmemeval.format import ParseStats, parse_instances
from bench.errors import DataError

DATA_DIR_ENV = "LONGMEMEVAL_DATA_DIR"

# name -> (file on the hub, stems looked for in a mirror folder, in order of preference)
KNOWN_NAMES: dict[str, tuple[str, tuple[str, ...]]] = {
    "longmemeval_oracle": ("longmemeval_oracle.json", ("longmemeval_oracle",)),
    "longmemeval_s": ("longmemeval_s_cleaned.json", ("longmemeval_s", "longmemeval_s_cleaned", "longmemeval_s_cleaned_498")),
    "longmemeval_s_cleaned": ("longmemeval_s_cleaned.json", ("longmemeval_s_cleaned", "longmemeval_s_cleaned_498")),
    "longmemeval_m": ("longmemeval_m_cleaned.json", ("longmemeval_m", "longmemeval_m_cleaned")),
    "longmemeval_m_cleaned": ("longmemeval_m_cleaned.json", ("longmemeval_m_cleaned",)),
}
@dataclass(frozen=True)
class KnownFile:
    split: str
    official: bool
    note: str = ""


# sha256 of the decompressed JSON bytes: the official files of the HF dataset xiaowu0162/longmemeval-cleaned,
# and a known subset of S.
KNOWN_SHA256: dict[str, KnownFile] = {
    "821a2034d219ab45846873dd14c14f12cfe7776e73527a483f9dac095d38620c": KnownFile("oracle", True),
    "d6f21ea9d60a0d56f34a05b609c79c88a451d2ae03597821ea3d5a9678c3a442": KnownFile("S (cleaned)", True),
    "9d79e5524794a2e6900a3aa9cb7d9152c5a3e8319c9a87c25494ba1eacee495f": KnownFile("M (cleaned)", True),
    "ec6c1b1f821509b686a40f0bf47556b7b9b015d501633db13e8e751067108be2": KnownFile(
        "S (cleaned)",
        False,
        "498-of-500 subset of LongMemEval_S (cleaned), missing 7e00a6cb and gpt4_7a0daae1; each instance identical to the official one",
    ),
}


def infer_split(instances: list[Instance]) -> str:
    """For a file whose hash is not known: judge by haystack size (oracle 1-6 sessions, S ~48, M ~500)."""
    if not instances:
        return "unknown"
    avg = sum(len(i.sessions) for i in instances) / len(instances)
    if avg <= 6:
        return "oracle-like"
    return "S-like" if avg <= 150 else "M-like"


SUFFIXES = (".json", ".json.xz", ".json.gz", ".jsonl", ".jsonl.xz", ".jsonl.gz")


def load_dataset(name_or_path: str | Path, data_dir: str | Path | None = None) -> Dataset:
    """A known name (`longmemeval_oracle`, `longmemeval_s[_cleaned]`, `longmemeval_m[_cleaned]`, `synthetic`,
    `synthetic:N`, `synthetic:n_per_type=3,haystack_tokens=2000,seed=1`) or a path to .json/.json.xz/.jsonl.

    `data_dir` (else env LONGMEMEVAL_DATA_DIR) is a mirror folder searched for the known names; when the file
    is not there it is read from the Hugging Face cache at the pinned revision, else downloaded there with
    `datasets` (bench.benchmarks.longmemeval.hub) and must then match the pinned sha256. Raises DataError (one line) for a missing
    file with the hub unreachable, a failed download, a hash that is not the pinned one, or a malformed file.
    """
    text = str(name_or_path)
    if text == "synthetic" or text.startswith("synthetic:"):
        return _load_synthetic(text)
    if text in KNOWN_NAMES:
        path, from_hub = _locate_known(text, data_dir)
        ds = read_dataset(path, name=text)
        if from_hub:
            _check_pinned(ds, KNOWN_NAMES[text][0])
        return ds
    path = Path(text).expanduser()
    if path.is_file():
        return read_dataset(path)
    if path.is_dir():
        raise DataError(f"{text}: is a folder, not a data file; give the file inside it (e.g. {path / 'longmemeval_s.json'}) "
                        "or set dataset.data_dir to the folder and name the dataset")
    if path.suffix or os.sep in text or "/" in text:
        raise DataError(f"{text}: file not found; check the path (or use a dataset name: {', '.join(KNOWN_NAMES)}, synthetic)")
    raise DataError(f"unknown dataset {text!r}: give a path to a .json/.json.xz/.jsonl file or one of {', '.join(KNOWN_NAMES)}, synthetic")


def read_dataset(path: str | Path, name: str | None = None) -> Dataset:
    """Read, hash (decompressed bytes), validate, and label one file."""
    path = Path(path)
    data = read_bytes(path)
    digest = hashlib.sha256(data).hexdigest()
    raw = decode_json(data, path)
    stats = ParseStats()
    instances = parse_instances(raw, str(path), stats)
    known = KNOWN_SHA256.get(digest)
    if known is not None:
        split, official, note = known.split, known.official, known.note
    else:
        split, official = infer_split(instances), False
        note = f"sha256 is not an official LongMemEval file; split {split!r} inferred from haystack sizes"
    notes = stats.notes()
    if notes:
        note = "; ".join([note, *notes]) if note else "; ".join(notes)
    return Dataset(instances=instances, name=name or _stem(path), path=path, sha256=digest, official=official,
                   split=split, note=note, format_notes=notes, types=QUESTION_TYPES)


def read_bytes(path: Path) -> bytes:
    try:
        if path.name.endswith(".xz"):
            with lzma.open(path) as fh:
                return fh.read()
        if path.name.endswith(".gz"):
            with gzip.open(path) as fh:
                return fh.read()
        return path.read_bytes()
    except FileNotFoundError:
        raise DataError(f"{path}: file not found; check the path") from None
    except (lzma.LZMAError, gzip.BadGzipFile, EOFError) as exc:
        raise DataError(f"{path}: cannot decompress ({exc}); re-download the file or give the uncompressed .json") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc}); check the path and its permissions") from None


def decode_json(data: bytes, path: Path) -> Any:
    """A JSON array, or JSONL (one question per line): the official loaders accept both."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text at byte {exc.start}; LongMemEval files are UTF-8 JSON") from None
    if _stem_suffix(path).startswith(".jsonl"):
        return _decode_jsonl(text, path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if not text.lstrip().startswith("["):
            try:  # a .json holding one question per line, as the official loaders tolerate
                return _decode_jsonl(text, path)
            except DataError:
                pass
        raise DataError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno} ({exc.msg}); fix or re-download the file") from None


def _decode_jsonl(text: str, path: Path) -> list[Any]:
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: invalid JSON on line {lineno} ({exc.msg}); each line of a .jsonl file must be one question object") from None
    return out


def _stem_suffix(path: Path) -> str:
    name = path.name
    for suffix in sorted(SUFFIXES, key=len, reverse=True):
        if name.endswith(suffix):
            return suffix
    return path.suffix


def _stem(path: Path) -> str:
    suffix = _stem_suffix(path)
    return path.name[: -len(suffix)] if suffix and path.name.endswith(suffix) else path.name


def _locate_known(name: str, data_dir: str | Path | None) -> tuple[Path, bool]:
    """The file for a known name and whether it came from the hub (then its hash must be the pinned one)."""
    hub_file, stems = KNOWN_NAMES[name]
    folder = data_dir if data_dir is not None else os.environ.get(DATA_DIR_ENV) or None
    looked: list[str] = []
    if folder is not None:
        folder = Path(folder).expanduser()
        for stem in stems:
            for suffix in SUFFIXES:
                candidate = folder / f"{stem}{suffix}"
                if candidate.is_file():
                    return candidate, False
        looked = [f"{s}.json[.xz]" for s in stems]
    return _from_hub(name, hub_file, folder, looked), True


def _where_hint(hub_file: str, folder: Path | None) -> str:
    url = hub.file_url(hub_file)
    if folder is not None:
        return f"put {hub_file} (or {hub_file}.xz) from {url} into {folder}"
    return f"put {hub_file} (or {hub_file}.xz) from {url} into a folder and set {DATA_DIR_ENV} to it (or pass --data-dir)"


def _from_hub(name: str, hub_file: str, folder: Path | None, looked: list[str]) -> Path:
    """The pinned file from the Hugging Face cache, else downloaded through `datasets` (bench.benchmarks.longmemeval.hub)."""
    where = f"not found in {folder} (looked for {', '.join(looked)})" if folder is not None else f"no data folder given ({DATA_DIR_ENV} unset)"
    cached = hub.cached_file(hub_file)
    if cached is not None:
        return cached
    reason = hub.unreachable_reason()
    if reason is not None:
        raise DataError(f"{name}: {where} and the HF hub is unreachable ({reason}); {_where_hint(hub_file, folder)}")
    try:
        return hub.download(hub_file)
    except Exception as exc:  # network, auth, disk: all end the same way for the user
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"{name}: {where} and downloading {hub_file} from {hub.HF_REPO} failed ({first}); {_where_hint(hub_file, folder)}") from None


def _check_pinned(ds: Dataset, hub_file: str) -> None:
    """A file fetched at the pinned revision must be byte-identical to it (a damaged cache, a wrong mirror)."""
    want = hub.PINNED_SHA256.get(hub_file)
    if want is not None and ds.sha256 != want:
        raise DataError(f"{ds.path}: sha256 {ds.sha256[:12]}... is not the pinned {hub_file} of {hub.HF_REPO}@{hub.HF_REVISION[:8]} "
                        f"({want[:12]}...); delete it from the Hugging Face cache and retry, or {_where_hint(hub_file, None)}")


def _load_synthetic(spec: str) -> Dataset:
    from bench.benchmarks.longmemeval.synthetic import synthetic_dataset

    params: dict[str, Any] = {}
    rest = spec.partition(":")[2].strip()
    if rest:
        for part in rest.split(","):
            key, eq, value = part.partition("=")
            key, value = key.strip(), value.strip()
            if not eq:  # `synthetic:N` = N questions per type
                key, value = "n_per_type", key
            try:
                params[key] = int(value)
            except ValueError:
                raise DataError(f"{spec}: parameter {key!r} must be an integer, got {value!r}; e.g. synthetic:n_per_type=3,haystack_tokens=2000,seed=1") from None
    import inspect

    from bench.benchmarks.longmemeval.synthetic import generate

    allowed = [p for p in inspect.signature(generate).parameters]
    for key in params:
        if key not in allowed:
            raise DataError(f"{spec}: unknown parameter {key!r}; use {', '.join(allowed)}")
    return synthetic_dataset(**params)
