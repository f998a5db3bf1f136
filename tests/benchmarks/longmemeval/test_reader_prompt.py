import json
from datetime import datetime

import pytest

from bench.data.schema import ViewSession, ViewTurn
from bench.benchmarks.longmemeval.reader_prompt import reader_prompt_parts, render_reader_prompt, session_block


def _sess(label: str, day: int, *turns: tuple[str, str]) -> ViewSession:
    return ViewSession(label, datetime(2023, 5, day), f"2023/05/{day:02d} (Mon) 10:00", tuple(ViewTurn(r, c) for r, c in turns))


S1 = _sess("s-a", 1, ("user", "I adopted a cat named Luna."), ("assistant", "Congrats!"))
S2 = _sess("s-b", 3, ("user", 'He said "hi" \u00e9'), ("assistant", " ok "))


def test_parts_layout_keys_and_numbering():
    parts = reader_prompt_parts([S1, S2], "What is my cat's name?", "2023/05/30 (Tue) 23:40")
    assert [k for k, _ in parts] == ["reader:instr", "sess:s-a", "sess:s-b", "reader:question"]
    assert parts[0][1].endswith("\n\n\nHistory Chats:\n\n")
    assert parts[1][1].startswith("\n### Session 1:\nSession Date: 2023/05/01 (Mon) 10:00\nSession Content:\n")
    assert parts[2][1].startswith("\n### Session 2:\n")
    # the official json layout leaves a blank line after "Session Content:"
    body = parts[2][1].split("Session Content:\n\n", 1)[1]
    assert json.loads(body) == [{"role": "user", "content": 'He said "hi" \u00e9'}, {"role": "assistant", "content": " ok "}]
    assert body == json.dumps([{"role": "user", "content": 'He said "hi" \u00e9'}, {"role": "assistant", "content": " ok "}]) + "\n"
    assert parts[-1][1] == "\n\nCurrent Date: 2023/05/30 (Tue) 23:40\nQuestion: What is my cat's name?\nAnswer (step by step):"


def test_direct_and_render_and_nl():
    text = render_reader_prompt([S1], "Q?", "D", method="direct")
    assert text.endswith("\nQuestion: Q?\nAnswer:")
    assert text == "".join(t for _, t in reader_prompt_parts([S1], "Q?", "D", method="direct"))
    nl = session_block(4, S2, "nl")
    assert nl.startswith("\n### Session 4:") and "\n\nassistant: ok\n" in nl
    with pytest.raises(ValueError):
        session_block(1, S1, "xml")  # type: ignore[arg-type]


def test_no_session_ids_or_labels_in_text():
    text = render_reader_prompt([S1, S2], "Q?", "D")
    assert "s-a" not in text and "s-b" not in text
