import json
from datetime import datetime, timezone

import pytest

from om_core.tokens import CONVERSATION_OVERHEAD, JSON_PAYLOAD_DISCOUNT, MESSAGE_OVERHEAD, TokenCounter
from om_core.types import Message, ToolCall
from tests.helpers.encode_spy import spy_encode

C = TokenCounter()
T = datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_exact_o200k_counts():
    assert C.count_string("") == 0
    assert C.count_string("hello world") == 2
    assert C.decode(C.encode("hello world")) == "hello world"


def test_message_and_conversation_overheads():
    assert C.count_message("user", "hello world") == C.count_string("userhello world") + MESSAGE_OVERHEAD
    msgs = [Message("1", "user", "hello world", T), Message("2", "assistant", "hi there", T)]
    expected = C.count_string("userhello world") + C.count_string("assistanthi there") + 2 * MESSAGE_OVERHEAD
    assert C.count_messages(msgs) == round(expected + CONVERSATION_OVERHEAD)
    assert C.count_messages([]) == 0
    assert C.count_messages([{"role": "user", "content": "hello world"}]) == round(
        C.count_string("userhello world") + MESSAGE_OVERHEAD + CONVERSATION_OVERHEAD
    )


def test_json_payload_discount():
    payload = {"a": [1, 2, 3], "b": "text"}
    raw = C.count_string("tool" + json.dumps(payload))
    assert C.count_message("tool", payload) == max(0, raw - JSON_PAYLOAD_DISCOUNT) + MESSAGE_OVERHEAD


def test_tool_results_add_an_extra_message_overhead():
    call = ToolCall(id="c", name="search", args={"q": "x"}, state="call")
    done = ToolCall(id="c", name="search", args={"q": "x"}, state="result", result="found it")
    base = C.count_message("assistant", "ok")
    with_call = C.count_message("assistant", "ok", [call])
    with_result = C.count_message("assistant", "ok", [done])
    assert with_call > base
    assert with_result == with_call + MESSAGE_OVERHEAD + C.count_string("found it")
    msg = Message("1", "assistant", "ok", T, tool_calls=(done,))
    assert C.count_messages([msg]) == round(with_result + CONVERSATION_OVERHEAD)


def test_truncate():
    text = " ".join(f"w{i}" for i in range(100))
    kept, dropped = C.truncate(text, 10)
    assert C.count_string(kept) <= 10 and dropped == C.count_string(text) - 10
    assert C.truncate("short", 10) == ("short", 0)
    with pytest.raises(ValueError):
        C.truncate("x", -1)


def test_memoised_by_content(monkeypatch):
    counter = TokenCounter()
    encoded = spy_encode(monkeypatch, counter._enc)
    history = [Message(str(i), "user", f"message number {i}", T) for i in range(50)]
    counter.count_messages(history)
    first = len(encoded)
    counter.count_messages(history + [Message("x", "user", "one more", T)])
    assert first == 50 and len(encoded) == 51  # only the new message is tokenised


def test_memos_are_bounded_by_characters_and_stay_exact() -> None:
    from om_core.tokens import TokenCounter

    c = TokenCounter(max_chars=10_000)
    texts = [f"block {i} " + "word " * 400 for i in range(20)]  # ~2k chars each
    expected = [len(c._enc.encode(t)) for t in texts]
    assert [c.count_string(t) for t in texts] == expected
    assert [len(c.encode(t)) for t in texts] == expected
    assert c._memo_chars <= 10_000 and c._ids_chars <= 10_000
    assert sum(map(len, c._memo)) == c._memo_chars and sum(map(len, c._ids)) == c._ids_chars
    assert len(c._memo) < 20 and len(c._ids) < 20  # old entries were evicted
    assert c.count_string(texts[0]) == expected[0]  # recomputed after eviction, still exact


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base", "p50k_base"])
def test_count_joined_equals_the_count_of_the_joined_text_at_every_kind_of_boundary(encoding: str) -> None:
    import random

    c = TokenCounter(encoding)
    rng = random.Random(7)
    # neighbours that merge into one token or piece when joined (".\n" + "/", "\n" + "\n", " " + "x", digits...)
    # and ones that must split (after "\n", before "<", a letter, a digit, punctuation, non-ASCII)
    atoms = ["</other-conversation>\n", "\n", "\n\n", "  \n", "/", "//x", " ", "\t", "word", "Word", "123", "45",
             "<tag>", ".", "!\n", "é", "日本語\n", "'s", "\r\n", "**bold**\n", "- item\n", "\u3000", "\u00a0x"]
    for _ in range(400):
        parts = [rng.choice(atoms) + rng.choice(atoms) for _ in range(rng.randint(1, 8))]
        assert c.count_joined(parts) == len(c._enc.encode("".join(parts), disallowed_special=())), parts


