"""Token ids of a session's JSON content (LongMemEval's reader layout) from its messages' own ids.

The reader's JSON session content is `"\\n" + json.dumps([{"role": r, "content": c}, ...]) + "\\n"`: every
message's text again, JSON-escaped (`ensure_ascii`: quotes, backslashes, control characters and every
non-ASCII character become escapes). Tokenising it reads the haystack a second time, after the messages
themselves were tokenised for the turn prompts. `json_content_ids` builds the same ids from the messages' ids:

* o200k's and cl100k's pre-tokenisers must split between a printable non-space ASCII character and a
  following space (no regex piece holds a non-whitespace character followed by a space: letters run into
  letters and contractions only, digits into digits, punctuation into punctuation and newlines), and
  tiktoken tokenises each pre-tokeniser piece on its own, so encode(a + b) == encode(a) + encode(b) when a
  ends with such a character and b starts with a space.
* A "clean span" of a message is a stretch that starts with a space right after a printable non-space ASCII
  character, holds only printable ASCII other than `"` and `\\` (JSON leaves it as it is), and ends with a
  non-space character right before a space. Both of its ends are such split points, in the message and in
  its escaped copy (escaping turns a character before a space into an escape that ends in a non-space one),
  so the span's ids are the message's ids between the span's byte offsets.
* Everything else (the JSON punctuation, each message's first and last words, the words around every
  escaped character) is concatenated and tokenised in one call: its pieces join at split points as well
  (each ends before a clean span's leading space, the next starts with the space after one), and its ids are
  cut back apart at the pieces' byte offsets.

Exact, not an estimate: `tests/strategies/test_json_ids.py` compares it with tiktoken on LongMemEval_S sessions
and on random texts. Any other encoding, a text that is not the one these messages give, or an offset that is
not a token boundary (impossible under the rule above) falls back to tokenising the whole text.
"""

from __future__ import annotations

import json
import re
from itertools import chain
from typing import Callable, Sequence

import numpy as np

from om_core.tokens import TokenCounter, get_encoding

SPLIT_ENCODINGS = ("o200k_base", "cl100k_base")
# a clean span (above): at least MIN_SPAN characters, so reusing it is worth a cut
MIN_SPAN = 24
_CLEAN = re.compile(r"(?<=[!-~]) [ !#-\[\]-~]{%d,}(?<=[!#-\[\]-~])(?= )" % (MIN_SPAN - 1))
_escape: Callable[[str], str] = json.encoder.encode_basestring_ascii

_TOKEN_BYTES: dict[str, np.ndarray] = {}


def _token_bytes(encoding: str) -> np.ndarray:
    """Bytes of each token id of `encoding` (0 for a special or unused id)."""
    table = _TOKEN_BYTES.get(encoding)
    if table is None:
        enc = get_encoding(encoding)
        table = np.zeros(enc.max_token_value + 1, dtype=np.int64)
        ranks = getattr(enc, "_mergeable_ranks", None)  # tiktoken's own table: 5x faster than asking per id
        if isinstance(ranks, dict):
            for piece, rank in ranks.items():
                table[rank] = len(piece)
        else:  # a tiktoken without it: the public per-id call (same table, checked in the test)
            special = {enc.encode_single_token(s) for s in enc.special_tokens_set}
            for i in range(enc.n_vocab):
                if i not in special:
                    try:
                        table[i] = len(enc.decode_single_token_bytes(i))
                    except KeyError:  # an unused id
                        pass
        _TOKEN_BYTES[encoding] = table
    return table


def json_content_text(messages: Sequence[tuple[str, str]]) -> str:
    """The reader's JSON session content for (role, content) messages (bench.benchmarks.longmemeval.reader_prompt)."""
    return "\n" + json.dumps([{"role": r, "content": c} for r, c in messages]) + "\n"


def json_content_ids(text: str, messages: Sequence[tuple[str, str]], counter: TokenCounter) -> tuple[int, ...]:
    """counter.encode(text) (not memoised there) for `text`, the JSON session content of `messages`
    (`json_content_text`), built from counter.encode of each message's content (a look-up where the turns were
    counted) and one tokenisation of what JSON changes. Falls back to counter.encode(text) where the rule does
    not apply (module docstring), including a `text` that is not the messages' JSON content."""
    if counter.encoding_name not in SPLIT_ENCODINGS or counter.has_encoded(text):
        return counter.encode(text)
    fresh: list[str] = []  # the texts between reused spans, in order (fresh[i] comes before reused span i)
    parts: list[str] = []  # the whole text, piece by piece (checked against `text`)
    idss: list[tuple[int, ...]] = []  # ids of the messages that have clean spans, in order
    bounds: list[int] = []  # each span's start and end, in bytes into those messages' contents concatenated
    cur: list[str] = ["\n["]
    base = 0  # bytes of the contents in idss before the current one
    for k, (role, content) in enumerate(messages):
        cur.append(('{"role": ' if k == 0 else ', {"role": ') + _escape(role) + ', "content": "')
        pos = byte = 0
        ascii_text = content.isascii()
        for m in _CLEAN.finditer(content):
            a, b = m.span()
            if not pos:
                idss.append(counter.encode(content))
            cur.append(_escape(content[pos:a])[1:-1])
            piece = "".join(cur)
            fresh.append(piece)
            parts.append(piece)
            parts.append(m.group())
            cur = []
            byte_a = byte + (a - pos if ascii_text else len(content[pos:a].encode("utf-8")))
            byte = byte_a + (b - a)  # a clean span is ASCII
            bounds.append(base + byte_a)
            bounds.append(base + byte)
            pos = b
        if pos:
            base += byte + (len(content) - pos if ascii_text else len(content[pos:].encode("utf-8")))
        cur.append(_escape(content[pos:] if pos else content)[1:-1])
        cur.append('"}')
    cur.append("]\n")
    piece = "".join(cur)
    fresh.append(piece)
    parts.append(piece)
    if not bounds or "".join(parts) != text:
        return counter.encode(text)
    raw = tuple(chain.from_iterable(idss))
    fresh_list = get_encoding(counter.encoding_name).encode_ordinary("".join(fresh))
    table = _token_bytes(counter.encoding_name)
    raw_ends = np.cumsum(table[np.fromiter(raw, dtype=np.int64, count=len(raw))])
    fresh_ends = np.cumsum(table[np.array(fresh_list, dtype=np.int64)])
    want_raw = np.array(bounds, dtype=np.int64)
    want_fresh = np.cumsum(np.fromiter(map(len, fresh[:-1]), dtype=np.int64, count=len(fresh) - 1))
    at_raw = np.searchsorted(raw_ends, want_raw)  # the token that ends at each boundary
    at_fresh = np.searchsorted(fresh_ends, want_fresh)  # (the fresh text is ASCII: bytes = characters)
    if (at_raw >= len(raw_ends)).any() or (at_fresh >= len(fresh_ends)).any() \
            or (raw_ends[at_raw] != want_raw).any() or (fresh_ends[at_fresh] != want_fresh).any():
        return counter.encode(text)  # not a token boundary: cannot happen under the rule
    # fresh piece i is fresh_ids[f[i] : f[i + 1]], span i is raw[r[2i] : r[2i + 1]]
    f = [0, *(at_fresh + 1).tolist(), len(fresh_list)]
    r = (at_raw + 1).tolist()
    out = fresh_list[f[0] : f[1]]
    for i in range(len(fresh) - 1):
        out += raw[r[2 * i] : r[2 * i + 1]]
        out += fresh_list[f[i + 1] : f[i + 2]]
    return tuple(out)
