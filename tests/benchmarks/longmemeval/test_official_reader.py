"""answer.prompt=official: the reader's sentences read from run_generation.py at run time.

The checkout here holds a stand-in run_generation.py with the official file's structure (its template strings
in the same order: the plain history-chat pair, step by step and plain, then the user-facts pair) and our own placeholder
wording: the official text never enters the repository."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from bench.benchmarks.longmemeval.official_reader import OfficialReader, official_instructions, official_reader
from bench.data.schema import ViewSession, ViewTurn
from bench.errors import ConfigError

LAYOUT = "\\n\\n\\nHistory Chats:\\n\\n{}\\n\\nCurrent Date: {}\\nQuestion: {}\\n"
STAND_IN = f'''
def prepare_prompt(retriever_type, cot, merge):
    if retriever_type == 'no-retrieval':
        answer_prompt_template = '{{}}'
    else:
        if merge is None:
            if cot:
                answer_prompt_template = 'PLAIN COT stand-in sentence.{LAYOUT}Answer (step by step):'
            else:
                answer_prompt_template = 'PLAIN stand-in sentence.{LAYOUT}Answer:'
        elif merge == 'merge':
            if cot:
                answer_prompt_template = 'FACTS COT stand-in.{LAYOUT}Answer (step by step):'
            else:
                answer_prompt_template = 'FACTS stand-in.{LAYOUT}Answer:'
    return answer_prompt_template
'''


def _checkout(root: Path, text: str = STAND_IN) -> Path:
    path = root / "src" / "generation" / "run_generation.py"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    return root


def _session(label: str, day: int) -> ViewSession:
    return ViewSession(label, datetime(2023, 5, day, 9, 0), f"2023/05/{day:02d} (Mon) 09:00",
                       (ViewTurn("user", f"hello {label}"), ViewTurn("assistant", f"hi {label}")))


def test_the_official_sentences_are_read_in_source_order_and_rendered_in_the_official_layout(tmp_path) -> None:
    texts = official_instructions(STAND_IN)
    assert texts == {"con": "PLAIN COT stand-in sentence.", "direct": "PLAIN stand-in sentence."}
    reader = OfficialReader(texts, "stand-in")
    sessions = [_session("a", 1), _session("b", 2)]
    got = "".join(t for _, t in reader.reader_prompt_parts(sessions, "What?", "2023/05/30 (Tue) 10:00",
                                                           method="direct"))
    # run_generation.py's own construction: '\n### Session {}:\nSession Date: {}\nSession Content:\n{}\n' per
    # session with '\n' + json.dumps(turns), then the template's format(history, date, question)
    history = "".join("\n### Session {}:\nSession Date: {}\nSession Content:\n{}\n".format(
        i + 1, s.date_str, "\n" + json.dumps([{"role": t.role, "content": t.content} for t in s.turns]))
        for i, s in enumerate(sessions))
    template = "PLAIN stand-in sentence." + LAYOUT.encode().decode("unicode_escape") + "Answer:"
    assert got == template.format(history, "2023/05/30 (Tue) 10:00", "What?")
    assert reader.reader_text_sha256("con") != OfficialReader({"con": "x", "direct": "y"}, "").reader_text_sha256("con")


def test_a_checkout_without_the_templates_or_the_file_is_one_line(tmp_path) -> None:
    with pytest.raises(ConfigError, match="no history-chat template for con, direct"):
        official_instructions("x = 'nothing here'")
    with pytest.raises(ConfigError, match="run_generation.py not found") as err:
        official_reader(str(tmp_path / "nowhere"))
    assert "\n" not in str(err.value)


def test_answer_prompt_official_sends_no_system_message_and_keys_the_run(tmp_path) -> None:
    from bench.assemble import assemble, replay_settings
    from bench.config import validate
    from bench.runner.keys import run_key
    from tests.helpers.runner import compose_cfg

    repo = _checkout(tmp_path / "lme")
    base = ("dataset=synthetic", "run_strategies=[full_context]", f"judge.official_repo={repo}")
    packaged = validate(compose_cfg(tmp_path / "o1", *base))
    official = validate(compose_cfg(tmp_path / "o2", *base, "answer.prompt=official"))
    assert replay_settings(official).system_prompt == "" and replay_settings(packaged).system_prompt
    assert run_key(assemble(official), "full_context", "x", None) != run_key(assemble(packaged), "full_context",
                                                                             "x", None)
    with pytest.raises(ConfigError, match="answer.prompt='mine'"):
        validate(compose_cfg(tmp_path / "o3", *base, "answer.prompt=mine"))
