"""Fixtures for the cache simulator tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.prompt import set_tokenizer
from tests.cachesim.helpers import word_tokenizer


@pytest.fixture
def words() -> Iterator[None]:
    """Switch bench.prompt to the one-token-per-word tokenizer for the test."""
    set_tokenizer(word_tokenizer)
    yield
    set_tokenizer(None)
