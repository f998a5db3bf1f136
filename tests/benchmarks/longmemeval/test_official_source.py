"""judge.source=official without a checkout: the pinned evaluate_qa.py is downloaded once (here from a local
HTTP server serving a fixture), sha256-checked and cached; a file with another hash is refused; offline, one
line says how to provide a checkout."""

from __future__ import annotations

import hashlib
import http.server
import threading
from pathlib import Path
from typing import Iterator

import pytest

from bench.errors import ConfigError
from bench.benchmarks.longmemeval import official_source
from bench.benchmarks.longmemeval.judge_templates import resolve_templates
from bench.benchmarks.longmemeval.official_source import OFFICIAL_COMMIT, OFFICIAL_REL, cached_path, official_file
from tests.helpers.official import FAKE, make_checkout


class _Served:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.hits = 0


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, _Served]]:
    """A local HTTP server laid out like raw.githubusercontent.com/<owner>/<repo>: /<commit>/<path>."""
    served = _Served(tmp_path / "www")
    target = served.root / OFFICIAL_COMMIT / OFFICIAL_REL
    target.parent.mkdir(parents=True)
    target.write_text(FAKE, encoding="utf-8")

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):  # type: ignore[no-untyped-def]
            super().__init__(*a, directory=str(served.root), **kw)

        def do_GET(self) -> None:
            served.hits += 1
            super().do_GET()

        def log_message(self, *a: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", served
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OMBENCH_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _pin(monkeypatch: pytest.MonkeyPatch, text: str) -> str:
    """Pin the fixture's hash in place of the real file's (the real file is never stored here)."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    monkeypatch.setattr(official_source, "OFFICIAL_SHA256", digest)
    return digest


def test_download_checks_the_hash_then_the_cache_is_reused(server, cache, monkeypatch) -> None:
    url, served = server
    digest = _pin(monkeypatch, FAKE)
    got = official_file(base_url=url)
    assert got.origin == "download" and got.sha256 == digest and got.pinned and got.text == FAKE
    assert cached_path().is_file() and cached_path().is_relative_to(cache) and served.hits == 1
    again = official_file(base_url="http://127.0.0.1:9")  # nothing listens there: the cache answers
    assert again.origin == "cache" and again.text == FAKE and served.hits == 1
    templates = resolve_templates("official", base_url="http://127.0.0.1:9")
    assert templates.texts["default"].startswith("DEFAULT") and "pinned @9e0b455" in templates.describe()


def test_a_file_with_another_hash_is_refused_and_not_cached(server, cache, monkeypatch) -> None:
    url, served = server
    _pin(monkeypatch, FAKE.replace("DEFAULT", "DEFAULt"))  # the server's file differs by one character
    with pytest.raises(ConfigError) as err:
        official_file(base_url=url)
    msg = str(err.value)
    assert "\n" not in msg and "not the pinned" in msg and "refusing it" in msg and "judge.official_repo" in msg
    assert not cached_path().exists() and served.hits == 1


def test_a_damaged_cache_is_fetched_again(server, cache, monkeypatch) -> None:
    url, served = server
    _pin(monkeypatch, FAKE)
    cached_path().parent.mkdir(parents=True)
    cached_path().write_text("truncated", encoding="utf-8")
    assert official_file(base_url=url).origin == "download" and served.hits == 1


def test_offline_is_one_line_naming_the_checkout_fix(cache) -> None:
    with pytest.raises(ConfigError) as err:
        official_file(base_url="http://127.0.0.1:9")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("judge.source=official: cannot download src/evaluation/evaluate_qa.py")
    assert "judge.official_repo=PATH" in msg and "git clone https://github.com/xiaowu0162/LongMemEval" in msg
    with pytest.raises(ConfigError, match="not downloaded yet"):
        official_file(download=False)


def test_a_checkout_is_read_as_is_and_its_hash_reported(tmp_path) -> None:
    repo = make_checkout(tmp_path / "LongMemEval")
    got = official_file(repo)
    assert got.origin == "checkout" and not got.pinned and "NOT the pinned official file" in got.describe()