def test_count_joined_counts_changed_parts_only_and_matches_real_sessions(monkeypatch) -> None:
    from tests.helpers.strategies import s_dataset

    c = TokenCounter()
    inst = s_dataset().instances[0]
    blocks = [f'<other-conversation id="t{i}">\n' + "\n".join(f"{t.role}: {t.content}" for t in s.turns)
              + "\n</other-conversation>\n\n" for i, s in enumerate(inst.sessions[:12])]
    assert c.count_joined(blocks) == len(c._enc.encode("".join(blocks), disallowed_special=()))
    real = c._enc.encode
    encoded = spy_encode(monkeypatch, c._enc)
    grown = [*blocks[1:], "<other-conversation id=\"new\">\nuser: hello\n</other-conversation>"]
    assert c.count_joined(grown) == len(real("".join(grown), disallowed_special=()))
    assert len(encoded) == 1  # only the new part; the eleven others were memoised


def test_message_count_adds_role_and_content_only_where_the_encoding_splits_them() -> None:
    """count_message counts role and content apart (the content's ids then serve the prompt's rendering) only
    where the pre-tokeniser must split between them; the count always equals tokens(role + content)."""
    import random

    chars = list("aAzZ09 \n\t'’\"([{-_.,!?🔴éÉßΣσ中ʼ") + ["\u0301", "ǅ", "ʰ"]
    for enc in ("o200k_base", "cl100k_base"):
        c = TokenCounter(enc)
        raw = c._enc
        assert c.splits_after_role("user", "2 went") and c.splits_after_role("assistant", " ok")
        assert c.splits_after_role("user", "I went") is (enc == "o200k_base")
        assert not c.splits_after_role("user", "hello") and not c.splits_after_role("user", "'s")
        assert not c.splits_after_role("User", "I") and not c.splits_after_role("tool_1", "I")
        rng = random.Random(1)
        for _ in range(20000):
            role = rng.choice(["user", "assistant", "system", "tool"])
            text = "".join(rng.choice(chars) for _ in range(rng.randint(0, 6)))
            whole = len(raw.encode(role + text, disallowed_special=()))
            if c.splits_after_role(role, text):
                assert whole == len(raw.encode(role, disallowed_special=())) + len(raw.encode(text, disallowed_special=()))
            assert c.count_message(role, text) == whole + MESSAGE_OVERHEAD
    assert TokenCounter("cl100k_base").splits_after_role("user", "I") is False  # a letter continues cl100k's word


def test_encode_by_lines_equals_encode_and_reuses_pieces() -> None:
    """encode_by_lines gives tiktoken's ids exactly (newlines before spaces, "/", "<", quotes, CRLF, blank lines),
    and a block whose parts moved tokenises only its new pieces."""

    for enc in ("o200k_base", "cl100k_base"):
        c = TokenCounter(enc)
        for t in _line_texts(seed=7, n=5000, longest=40, extra=("\n'",)):
            assert c.encode_by_lines(t) == tuple(c._enc.encode(t, disallowed_special=()))
    c = TokenCounter()
    parts = [f'<other-conversation id="c{i}">\n**User:** bought {i} bikes\n</other-conversation>\n' for i in range(50)]
    assert c.encode_by_lines("".join(parts)) == tuple(c._enc.encode("".join(parts)))
    pieces = len(c._lines)
    moved = "".join([parts[-1], *parts[:-1]])  # the newest part first: every old piece is found again
    assert c.encode_by_lines(moved) == tuple(c._enc.encode(moved))
    assert len(c._lines) == pieces


def test_keep_pieces_memoises_the_pieces_of_a_text_encoded_whole_exactly() -> None:
    """encode_by_lines(keep_pieces=True) on a text that encode() tokenised whole memoises its line pieces cut from
    those ids, each equal to tiktoken's ids of the piece (random texts with multi-byte characters, both
    encodings), so a later text quoting its lines does not tokenise them again."""
    import random

    chars = list("aAzZ09 \t'’\"([{-_.,!?🔴é中<>/*") + ["\n"] * 6 + ["\r\n", "\n\n", "\n/", "\n ", "\n<", "\n*", "\n'"]
    for enc in ("o200k_base", "cl100k_base"):
        c = TokenCounter(enc)
        rng = random.Random(11)
        for _ in range(3000):
            t = "".join(rng.choice(chars) for _ in range(rng.randint(0, 60)))
            whole = c.encode(t)
            assert c.encode_by_lines(t, keep_pieces=True) == whole
        assert len(c._lines) > 1000
        for piece, ids in c._lines.items():
            assert ids == tuple(c._enc.encode(piece, disallowed_special=())), piece
    c = TokenCounter()
    message = "Step 1: water it\nStep 2: wait\nStep 3: repot it"
    c.encode(message)
    c.encode_by_lines(message, keep_pieces=True)
    assert {"Step 1: water it\n", "Step 2: wait\n"} <= set(c._lines)


