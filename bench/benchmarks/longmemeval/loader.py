"""Find, read, hash and validate a LongMemEval file: explicit path -> mirror folder -> HF hub (pinned revision).

Files are streamed one question at a time (bench.benchmarks.longmemeval.stream, `ijson`), not
`datasets.load_dataset("json")`: LongMemEval's `answer` is a str or an int, which an
Arrow schema rejects (`Dataset.to_hf()` gives a `datasets.Dataset` with the answer as text).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from bench.benchmarks.longmemeval import hub
from bench.benchmarks.longmemeval.rules import QUESTION_TYPES
from bench.data.dataset import Dataset
from bench.data.schema import Instance
from bench.benchmarks.longmemeval.format import ParseStats, check_first_entry, parse_instance
from bench.benchmarks.longmemeval.stream import SUFFIXES, iter_values, suffix_of
from bench.data.streamed import KEEP_CHARS, QuestionMeta, Reader, StreamedQuestions, content_chars
from bench.errors import DataError

DATA_DIR_ENV = "LONGMEMEVAL_DATA_DIR"

# name -> (file on the hub, stems looked for in a mirror folder, in order of preference)
KNOWN_NAMES: dict[str, tuple[str, tuple[str, ...]]] = {
    "longmemeval_oracle": ("longmemeval_oracle.json", ("longmemeval_oracle",)),
    "longmemeval_s": ("longmemeval_s_cleaned.json", ("longmemeval_s", "longmemeval_s_cleaned", "longmemeval_s_cleaned_498")),
    "longmemeval_s_cleaned": ("longmemeval_s_cleaned.json", ("longmemeval_s_cleaned", "longmemeval_s_cleaned_498")),
    # the original release of S (xiaowu0162/longmemeval, as Mastra's runner downloads it; bench...longmemeval.hub)
    "longmemeval_s_original": (hub.ORIGINAL_S_FILE, ("longmemeval_s_original",)),
    "longmemeval_m": ("longmemeval_m_cleaned.json", ("longmemeval_m", "longmemeval_m_cleaned")),
    "longmemeval_m_cleaned": ("longmemeval_m_cleaned.json", ("longmemeval_m_cleaned",)),
}
@dataclass(frozen=True)
class KnownFile:
    split: str
    official: bool
    note: str = ""


# sha256 of the decompressed JSON bytes: the official files of the HF dataset xiaowu0162/longmemeval-cleaned, the
# original S (xiaowu0162/longmemeval), and a known subset of S.
KNOWN_SHA256: dict[str, KnownFile] = {
    "821a2034d219ab45846873dd14c14f12cfe7776e73527a483f9dac095d38620c": KnownFile("oracle", True),
    "d6f21ea9d60a0d56f34a05b609c79c88a451d2ae03597821ea3d5a9678c3a442": KnownFile("S (cleaned)", True),
    "9d79e5524794a2e6900a3aa9cb7d9152c5a3e8319c9a87c25494ba1eacee495f": KnownFile("M (cleaned)", True),
    hub.PINNED_SHA256[hub.ORIGINAL_S_FILE]: KnownFile(
        "S (original)", True, "the original release (xiaowu0162/longmemeval), not the cleaned one"),
    "ec6c1b1f821509b686a40f0bf47556b7b9b015d501633db13e8e751067108be2": KnownFile(
        "S (cleaned)",
        False,
        "498-of-500 subset of LongMemEval_S (cleaned), missing 7e00a6cb and gpt4_7a0daae1; each instance identical to the official one",
    ),
}


def infer_split(n_sessions: int, n_questions: int) -> str:
    """For a file whose hash is not known: judge by haystack size (oracle 1-6 sessions, S ~48, M ~500), from the
    total sessions of its `n_questions` questions."""
    if not n_questions:
        return "unknown"
    avg = n_sessions / n_questions
    if avg <= 6:
        return "oracle-like"
    return "S-like" if avg <= 150 else "M-like"




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


def read_dataset(path: str | Path, name: str | None = None, *, keep_chars: int = KEEP_CHARS) -> Dataset:
    """Read, hash (decompressed bytes, in chunks), validate and label one file, one question at a time.

    Every question is parsed and validated once (same one-line errors as before); the file's questions are kept in
    memory when their turns hold at most `keep_chars` characters (oracle, S), else only their (id, type, size) are
    kept and the questions are read from the file again on each pass (`StreamedQuestions`: M, 2.6 GB), parsing
    only those a subset chose. Raises DataError for a missing, unreadable or malformed file."""
    path = Path(path)
    source = str(path)
    hasher = hashlib.sha256()
    stats = ParseStats()
    metas: list[QuestionMeta] = []
    held: list[Instance] | None = []
    seen: set[str] = set()
    sessions = chars = 0
    for index, raw in enumerate(iter_values(path, hasher)):
        if index == 0:
            check_first_entry(raw, source)
        inst = parse_instance(raw, source, index, stats)
        del raw
        if inst.question_id in seen:
            raise DataError(f"{source}: question {inst.question_id}: field 'question_id' is duplicated; every question id must be unique")
        seen.add(inst.question_id)
        size = content_chars(inst)
        metas.append(QuestionMeta(inst.question_id, inst.question_type, size))
        sessions, chars = sessions + len(inst.sessions), chars + size
        if held is not None:
            held.append(inst)
            if chars > keep_chars:
                held = None  # too large to hold: read again on each pass
    if not metas:
        raise DataError(f"{source}: the file holds no questions; point at a LongMemEval file with at least one question")
    digest = hasher.hexdigest()
    known = KNOWN_SHA256.get(digest)
    if known is not None:
        split, official, note = known.split, known.official, known.note
    else:
        split, official = infer_split(sessions, len(metas)), False
        note = f"sha256 is not an official LongMemEval file; split {split!r} inferred from haystack sizes"
    notes = stats.notes()
    if notes:
        note = "; ".join([note, *notes]) if note else "; ".join(notes)
    instances: Sequence[Instance] = held if held is not None else StreamedQuestions(
        metas, _reader(path), source=source, keep_chars=keep_chars)
    return Dataset(instances=instances, name=name or _stem(path), path=path, sha256=digest, official=official,
                   split=split, note=note, format_notes=notes, types=QUESTION_TYPES)


def _reader(path: Path) -> Reader:
    """Re-reads `path` for a StreamedQuestions: parses only the wanted questions; refuses a file changed since."""
    source = str(path)
    stamp = _stamp(path)

    def read(wanted: frozenset[str]) -> Iterator[Instance]:
        if _stamp(path) != stamp:
            raise DataError(f"{source}: changed since it was loaded (size or modification time); restore it or start "
                            "the command again")
        for index, raw in enumerate(iter_values(path)):
            if isinstance(raw, dict) and raw.get("question_id") in wanted:
                yield parse_instance(raw, source, index)

    return read


def _stamp(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc}); check the path and its permissions") from None
    return st.st_size, st.st_mtime_ns


def _stem(path: Path) -> str:
    suffix = suffix_of(path)
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
        folders = [folder / f"{s}{x}" for s in stems for x in SUFFIXES if (folder / f"{s}{x}").is_dir()]
        if not folder.exists():
            looked.append(f"{folder} does not exist")
        elif not folder.is_dir():
            looked.append(f"{folder} is a file, not a folder")
        elif folders:
            looked.append(f"{folders[0]} is a folder, not a data file")
    return _from_hub(name, hub_file, folder, looked), True


def _where_hint(hub_file: str, folder: Path | None, save_as: str | None = None) -> str:
    """Where to put the file by hand; `save_as`: the name the loader looks for when it is not the hub file's."""
    url = hub.file_url(hub_file)
    what = f"{hub_file} (or {hub_file}.xz)" if save_as is None else f"{hub_file} as {save_as} (or {save_as}.xz)"
    if folder is not None:
        return f"put {what} from {url} into {folder}"
    return f"put {what} from {url} into a folder and set {DATA_DIR_ENV} to it (or pass --data-dir)"


