"""The hub path: `datasets` downloads the pinned file from HF_ENDPOINT (a local fake hub here), the sha256 is checked,
the Hugging Face cache serves it offline; offline variables give one line; `Dataset.to_hf()`."""

from __future__ import annotations

import dataclasses
import hashlib
import http.server
import json
import lzma
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.benchmarks.longmemeval import hub
from bench.benchmarks.longmemeval.loader import load_dataset
from bench.errors import DataError

ORACLE_SHA = "821a2034d219ab45846873dd14c14f12cfe7776e73527a483f9dac095d38620c"


class FakeHub:
    """Just enough of the hub's HTTP API for huggingface_hub's download of one file at the pinned revision."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.requests: list[str] = []
        hub_ = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self, with_body: bool) -> None:
                hub_.requests.append(f"{self.command} {self.path}")
                resolve = f"/datasets/{hub.HF_REPO}/resolve/{hub.HF_REVISION}/"
                if self.path.startswith(resolve) and self.path[len(resolve):] in hub_.files:
                    body = hub_.files[self.path[len(resolve):]]
                    headers = {"ETag": f'"{hashlib.sha256(body).hexdigest()}"', "X-Repo-Commit": hub.HF_REVISION}
                elif self.path.startswith(f"/api/datasets/{hub.HF_REPO}/revision/"):
                    body = json.dumps({"id": hub.HF_REPO, "sha": hub.HF_REVISION, "private": False,
                                       "siblings": [{"rfilename": name} for name in hub_.files]}).encode()
                    headers = {"Content-Type": "application/json"}
                else:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                for key, value in {**headers, "Content-Length": str(len(body))}.items():
                    self.send_header(key, value)
                self.end_headers()
                if with_body:
                    self.wfile.write(body)

            def do_HEAD(self) -> None:
                self._answer(False)

            def do_GET(self) -> None:
                self._answer(True)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def downloads(self, name: str) -> int:
        return sum(1 for r in self.requests if r.startswith("GET ") and r.endswith(f"/{name}"))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_hub() -> Iterator[FakeHub]:
    fake = FakeHub({})
    yield fake
    fake.close()


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("LONGMEMEVAL_DATA_DIR", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_ENDPOINT")}
    home = tmp_path / "hf"
    env.update(HF_HOME=str(home), HF_HUB_CACHE=str(home / "hub"), HF_DATASETS_CACHE=str(home / "datasets"),
               HF_HUB_DISABLE_PROGRESS_BARS="1", HF_DATASETS_DISABLE_PROGRESS_BARS="1", **extra)
    return env


def _check(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # the last stderr line says whether datasets' DownloadManager was imported (it is only on a download)
    code = ("import atexit, sys; from bench.cli import main; atexit.register(lambda: print("
            "'download manager:', 'datasets.download.download_manager' in sys.modules, file=sys.stderr)); "
            "sys.exit(main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", code, "data", "check", "longmemeval_oracle", "--no-tokens", "--json"],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.realdata
@pytest.mark.slow  # three CLI processes and a 15 MB download from a local fake hub
def test_download_through_datasets_then_offline_from_the_cache(tmp_path: Path, fake_hub: FakeHub) -> None:
    folder = os.environ.get("LONGMEMEVAL_DATA_DIR")
    if not folder or not (Path(folder) / "longmemeval_oracle.json.xz").is_file():
        pytest.skip("real data: set LONGMEMEVAL_DATA_DIR to the folder with longmemeval_oracle.json.xz")
    fake_hub.files["longmemeval_oracle.json"] = lzma.decompress((Path(folder) / "longmemeval_oracle.json.xz").read_bytes())
    online = _check(_env(tmp_path, HF_ENDPOINT=fake_hub.url))
    assert online.returncode == 0, online.stderr
    summary = json.loads(online.stdout)
    assert summary["sha256"] == ORACLE_SHA and summary["official"] is True and summary["n"] == 500
    assert summary["path"].startswith(str(tmp_path / "hf" / "hub")) and hub.HF_REVISION in summary["path"]
    assert fake_hub.downloads("longmemeval_oracle.json") == 1
    assert online.stderr.splitlines()[-1] == "download manager: True"
    fake_hub.close()  # from now on the hub is gone: the cache alone must serve the pinned file
    for variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        offline = _check(_env(tmp_path, HF_ENDPOINT=fake_hub.url, **{variable: "1"}))
        assert offline.returncode == 0, offline.stderr
        assert json.loads(offline.stdout)["sha256"] == ORACLE_SHA
        assert offline.stderr.splitlines()[-1] == "download manager: False"
    assert fake_hub.downloads("longmemeval_oracle.json") == 1


@pytest.mark.slow  # a CLI process
def test_a_download_that_is_not_the_pinned_file_is_refused(tmp_path: Path, fake_hub: FakeHub) -> None:
    from bench.benchmarks.longmemeval.synthetic import generate

    fake_hub.files["longmemeval_oracle.json"] = json.dumps(generate(n_per_type=1, haystack_tokens=0)).encode()
    result = _check(_env(tmp_path, HF_ENDPOINT=fake_hub.url))
    assert result.returncode == 2 and result.stdout == ""
    assert fake_hub.downloads("longmemeval_oracle.json") == 1
    line, used = result.stderr.strip().splitlines()
    assert used == "download manager: True"
    assert "\n" not in line and "is not the pinned longmemeval_oracle.json" in line and ORACLE_SHA[:12] in line
    assert "delete it from the Hugging Face cache" in line and fake_hub.url in line  # the hint names the mirror


def test_the_cache_serves_the_pinned_file_with_the_hub_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    from bench.benchmarks.longmemeval.synthetic import generate

    snapshot = tmp_path / f"datasets--{hub.HF_REPO.replace('/', '--')}" / "snapshots" / hub.HF_REVISION
    snapshot.mkdir(parents=True)
    (snapshot / "longmemeval_oracle.json").write_text(json.dumps(generate(n_per_type=1, haystack_tokens=0)))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.delenv("LONGMEMEVAL_DATA_DIR", raising=False)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    # found offline, and refused: a cached file is held to the pinned hash like a fresh download
    with pytest.raises(DataError, match=r"sha256 \w+\.\.\. is not the pinned longmemeval_oracle.json"):
        load_dataset("longmemeval_oracle")
    assert hub.cached_file("longmemeval_oracle.json") == snapshot / "longmemeval_oracle.json"
    assert hub.cached_file("longmemeval_s_cleaned.json") is None


@pytest.mark.parametrize("variable", ["HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"])
def test_either_offline_variable_gives_one_line(variable: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in hub.OFFLINE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, "true")
    with pytest.raises(DataError) as info:
        load_dataset("longmemeval_m", tmp_path)
    msg = str(info.value)
    assert "\n" not in msg and f"({variable} is set)" in msg and "longmemeval_m_cleaned.json" in msg
    monkeypatch.setenv(variable, "0")
    assert hub.offline_flag() is None


def test_pinned_hashes_are_the_official_files() -> None:
    from bench.benchmarks.longmemeval.loader import KNOWN_SHA256
    from bench.benchmarks.longmemeval.loader import KNOWN_NAMES

    assert {f for f, _ in KNOWN_NAMES.values()} == set(hub.PINNED_SHA256)
    assert all(KNOWN_SHA256[sha].official for sha in hub.PINNED_SHA256.values())


def test_to_hf_gives_the_rows_with_text_answers() -> None:
    ds = load_dataset("synthetic:n_per_type=1,haystack_tokens=300,abstention_per_type=1")
    ds.instances[0] = dataclasses.replace(ds.instances[0], answer=42)
    table = ds.to_hf()
    assert table.num_rows == len(ds) and table.column_names[:4] == ["question_id", "question_type", "question", "answer"]
    assert table[0]["answer"] == "42" and table.features["answer"].dtype == "string"
    first = ds.instances[1]
    row = table[1]
    assert row["question_id"] == first.question_id and row["question_date"] == first.question_date_str
    assert row["haystack_session_ids"] == [s.session_id for s in first.sessions]
    assert [t["content"] for t in row["haystack_sessions"][0]] == [t.content for t in first.sessions[0].turns]
    assert row["answer_session_ids"] == list(first.answer_session_ids)
    sub = ds.subset(first_n=3).to_hf()
    assert sub.num_rows == 3 and sub.filter(lambda r: r["question_type"] == first.question_type).num_rows >= 1


@pytest.mark.realdata
def test_to_hf_on_the_oracle_keeps_every_question() -> None:
    folder = os.environ.get("LONGMEMEVAL_DATA_DIR")
    if not folder:
        pytest.skip("real data: set LONGMEMEVAL_DATA_DIR to the folder with the LongMemEval files")
    ds = load_dataset("longmemeval_oracle", folder)
    table = ds.to_hf()
    ints = [i for i in ds.instances if isinstance(i.answer, int)]
    assert table.num_rows == 500 and len(ints) == 32
    by_id = {r["question_id"]: r["answer"] for r in table.select_columns(["question_id", "answer"])}
    assert all(by_id[i.question_id] == str(i.answer) for i in ints)
    has_answer = table.select_columns(["haystack_sessions"])[0]["haystack_sessions"][0][0]["has_answer"]
    assert has_answer in (True, False)  # oracle turns all carry the flag


def test_the_original_s_release_is_its_own_pinned_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`longmemeval_s_original`: the original release's file (as Mastra's runner downloads it) at its own pinned
    repository and revision; a file in the data folder is found by its own stem (never the cleaned one's); a
    cached hub copy that is not the pinned file is refused in one line."""
    from huggingface_hub import constants

    from bench.benchmarks import get_benchmark
    from bench.benchmarks.longmemeval.synthetic import generate

    assert hub.file_url("longmemeval_s", "https://hf.example") == (
        f"https://hf.example/datasets/xiaowu0162/longmemeval/resolve/{hub.ORIGINAL_REVISION}/longmemeval_s")
    assert hub.file_url("longmemeval_s_cleaned.json", "https://hf.example").startswith(
        f"https://hf.example/datasets/{hub.HF_REPO}/resolve/{hub.HF_REVISION}/")
    rows = json.dumps(generate(n_per_type=1, haystack_tokens=0))
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "longmemeval_s_cleaned.json").write_text(rows)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.delenv("LONGMEMEVAL_DATA_DIR", raising=False)
    with pytest.raises(DataError, match="looked for longmemeval_s_original.json") as err:
        get_benchmark("longmemeval").load("s_original", str(folder))  # the cleaned file is not taken for it
    assert "\n" not in str(err.value) and "xiaowu0162/longmemeval/resolve/2ec2a557" in str(err.value)
    assert "put longmemeval_s as longmemeval_s_original.json" in str(err.value)  # the name the loader looks for
    (folder / "longmemeval_s_original.json").write_text(rows)
    ds = get_benchmark("longmemeval").load("s_original", str(folder))
    assert ds.name == "longmemeval_s_original" and ds.path == folder / "longmemeval_s_original.json"
    snapshot = tmp_path / "hub" / "datasets--xiaowu0162--longmemeval" / "snapshots" / hub.ORIGINAL_REVISION
    snapshot.mkdir(parents=True)
    (snapshot / "longmemeval_s").write_text(rows)
    with pytest.raises(DataError, match=r"is not the pinned longmemeval_s of xiaowu0162/longmemeval@2ec2a557 "
                                         r"\(08d8dad4be43\.\.\.\)") as err:
        load_dataset("longmemeval_s_original", None)
    assert "\n" not in str(err.value)
