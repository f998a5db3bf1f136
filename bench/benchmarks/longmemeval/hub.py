"""LongMemEval on the Hugging Face hub at pinned revisions: fetched with `datasets`, read back offline.

Two releases: the cleaned one (`xiaowu0162/longmemeval-cleaned`: oracle, S and M cleaned; the default names) and
the original one (`xiaowu0162/longmemeval`, file `longmemeval_s` without a suffix, as Mastra's runner's
`scripts/download.ts` fetches it: the dataset name `longmemeval_s_original`).

`datasets` does the download: its `DownloadManager` turns `<endpoint>/datasets/<repo>/resolve/<rev>/<file>` into
a hub path and stores the file in the Hugging Face cache (`HF_HOME`, `HF_HUB_CACHE`), honouring `HF_ENDPOINT`
(a mirror) and `HF_TOKEN`. The revision is a commit, so a file cached once never changes: it is looked up first,
and offline (`HF_DATASETS_OFFLINE` / `HF_HUB_OFFLINE`, or no connection) it is all there is. That lookup is
huggingface_hub's `try_to_load_from_cache`, because `datasets` resolves hub paths online only.

Parsing stays plain JSON in `bench.benchmarks.longmemeval.loader`: `answer` is a str or an int (32 of 500 questions), which Arrow
schemas reject, so `load_dataset("json")` is not used; `to_hf_dataset` gives the rows to users of the
`datasets` API with the answer as text.
"""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import datasets

    from bench.data.schema import Instance

HF_REPO = "xiaowu0162/longmemeval-cleaned"
HF_REVISION = "98d7416c24c778c2fee6e6f3006e7a073259d48f"
# The original release. Revision and sha256 as public projects that pinned this file record them (e.g. a harness
# README giving `resolve/2ec2a557…/longmemeval_s` and `sha256 08d8dad4…`, and another harness pinning the same
# hash); not verified from this project's build machine, which has no network to the hub. A download whose bytes
# differ is refused (one line naming both hashes).
ORIGINAL_REPO = "xiaowu0162/longmemeval"
ORIGINAL_REVISION = "2ec2a557f339b6c0369619b1ed5793734cc87533"
ORIGINAL_S_FILE = "longmemeval_s"
DEFAULT_ENDPOINT = "https://huggingface.co"
HUB_PROBE_TIMEOUT_S = 3.0
OFFLINE_VARIABLES = ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE")  # datasets reads the first, huggingface_hub the second

# sha256 of each file at HF_REVISION (LongMemEval README / the files themselves); a download must match
PINNED_SHA256 = {
    "longmemeval_oracle.json": "821a2034d219ab45846873dd14c14f12cfe7776e73527a483f9dac095d38620c",
    "longmemeval_s_cleaned.json": "d6f21ea9d60a0d56f34a05b609c79c88a451d2ae03597821ea3d5a9678c3a442",
    "longmemeval_m_cleaned.json": "9d79e5524794a2e6900a3aa9cb7d9152c5a3e8319c9a87c25494ba1eacee495f",
    ORIGINAL_S_FILE: "08d8dad4be43ee2049a22ff5674eb86725d0ce5ff434cde2627e5e8e7e117894",
}
# hub file -> (repository, revision) where it lies; the cleaned release unless listed
SOURCES: dict[str, tuple[str, str]] = {ORIGINAL_S_FILE: (ORIGINAL_REPO, ORIGINAL_REVISION)}


def source_of(hub_file: str) -> tuple[str, str]:
    """(repository, pinned revision) of `hub_file`."""
    return SOURCES.get(hub_file, (HF_REPO, HF_REVISION))


