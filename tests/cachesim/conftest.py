"""Fixtures for the cache simulator tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.render import Renderer, set_default_renderer
from tests.cachesim.helpers import word_tokenizer


@pytest.fixture
def words() -> Iterator[None]:
    """Render prompts with the one-token-per-word tokenizer for the test."""
    previous = set_default_renderer(Renderer(word_tokenizer))
    yield
    set_default_renderer(previous)
