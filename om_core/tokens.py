"""Token counting: exact tiktoken (o200k_base by default), memoised by content, with Mastra's overheads.

Offline, tiktoken cannot download its BPE files; litellm ships them, so we point TIKTOKEN_CACHE_DIR at
litellm's bundled folder (found without importing litellm, whose import is slow) before first use.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import threading
import unicodedata
from bisect import bisect_left
from collections import OrderedDict
from functools import lru_cache
from itertools import accumulate
from pathlib import Path
from typing import Any, Iterable, Sequence

import tiktoken

from om_core.errors import InputError, TokenizerError

# Per-message and per-conversation overheads, as Mastra's counter (mastra-ai/mastra,
# packages/memory/src/processors/observational-memory/token-counter.ts).
MESSAGE_OVERHEAD = 3.8
CONVERSATION_OVERHEAD = 24
JSON_PAYLOAD_DISCOUNT = 12  # structural JSON is cheaper than its characters suggest

# Encodings whose pre-tokeniser (the split regex applied before BPE, tiktoken's `_pat_str`) always ends a piece
# between a newline and a following character that is neither whitespace nor "/": no alternative of their pattern
# continues past "\n" into such a character, so no token spans that boundary and counts add up across it.
# (openai/tiktoken, tiktoken_ext/openai_public.py: the `\s*[\r\n]+` and ` ?[^\s\p{L}\p{N}]+[\r\n/]*` alternatives.)
NEWLINE_SPLIT_ENCODINGS = frozenset({"o200k_base", "cl100k_base"})

# Unicode categories a text may NOT start with for `role + text` to be counted as role + text apart, per encoding
# (the role being one lower-case ASCII word). o200k_base's word alternative `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}
# \p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?` matches the role and would only
# continue into a lower-case, modifier or other letter, a mark or an apostrophe's contraction; cl100k_base's
# `[^\r\n\p{L}\p{N}]?\p{L}+` into any letter (marks refused too, to stay clear of either). A piece that ends
# with the role leaves the pre-tokeniser at the text's first character as if the text stood alone (the patterns
# look ahead only), so the counts add up. (openai/tiktoken, tiktoken_ext/openai_public.py.)
_ROLE_GLUE = {
    "o200k_base": frozenset({"Ll", "Lm", "Lo", "Mn", "Mc", "Me"}),
    "cl100k_base": frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me"}),
}


# Where encode_by_lines cuts a text: after every newline followed by a character that is neither whitespace nor "/"
# (the regex's \s is str.isspace's set: checked over every code point). The match ends at the cut, so the newline
# stays with the piece before; the pattern starts with a literal, which the regex engine searches for fast.
_LINE_CUT = re.compile(r"\n(?=[^\s/])")


def _space_cut(text: str, first: bool) -> int | None:
    """The first (or last) index k > 0 of `text` with text[k] == " " and text[k - 1] not whitespace
    (str.isspace: a superset of the pattern's \\s), or None."""
    k = text.find(" ", 1) if first else text.rfind(" ")
    while k > 0 and text[k - 1].isspace():
        k = text.find(" ", k + 1) if first else text.rfind(" ", 0, k)
    return k if k > 0 else None


def _ensure_offline_bpe_dir() -> None:
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        return
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return
    folder = Path(list(spec.submodule_search_locations)[0]) / "litellm_core_utils" / "tokenizers"
    if folder.is_dir():
        os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)


@lru_cache(maxsize=8)
def get_encoding(name: str = "o200k_base") -> tiktoken.Encoding:
    _ensure_offline_bpe_dir()
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # pragma: no cover - depends on the machine
        raise TokenizerError(
            f"tokenizer {name!r} unavailable offline: install litellm (it ships the BPE files) "
            f"or set TIKTOKEN_CACHE_DIR to a folder holding them ({exc})"
        ) from exc


def _token_byte_len(enc: tiktoken.Encoding, i: int) -> int:
    """Bytes of token `i` (0 for an id the encoding does not use)."""
    try:
        return len(enc.decode_single_token_bytes(i))
    except KeyError:
        return 0