def _save_as(name: str) -> str | None:
    """The file name a mirror folder needs for `name` when the hub file's own name would not be found."""
    hub_file, stems = KNOWN_NAMES[name]
    return None if any(hub_file == f"{s}{x}" for s in stems for x in SUFFIXES) else f"{stems[0]}.json"


def _from_hub(name: str, hub_file: str, folder: Path | None, looked: list[str]) -> Path:
    """The pinned file from the Hugging Face cache, else downloaded through `datasets` (bench.benchmarks.longmemeval.hub)."""
    where = f"not found in {folder} (looked for {', '.join(looked)})" if folder is not None else f"no data folder given ({DATA_DIR_ENV} unset)"
    cached = hub.cached_file(hub_file)
    if cached is not None:
        return cached
    reason = hub.unreachable_reason()
    if reason is not None:
        raise DataError(f"{name}: {where} and the HF hub is unreachable ({reason}); "
                        f"{_where_hint(hub_file, folder, _save_as(name))}")
    try:
        return hub.download(hub_file)
    except Exception as exc:  # network, auth, disk: all end the same way for the user
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"{name}: {where} and downloading {hub_file} from {hub.source_of(hub_file)[0]} failed ({first}); "
                        f"{_where_hint(hub_file, folder, _save_as(name))}") from None


def _check_pinned(ds: Dataset, hub_file: str) -> None:
    """A file fetched at the pinned revision must be byte-identical to it (a damaged cache, a wrong mirror)."""
    want = hub.PINNED_SHA256.get(hub_file)
    if want is not None and ds.sha256 != want:
        repo, rev = hub.source_of(hub_file)
        raise DataError(f"{ds.path}: sha256 {ds.sha256[:12]}... is not the pinned {hub_file} of {repo}@{rev[:8]} "
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
