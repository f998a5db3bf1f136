"""The shared pytest fixtures (registered for the whole suite by tests/conftest.py)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # imported inside the fixtures: collecting om_core's tests stays cheap
    from bench.gateway import Gateway
    from bench.records import CallRecord
    from tests.helpers.fakeserver import FakeOpenAIServer


@pytest.fixture(scope="session")
def real_data_dir() -> Path:
    """LONGMEMEVAL_DATA_DIR (the real LongMemEval files); skips without it."""
    d = os.environ.get("LONGMEMEVAL_DATA_DIR")
    if not d or not Path(d).is_dir():
        pytest.skip("real LongMemEval data not available: set LONGMEMEVAL_DATA_DIR to the folder with the .json.xz files")
    return Path(d)


@pytest.fixture
def words() -> Iterator[None]:
    """Render prompts with the one-token-per-word tokenizer for the test."""
    from bench.render import Renderer, set_default_renderer
    from tests.helpers.words import word_tokenizer

    previous = set_default_renderer(Renderer(word_tokenizer))
    yield
    set_default_renderer(previous)


@pytest.fixture
def fake_server() -> Iterator[FakeOpenAIServer]:
    """A fake OpenAI-compatible server on a free loopback port."""
    from tests.helpers.fakeserver import FakeOpenAIServer

    with FakeOpenAIServer() as srv:
        yield srv


@pytest.fixture
def calls() -> Iterator[list[CallRecord]]:
    """Every CallRecord recorded during the test."""
    from bench.records import collect_calls

    with collect_calls() as collected:
        yield collected


@pytest.fixture
def make_gateway(fake_server: FakeOpenAIServer, tmp_path: Path) -> Iterator[Callable[..., Gateway]]:
    """make(**gateway_config overrides, server=, tmp=) -> a Gateway on the fake server; caches closed at the end."""
    from bench.gateway import Gateway
    from tests.helpers.gateway import gateway_config

    made: list[Gateway] = []

    def make(**kw: Any) -> Gateway:
        server = kw.pop("server", fake_server)
        path = kw.pop("tmp", tmp_path)
        gw = Gateway(gateway_config(server, path, **kw))
        made.append(gw)
        return gw

    yield make
    for gw in made:
        if gw.cache is not None:
            gw.cache.close()


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """A PostgreSQL DSN for the storage tests (OM_PG_DSN or a throwaway local server); skips without one."""
    from tests.helpers.postgres import postgres_dsn

    with postgres_dsn() as dsn:
        yield dsn
