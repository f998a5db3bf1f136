"""The Actor prompt as ordered segments: the one type strategies produce and cache simulators consume.

A segment is a unit that is either byte-identical to a segment of an earlier prompt or not. Its `key` is
stable across turns for the same logical block (e.g. "sys", "om:chunk:0", "turn:12:user"), so simulators
can skip unchanged segments without re-tokenising or comparing them token by token.

Token rendering (what a provider's prefix cache sees): for every chat message, a small header
(`MESSAGE_HEADER`, default "{role}\\n": 2 tokens in o200k_base, standing in for ChatML's
`<|im_start|>role<|im_sep|>`), then the token ids of each of its segments, tokenised separately. Real
providers tokenise the concatenated message, so a token may differ at a segment join; that only moves a
cache boundary by a token or two. `Prompt.units()` returns this rendering as a list of `Unit`s (one per
header and one per segment), memoised on the prompt; segment ids are memoised by text in the tokenizer.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

Tokenizer = Callable[[str], tuple[int, ...]]

# Text tokenised to stand for the per-message chat template header.
MESSAGE_HEADER = "{role}\n"


@dataclass(frozen=True)
class Segment:
    role: str
    text: str
    key: str = ""
    breakpoint: bool = False  # a natural cache breakpoint (Anthropic cache_control candidate)
    # Text that joins this segment to the previous one of the same message (segments of one chat message
    # share `message_index`). Kept so that rendering to chat messages is lossless.
    message_index: int = -1

    @property
    def digest(self) -> str:
        return _digest(self.role, self.text)

    @property
    def token_ids(self) -> tuple[int, ...]:
        """Token ids of the text alone (no message header); memoised by text in the tokenizer."""
        return get_tokenizer()(self.text)

    @property
    def token_count(self) -> int:
        return len(self.token_ids)


_DIGESTS: dict[tuple[str, str], str] = {}


def _digest(role: str, text: str) -> str:
    k = (role, text)
    d = _DIGESTS.get(k)
    if d is None:
        d = hashlib.blake2b(f"{role}\x00{text}".encode(), digest_size=16).hexdigest()
        if len(_DIGESTS) > 200_000:
            _DIGESTS.clear()
        _DIGESTS[k] = d
    return d


# ---- tokenizer hook -------------------------------------------------------------------------------------

_TOKENIZER: Tokenizer | None = None
_TOKENIZER_GEN = 0  # bumped on every set_tokenizer so memoised renderings are invalidated
_HEADERS: dict[str, tuple[int, ...]] = {}


def set_tokenizer(fn: Tokenizer | None) -> None:
    """Replace the text -> token ids function (None restores om_core's default o200k_base counter).

    The function should memoise by text: it is called for every segment of every prompt.
    """
    global _TOKENIZER, _TOKENIZER_GEN
    _TOKENIZER = fn
    _TOKENIZER_GEN += 1
    _HEADERS.clear()
    _SEG_MEMO.clear()


def get_tokenizer() -> Tokenizer:
    if _TOKENIZER is None:
        from om_core.tokens import default_counter

        return default_counter().encode
    return _TOKENIZER


def header_ids(role: str) -> tuple[int, ...]:
    ids = _HEADERS.get(role)
    if ids is None:
        ids = _HEADERS[role] = get_tokenizer()(MESSAGE_HEADER.format(role=role))
    return ids


# (role, text) -> (digest, token ids): one dict look-up per segment per prompt instead of a digest look-up
# plus a tokenizer call (strategies build fresh Segment objects every turn). Cleared when it grows too big.
_SEG_MEMO: dict[tuple[str, str], tuple[str, tuple[int, ...]]] = {}
_SEG_MEMO_MAX = 200_000


class Unit(NamedTuple):
    """One piece of the token rendering: a message header (block=-1) or one segment (block=its index).

    A NamedTuple because thousands are built per prompt and tuple construction is the cheapest."""

    key: str  # segment digest (role+text) or "h:<role>" for a header: equal keys => equal token ids
    ids: tuple[int, ...]  # shared with the tokenizer's memo; never copied
    block: int
    breakpoint: bool = False


@dataclass
class Prompt:
    segments: list[Segment] = field(default_factory=list)
    # Free-form notes about how the prompt was built (e.g. truncated=True, retrieved ids).
    meta: dict[str, Any] = field(default_factory=dict)

    def add(self, role: str, text: str, key: str = "", breakpoint: bool = False, new_message: bool = True) -> None:
        """Append a segment; with new_message=False it continues the previous chat message."""
        if new_message or not self.segments:
            idx = (self.segments[-1].message_index + 1) if self.segments else 0
        else:
            idx = self.segments[-1].message_index
        self.segments.append(Segment(role=role, text=text, key=key, breakpoint=breakpoint, message_index=idx))

    def to_messages(self) -> list[dict[str, str]]:
        """OpenAI-style chat messages; segments of the same message are concatenated."""
        out: list[dict[str, str]] = []
        last = None
        for s in self.segments:
            if s.message_index == last and out:
                out[-1]["content"] += s.text
            else:
                out.append({"role": s.role, "content": s.text})
                last = s.message_index
        return out

    @property
    def text(self) -> str:
        return "".join(s.text for s in self.segments)

    # The rendering is memoised in the instance __dict__ as "_units_memo" = (tokenizer generation, segments
    # snapshot, units), shared by every simulator of one call. Not a dataclass field, so asdict(), ==
    # and repr ignore it; __getstate__ drops it from pickles.

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_units_memo", None)
        return state

    def units(self) -> list[Unit]:
        """The token rendering: a header unit opening each chat message, then one unit per segment."""
        memo = self.__dict__.get("_units_memo")
        if memo is not None and memo[0] == _TOKENIZER_GEN and memo[1] == self.segments:
            return memo[2]
        enc = get_tokenizer()
        seg_memo = _SEG_MEMO
        headers: dict[str, Unit] = {}
        out: list[Unit] = []
        last: int | None = None
        for i, s in enumerate(self.segments):
            if s.message_index != last or not out:  # same grouping rule as to_messages
                h = headers.get(s.role)
                if h is None:
                    h = headers[s.role] = Unit("h:" + s.role, header_ids(s.role), -1)
                out.append(h)
                last = s.message_index
            k = (s.role, s.text)
            hit = seg_memo.get(k)
            if hit is None:
                if len(seg_memo) >= _SEG_MEMO_MAX:
                    seg_memo.clear()
                hit = seg_memo[k] = (s.digest, enc(s.text))
            out.append(Unit(hit[0], hit[1], i, s.breakpoint))
        self.__dict__["_units_memo"] = (_TOKENIZER_GEN, list(self.segments), out)
        return out

    @property
    def token_count(self) -> int:
        """Tokens of the rendering (headers included): what simulators report as prompt_tokens."""
        return sum(len(u.ids) for u in self.units())

    def token_ids(self) -> tuple[int, ...]:
        """The flat rendering (for tests and debugging; simulators never build it)."""
        return tuple(t for u in self.units() for t in u.ids)