def test_line_pieces_cut_where_the_line_rule_says() -> None:
    """_pieces (a regex split) cuts exactly after each newline followed by neither whitespace (str.isspace, any
    Unicode space) nor "/": the same pieces as the line-by-line rule it replaced."""
    import random

    def by_lines(text: str) -> list[str]:
        pieces: list[str] = []
        run: list[str] = []
        for line in text.split("\n"):
            if run and line and not line[0].isspace() and line[0] != "/":
                pieces.append("\n".join(run) + "\n")
                run = []
            run.append(line)
        pieces.append("\n".join(run))
        return pieces

    chars = ["a", "B", " ", "\n", "\n", "/", "\t", "\r", "\u00a0", "\u2028", "\u3000", "\x1c", "\x85", "<", "é"]
    rng = random.Random(5)
    for _ in range(20000):
        t = "".join(rng.choice(chars) for _ in range(rng.randint(0, 24)))
        assert TokenCounter._pieces(t) == by_lines(t), repr(t)


def test_count_by_lines_is_exact_and_tokenises_only_new_lines(monkeypatch) -> None:
    """count_by_lines equals tiktoken's count (random texts, both encodings); a log that grew by a line
    tokenises only that line's piece."""

    for enc in ("o200k_base", "cl100k_base"):
        c = TokenCounter(enc)
        for t in _line_texts(seed=3, n=3000, longest=50):
            assert c.count_by_lines(t) == len(c._enc.encode(t, disallowed_special=()))
            assert c.count_string(t) == len(c._enc.encode(t, disallowed_special=()))
    c = TokenCounter()
    log = "".join(f"* 🔴 (10:{i:02d}) User bought {i} bikes in Lisbon\n" for i in range(40))
    assert c.count_by_lines(log) == len(c._enc.encode(log))
    real = c._enc.encode
    encoded = spy_encode(monkeypatch, c._enc)
    grown = log + "* 🟡 (11:00) User sold a bike\n"
    assert c.count_by_lines(grown) == len(real(grown))
    assert len(encoded) == 1


def test_m31_message_count_keeps_the_contents_ids_for_the_prompt_rendering() -> None:
    """count_message_split (1.31.0's rule: role and content apart) memoises the content's ids, so the prompt
    that carries the message finds them instead of tokenising the content again; the count is unchanged."""
    c = TokenCounter()
    content = "I went to the farmers' market in Lisbon last Saturday and bought three kinds of tomatoes."
    n = c.count_message_split("user", content)
    assert n == round(len(c._enc.encode("user")) + len(c._enc.encode(content)) + MESSAGE_OVERHEAD)
    assert c.has_encoded(content)


def _line_texts(seed: int, n: int, longest: int, extra: tuple[str, ...] = ()) -> list[str]:
    """`n` random short texts built to hit the line-split rules: newlines before spaces, "/", "<", "*",
    CRLF, letters, digits, punctuation, emoji, CJK (seeded)."""
    import random

    chars = list("aAzZ09 \t'’\"([{-_.,!?🔴é中<>/*") + ["\n"] * 6 + ["\r\n", "\n\n", "\n/", "\n ", "\n<", "\n*",
                                                                    *extra]
    rng = random.Random(seed)
    return ["".join(rng.choice(chars) for _ in range(rng.randint(0, longest))) for _ in range(n)]


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base", "p50k_base"])
def test_encode_affixed_equals_encode_of_the_joined_text(encoding: str) -> None:
    """encode_affixed(prefix, text, suffix) is tiktoken's ids of prefix + text + suffix (random texts with spaces
    after and before every kind of character, Unicode spaces, marks, contractions, CRLF), and tokenises only the
    text's edges when the text is memoised."""
    import random

    chars = list("aAzZ09  \n\t'’\"([{-_.,!?🔴éÉßΣσ中ʼ/<>*") + ["\u0301", "ǅ", "ʰ", "\u00a0", "\u3000", "\x1c", "\x85",
                                                             "\r\n", "  ", "'s", "\u2028", " '", " 12"]
    c = TokenCounter(encoding)
    raw = c._enc
    rng = random.Random(3)
    for _ in range(20000 if encoding != "p50k_base" else 500):
        text = "".join(rng.choice(chars) for _ in range(rng.randint(0, 16)))
        prefix, suffix = ("".join(rng.choice(chars) for _ in range(rng.randint(0, 4))) for _ in range(2))
        assert c.encode_affixed(prefix, text, suffix) == tuple(raw.encode(prefix + text + suffix, disallowed_special=()))


def test_encode_affixed_tokenises_only_the_edges(monkeypatch) -> None:
    c = TokenCounter()
    text = "Hello there, this is a long message about qv7fish and their care.\nSecond line ends here."
    c.encode(text)
    encoded = spy_encode(monkeypatch, c._enc)
    assert c.encode_affixed("user: ", text, "\n") == tuple(c._enc.encode("user: " + text + "\n"))
    assert encoded[:2] == ["user: Hello", " here.\n"]
    assert c.encode_affixed("x", "nospace", "\n") == tuple(c._enc.encode("xnospace\n"))  # no split: whole
