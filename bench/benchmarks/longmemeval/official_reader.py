"""The reader prompt exactly as LongMemEval's generation script writes it (`answer.prompt=official`).

The instruction sentences come from `src/generation/run_generation.py` of github.com/xiaowu0162/LongMemEval,
found at run time as the judge's file is (a checkout at `judge.official_repo`, else the cache, else a download of
the pinned commit, sha256-checked): its `answer_prompt_template` strings for plain history chats, the step-by-step
one (`cot`, our method `con`) and the plain one (`direct`). The layout around them (`History Chats:`, the
numbered sessions, `Current Date`, `Question`, `Answer`) is already the official one
(bench.benchmarks.longmemeval.reader_prompt). The script sends the prompt as the only message: no system message.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Mapping, Sequence, cast

from bench.benchmarks.longmemeval import reader_prompt as rp
from bench.benchmarks.longmemeval.official_source import OFFICIAL_COMMIT, official_file
from bench.errors import ConfigError

GENERATION_REL = "src/generation/run_generation.py"
GENERATION_SHA256 = "4f1eb3c69d7ad40f04065b9c0bc86f6582441018fc6ff751d162d66c95baf672"  # at OFFICIAL_COMMIT
_LAYOUT = "\n\n\nHistory Chats:\n\n{}\n\nCurrent Date: {}\nQuestion: {}\n"
_TAILS = {"con": "Answer (step by step):", "direct": "Answer:"}


def official_instructions(script: str) -> dict[str, str]:
    """{"con": ..., "direct": ...}: the instruction sentences of the script's plain history-chat templates:
    in source order, the first string constant laid out as a reader template ending in each method's answer
    line (in run_generation.py the plain-history pair comes before the user-facts and facts-only ones). Raises
    ConfigError if either is missing."""
    found: dict[str, str] = {}
    strings = sorted((n for n in ast.walk(ast.parse(script))
                      if isinstance(n, ast.Constant) and isinstance(n.value, str)),
                     key=lambda n: (n.lineno, n.col_offset))
    for node in strings:
        if isinstance(node.value, str):
            for method, tail in _TAILS.items():
                if node.value.endswith(_LAYOUT + tail) and method not in found:
                    found[method] = node.value[: -len(_LAYOUT + tail)]
    missing = sorted(set(_TAILS) - set(found))
    if missing:
        raise ConfigError(f"answer.prompt=official: {GENERATION_REL} has no history-chat template for "
                          f"{', '.join(missing)}; use a checkout at the pinned commit {OFFICIAL_COMMIT[:7]}")
    return found


@dataclass(frozen=True)
class OfficialReader:
    """A `Reader` (bench.benchmarks.base) with the official instruction sentences; `source` names the file."""

    texts: Mapping[str, str] = field(hash=False)
    source: str

    def reader_prompt_parts(self, sessions: Sequence[Any], question: str, question_date_str: str, *,
                            method: Any = "con", history_format: Any = "json") -> list[tuple[str, str]]:
        return rp.reader_prompt_parts(sessions, question, question_date_str, method=method,
                                      history_format=history_format, texts=self.texts)

    def session_block(self, i: int, session: Any, history_format: Any = "json") -> str:
        return rp.session_block(i, session, history_format)

    def question_block(self, question: str, question_date_str: str, method: Any = "con") -> str:
        return rp.question_block(question, question_date_str, method)

    def reader_text_sha256(self, method: str = "con", history_format: str = "json") -> str:
        return rp.reader_text_sha256(method, history_format, texts=self.texts)


@lru_cache(maxsize=4)
def official_reader(official_repo: str | None = None) -> OfficialReader:
    """The official reader, its script read from `official_repo` (a checkout) or the pinned download. Raises
    ConfigError (one line) when the script cannot be had or has no such templates."""
    found = official_file(official_repo, rel=GENERATION_REL, sha256=GENERATION_SHA256, what="answer.prompt=official")
    return OfficialReader(cast(Mapping[str, str], official_instructions(found.text)),
                          found.describe())