def endpoint() -> str:
    """The hub's base URL: `HF_ENDPOINT` (a mirror) or huggingface.co, as huggingface_hub reads it."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def file_url(hub_file: str, base: str | None = None) -> str:
    """Where `hub_file` lies at the pinned revision, e.g. for a manual download."""
    repo, rev = source_of(hub_file)
    return f"{base or endpoint()}/datasets/{repo}/resolve/{rev}/{hub_file}"


def offline_flag() -> str | None:
    """The variable that turns the hub off (`HF_DATASETS_OFFLINE` or `HF_HUB_OFFLINE` set to 1/true/yes/on), or None.

    Read at call time: both libraries read theirs once, at import."""
    for name in OFFLINE_VARIABLES:
        if os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on"):
            return name
    return None


def unreachable_reason() -> str | None:
    """Why a download cannot work, decided within a few seconds: an offline variable, or no TCP connection to
    the endpoint's host. The probe runs in a daemon thread because name resolution ignores socket timeouts."""
    flag = offline_flag()
    if flag is not None:
        return f"{flag} is set"
    parts = urlsplit(endpoint())
    host = parts.hostname or "huggingface.co"
    port = parts.port or (80 if parts.scheme == "http" else 443)
    result: list[str | None] = []

    def probe() -> None:
        try:
            with socket.create_connection((host, port), timeout=HUB_PROBE_TIMEOUT_S):
                result.append(None)
        except OSError as exc:
            result.append(f"no connection to {host}: {exc.__class__.__name__}")

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(HUB_PROBE_TIMEOUT_S + 0.5)
    return result[0] if result else f"no connection to {host} within a few seconds"


def cached_file(hub_file: str) -> Path | None:
    """`hub_file` at the pinned revision if the Hugging Face cache holds it (no network), else None."""
    from huggingface_hub import try_to_load_from_cache

    repo, rev = source_of(hub_file)
    found = try_to_load_from_cache(repo, hub_file, revision=rev, repo_type="dataset")
    return Path(found) if isinstance(found, str) else None


def download(hub_file: str) -> Path:
    """Fetch `hub_file` at the pinned revision with `datasets` into the Hugging Face cache; its local path.

    Raises whatever datasets/huggingface_hub raise (connection, authentication, missing file, disk)."""
    import datasets
    from datasets import config as datasets_config

    os.environ.setdefault("HF_HUB_ETAG_TIMEOUT", "10")
    manager = datasets.DownloadManager(dataset_name=source_of(hub_file)[0], download_config=datasets.DownloadConfig())
    local = manager.download(file_url(hub_file, datasets_config.HF_ENDPOINT))
    return Path(str(local))


# one row per question; the answer as text (Arrow wants one type per column; LongMemEval mixes str and int)
def _features() -> "datasets.Features":
    from datasets import Features, List, Value

    turn = {"role": Value("string"), "content": Value("string"), "has_answer": Value("bool")}
    return Features({
        "question_id": Value("string"),
        "question_type": Value("string"),
        "question": Value("string"),
        "answer": Value("string"),
        "question_date": Value("string"),
        "haystack_session_ids": List(Value("string")),
        "haystack_dates": List(Value("string")),
        "haystack_sessions": List(List(turn)),
        "answer_session_ids": List(Value("string")),
    })


def to_hf_dataset(instances: list["Instance"], name: str = "") -> "datasets.Dataset":
    """The questions as a `datasets.Dataset` in LongMemEval's field names and order; `answer` as a string
    (an int answer such as 3 becomes "3"), `has_answer` null where the file omits it (S filler turns)."""
    from datasets import Dataset as HFDataset
    from datasets import DatasetInfo

    features = _features()
    columns: dict[str, list[Any]] = {key: [] for key in features}
    for inst in instances:
        columns["question_id"].append(inst.question_id)
        columns["question_type"].append(inst.question_type)
        columns["question"].append(inst.question)
        columns["answer"].append(str(inst.answer))
        columns["question_date"].append(inst.question_date_str)
        columns["haystack_session_ids"].append([s.session_id for s in inst.sessions])
        columns["haystack_dates"].append([s.date_str for s in inst.sessions])
        columns["haystack_sessions"].append([
            [{"role": t.role, "content": t.content, "has_answer": t.has_answer} for t in s.turns] for s in inst.sessions
        ])
        columns["answer_session_ids"].append(list(inst.answer_session_ids))
    info = DatasetInfo(description=f"LongMemEval {name}".strip(), homepage=f"https://huggingface.co/datasets/{HF_REPO}",
                       features=features)
    return HFDataset.from_dict(columns, features=features, info=info)