class TokenCounter:
    """Counts tokens of strings and chat messages; results memoised by content (LRU, bounded)."""

    def __init__(self, encoding: str = "o200k_base", max_entries: int = 200_000, max_chars: int = 32_000_000) -> None:
        self.encoding_name = encoding
        self._enc = get_encoding(encoding)
        self._memo: OrderedDict[str, int] = OrderedDict()
        self._ids: OrderedDict[str, tuple[int, ...]] = OrderedDict()
        self._max = max_entries
        # Bounded by characters too: long texts (a growing OTHER-conversations block, a whole history) would
        # otherwise keep hundreds of MB alive across a long benchmark.
        self._max_chars = max_chars
        self._memo_chars = 0
        self._ids_chars = 0
        self._lock = threading.Lock()
        self._glue = _ROLE_GLUE.get(encoding)
        self._lines: dict[str, tuple[int, ...]] = {}  # encode_by_lines' per-piece memo (first in, first out)
        self._max_lines = max_entries
        self._token_bytes: list[int] | None = None  # bytes per token id (_keep_pieces), built on first use

    def splits_after_role(self, role: str, text: str) -> bool:
        """Whether tokens(role + text) == tokens(role) + tokens(text) is guaranteed by the encoding's
        pre-tokeniser: `role` one lower-case ASCII word, `text` empty or starting with neither a character that
        the role's word would continue into (`_ROLE_GLUE`) nor an apostrophe. False for other encodings."""
        if self._glue is None or not role.isascii() or not role.isalpha() or not role.islower():
            return False
        if not text:
            return True
        c = text[0]
        return c != "'" and unicodedata.category(c) not in self._glue

    def encode(self, text: str) -> tuple[int, ...]:
        with self._lock:
            hit = self._ids.get(text)
            if hit is not None:
                self._ids.move_to_end(text)
                return hit
        return self._remember(text, tuple(self._enc.encode(text, disallowed_special=())))

    def _remember(self, text: str, ids: tuple[int, ...]) -> tuple[int, ...]:
        """Memoise `text`'s ids (least recently used out first, bounded in entries and characters): `ids`."""
        with self._lock:
            if text not in self._ids:
                self._ids_chars += len(text)
            self._ids[text] = ids
            while self._ids and (len(self._ids) > self._max // 4 or self._ids_chars > self._max_chars):
                old, _ = self._ids.popitem(last=False)
                self._ids_chars -= len(old)
        return ids

    def encode_by_lines(self, text: str, keep_pieces: bool = False) -> tuple[int, ...]:
        """encode(text), exactly, for a long text that recurs with parts moved, added or removed (a block of
        other conversations, an observation log): where the encoding must split after a newline (a line that
        starts with neither whitespace nor "/", as in count_joined), the pieces between such points are
        tokenised on their own and memoised, so only pieces not seen before are tokenised. The whole text's ids
        are memoised as encode's. Other encodings: encode(text).

        keep_pieces: when the whole text is memoised already (encode), its pieces are memoised too, cut from
        its ids at the pieces' byte offsets (token boundaries there: the encoding must split), so a later text
        holding the same lines finds them whatever tokenised this one first."""
        with self._lock:
            hit = self._ids.get(text)
        if hit is not None or self.encoding_name not in NEWLINE_SPLIT_ENCODINGS:
            if hit is not None and keep_pieces and self.encoding_name in NEWLINE_SPLIT_ENCODINGS:
                self._keep_pieces(self._pieces(text), hit)
            return hit if hit is not None else self.encode(text)
        out: list[int] = []
        for piece in self._pieces(text):
            out.extend(self._piece_ids(piece))
        return self._remember(text, tuple(out))

    def _piece_ids(self, piece: str) -> tuple[int, ...]:
        """The ids of one line piece, from the piece memo (first in, first out past its bound)."""
        memo = self._lines
        ids = memo.get(piece)
        if ids is None:
            ids = tuple(self._enc.encode(piece, disallowed_special=()))
            if len(memo) >= self._max_lines:
                for old in list(memo)[: len(memo) // 2]:
                    del memo[old]
            memo[piece] = ids
        return ids

    @staticmethod
    def _pieces(text: str) -> list[str]:
        """encode_by_lines' pieces: `text` cut after every newline followed by neither whitespace nor "/"."""
        pieces: list[str] = []
        start = 0
        for m in _LINE_CUT.finditer(text):
            end = m.end()
            pieces.append(text[start:end])
            start = end
        pieces.append(text[start:])
        return pieces

    def _keep_pieces(self, pieces: list[str], ids: tuple[int, ...]) -> None:
        """Memoise each piece's ids, cut from `ids` (the ids of the joined pieces) by the tokens' byte lengths.
        A piece whose end is not a token boundary (never, for these encodings) stops the cutting."""
        memo = self._lines
        if len(pieces) < 2 or pieces[0] in memo and pieces[-1] in memo:
            return
        if self._token_bytes is None:
            enc = self._enc
            self._token_bytes = [_token_byte_len(enc, i) for i in range(enc.max_token_value + 1)]
        ends = list(accumulate(map(self._token_bytes.__getitem__, ids)))
        start_tok, end_byte = 0, 0
        for piece in pieces:
            end_byte += len(piece.encode("utf-8"))
            k = bisect_left(ends, end_byte, start_tok)
            if k >= len(ends) or ends[k] != end_byte:
                return
            if piece not in memo:
                if len(memo) >= self._max_lines:
                    for old in list(memo)[: len(memo) // 2]:
                        del memo[old]
                memo[piece] = ids[start_tok : k + 1]
            start_tok = k + 1

    def encode_affixed(self, prefix: str, text: str, suffix: str) -> tuple[int, ...]:
        """encode(prefix + text + suffix), exactly, from encode(text) (memoised): only the prefix with text's
        head and text's tail with the suffix are tokenised. The head ends, and the tail starts, where the
        encoding must split inside text: before a space that follows a character other than whitespace (no
        alternative of o200k_base's or cl100k_base's pattern holds a space after a non-whitespace character;
        their look-aheads, (?!\\S) and cl100k's \\s++$, see that same space or stop before it), so the pieces up
        to there and from there on are the text's own. A text without such a space, or another encoding:
        encode(prefix + text + suffix)."""
        first = _space_cut(text, True) if self.encoding_name in NEWLINE_SPLIT_ENCODINGS else None
        if first is None:
            return self.encode(prefix + text + suffix)
        last = _space_cut(text, False)
        assert last is not None
        ids = self.encode(text)
        head, tail = len(text[:first].encode("utf-8")), len(text[last:].encode("utf-8"))
        token_len = self._enc.decode_single_token_bytes
        i = n = 0
        while n < head:
            n += len(token_len(ids[i]))
            i += 1
        j, m = len(ids), 0
        while m < tail:
            j -= 1
            m += len(token_len(ids[j]))
        if n != head or m != tail:  # not token boundaries (never, by the split rule): the plain way
            return self.encode(prefix + text + suffix)
        enc = self._enc.encode
        return (*enc(prefix + text[:first], disallowed_special=()), *ids[i:j],
                *enc(text[last:] + suffix, disallowed_special=()))

    @property
    def splits_at_newlines(self) -> bool:
        """Whether the encoding always splits after a newline that a letter follows (o200k_base, cl100k_base):
        then text cut there can be tokenised piece by piece with the same ids."""
        return self.encoding_name in NEWLINE_SPLIT_ENCODINGS

    def has_encoded(self, text: str) -> bool:
        """Whether `encode(text)` is memoised, i.e. would be a look-up rather than a tokenisation."""
        with self._lock:
            return text in self._ids

    def _counted(self, text: str) -> int | None:
        """The memoised count of `text` (marked recently used), or None."""
        with self._lock:
            hit = self._memo.get(text)
            if hit is not None:
                self._memo.move_to_end(text)
            return hit

    def count_string(self, text: str) -> int:
        if not text:
            return 0
        hit = self._counted(text)
        if hit is not None:
            return hit
        with self._lock:
            ids = self._ids.get(text)  # already encoded for a prompt: never tokenise the same text twice
        n = len(ids) if ids is not None else len(self._enc.encode(text, disallowed_special=()))
        self._remember_count(text, n)
        return n

    def count_by_lines(self, text: str, keep_ids: bool = True) -> int:
        """count_string(text), exactly, through encode_by_lines: for a long text that shares most of its lines
        with texts tokenised before (an observation log that grew, an Observer's formatted history inside its
        request), only the line pieces not seen before are tokenised. Memoised as count_string's count.
        keep_ids=False: only the pieces' ids are memoised, not the whole text's (a part of a larger text that
        is rendered, and so tokenised by lines, as a whole)."""
        if not text:
            return 0
        hit = self._counted(text)
        if hit is not None:
            return hit
        if keep_ids or self.encoding_name not in NEWLINE_SPLIT_ENCODINGS:
            n = len(self.encode_by_lines(text))
        else:
            with self._lock:
                whole = self._ids.get(text)
            n = len(whole) if whole is not None else sum(len(self._piece_ids(p)) for p in self._pieces(text))
        self._remember_count(text, n)
        return n

    def _remember_count(self, text: str, n: int) -> None:
        with self._lock:
            if text not in self._memo:
                self._memo_chars += len(text)
            self._memo[text] = n
            while self._memo and (len(self._memo) > self._max or self._memo_chars > self._max_chars):
                old, _ = self._memo.popitem(last=False)
                self._memo_chars -= len(old)

    def count_joined(self, parts: Sequence[str]) -> int:
        """Tokens of `"".join(parts)`, exactly, counting (and memoising) each part on its own where the encoding
        must split between two parts (the previous one ends with a newline, the next starts with a character
        that is neither whitespace nor "/"); other neighbours are counted together. A block that grows or loses
        a part is then recounted only where it changed. Other encodings count the joined text."""
        if self.encoding_name not in NEWLINE_SPLIT_ENCODINGS:
            return self.count_string("".join(parts))
        total = 0
        run: list[str] = []
        for p in parts:
            if not p:
                continue
            if run and not (run[-1].endswith("\n") and not p[0].isspace() and p[0] != "/"):
                run.append(p)  # no guaranteed split here: count the two together
                continue
            if run:
                total += self.count_string(run[0] if len(run) == 1 else "".join(run))
            run = [p]
        if run:
            total += self.count_string(run[0] if len(run) == 1 else "".join(run))
        return total

    def decode(self, ids: Iterable[int]) -> str:
        return self._enc.decode(list(ids))

    def truncate(self, text: str, max_tokens: int) -> tuple[str, int]:
        """The longest token prefix of `text` within `max_tokens`, and how many tokens were dropped."""
        if max_tokens < 0:
            raise InputError(f"max_tokens must be >= 0, got {max_tokens}")
        ids = self.encode(text)
        if len(ids) <= max_tokens:
            return text, 0
        return self.decode(ids[:max_tokens]), len(ids) - max_tokens

    def count_payload(self, payload: Any) -> float:
        """Tokens of a part payload: strings as they are; structured JSON minus its structural discount."""
        if isinstance(payload, str):
            return self.count_string(payload)
        text = json.dumps(payload, ensure_ascii=False, default=str)
        return max(0, self.count_string(text) - JSON_PAYLOAD_DISCOUNT)

    def count_tool_call(self, call: Any) -> float:
        """Tokens of one tool invocation: name + arguments, and for a finished call its result as an
        extra message (another per-message overhead). Accepts om_core ToolCall or a dict of its fields."""
        get = call.get if isinstance(call, dict) else (lambda k, d=None: getattr(call, k, d))
        total = self.count_string(str(get("name", "") or "")) + self.count_payload(get("args") or {})
        if get("state", "result") in ("result", "error", "denied"):
            total += MESSAGE_OVERHEAD + self.count_payload(get("result"))
        return total

    def count_message(self, role: str, content: str | Any, tool_calls: Iterable[Any] = ()) -> float:
        """Tokens of one message: encode(role + payload) + per-message overhead (+ its tool calls)."""
        if isinstance(content, str):
            if self.splits_after_role(role, content):
                # the same count without a second tokenisation of the content: its ids are memoised for the
                # rendering of the prompt that carries it (encode), the role's count once
                total = self.count_string(role) + (len(self.encode(content)) if content else 0) + MESSAGE_OVERHEAD
            else:
                total = self.count_string(role + content) + MESSAGE_OVERHEAD
        else:
            payload = json.dumps(content, ensure_ascii=False, default=str)
            total = max(0, self.count_string(role + payload) - JSON_PAYLOAD_DISCOUNT) + MESSAGE_OVERHEAD
        for call in tool_calls:
            total += self.count_tool_call(call)
        return total

    def count_message_split(self, role: str, content: str | Any, tool_calls: Iterable[Any] = ()) -> int:
        """Tokens of one message as @mastra/memory 1.31.0 counts them (token-counter.ts `countMessage`): the role
        and the payload encoded apart, plus the per-message overhead (+ its tool calls), the message's total
        rounded half up (`Math.round`). `count_message` is 1.1.0's rule (role and payload encoded together, not
        rounded per message)."""
        if isinstance(content, str):
            # the content's ids memoised (encode): the prompt rendering that carries the message needs them, so
            # the message is tokenised once, not counted here and tokenised again there
            total = self.count_string(role) + (len(self.encode(content)) if content else 0) + MESSAGE_OVERHEAD
        else:
            payload = json.dumps(content, ensure_ascii=False, default=str)
            total = self.count_string(role) + max(0, self.count_string(payload) - JSON_PAYLOAD_DISCOUNT) + MESSAGE_OVERHEAD
        for call in tool_calls:
            total += self.count_tool_call(call)
        return math.floor(total + 0.5)

    def count_messages(self, messages: Iterable[Any]) -> int:
        """Conversation total: per-message counts plus the per-conversation overhead.

        Accepts om_core Messages (role/content/tool_calls attributes) or dicts with "role"/"content"
        (and optionally "tool_calls"). Every string is memoised, so recounting a grown history only
        tokenises what is new.
        """
        total = 0.0
        n = 0
        for m in messages:
            if isinstance(m, dict):
                role, content, calls = m["role"], m["content"], m.get("tool_calls") or ()
            else:
                role, content, calls = m.role, m.content, getattr(m, "tool_calls", ())
            total += self.count_message(role, content, calls)
            n += 1
        return round(total + (CONVERSATION_OVERHEAD if n else 0))


_DEFAULT: TokenCounter | None = None


def default_counter() -> TokenCounter:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = TokenCounter()
    return _DEFAULT
