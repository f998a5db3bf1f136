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

Speed: a prompt reuses the rendering of the leading Segment objects it shares with a recent prompt (so
rendering costs O(changed segments)), and a long segment whose text changed is tokenised from its previous
text's ids where that is exact (only the changed tail is tokenised; see encode_incremental).
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
    global _TOKENIZER, _TOKENIZER_GEN, _seg_memo_tokens
    _TOKENIZER = fn
    _TOKENIZER_GEN += 1
    _HEADERS.clear()
    _SEG_MEMO.clear()
    _seg_memo_tokens = 0
    _RECENT.clear()
    _HEADER_UNITS.clear()
    _LAST_LONG.clear()


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


# ---- incremental tokenisation of a segment whose text changed --------------------------------------------
#
# Some segments are re-rendered with a slightly different text every few turns (om's OTHER-conversations
# block grows at its end; a long block is edited near its end). tiktoken splits text into pieces with its
# regex and runs BPE inside each piece, so token ids never straddle a piece boundary. In o200k_base and
# cl100k_base a newline followed by an ASCII letter is always a piece boundary, and no match of the regex
# that ends before it looks past the letter. So if the old and new texts agree up to such a point `cut`
# (the letter included), the new ids are the old ids of old[:cut] (all of the old ids but the
# len(encode(old[cut:])) last ones) followed by encode(new[cut:]): only the changed tail is tokenised.
# Used with the default tokenizer only, and for texts of INCREMENTAL_MIN_CHARS or more.

INCREMENTAL_MIN_CHARS = 4096
_SAFE_ENCODINGS = ("o200k_base", "cl100k_base")
_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_LAST_LONG: dict[str, tuple[str, tuple[int, ...]]] = {}  # segment key -> last long text rendered under it (LRU)
_LAST_LONG_MAX = 512


def common_prefix_chars(a: str, b: str) -> int:
    """Length of the longest common prefix of two strings (bisection of C-speed slice comparisons)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def encode_incremental(
    old: str, old_ids: tuple[int, ...], new: str, encode: Callable[[str], Any], min_cut: int = 1024
) -> tuple[int, ...] | None:
    """encode(new) from encode(old) = old_ids, tokenising only the tail after the last safe cut before the
    first difference; None when no cut of at least `min_cut` characters exists. `encode` must be a plain
    o200k_base or cl100k_base encoder (ids as a sequence, special tokens as text)."""
    d = common_prefix_chars(old, new)
    if d < 2:
        return None
    p = old.rfind("\n", 0, d - 1)  # a newline at p, then old[p + 1] (shared: p + 1 < d) a letter
    while p >= min_cut and old[p + 1] not in _LETTERS:
        p = old.rfind("\n", 0, p)
    if p < min_cut:
        return None
    cut = p + 1
    keep = len(old_ids) - len(encode(old[cut:]))
    if keep <= 0:
        return None
    return old_ids[:keep] + tuple(encode(new[cut:]))


def _raw_encoder() -> Callable[[str], Any] | None:
    """The default tokenizer's tiktoken encoding (no memo: the tails are used once), if incremental-safe."""
    from om_core.tokens import default_counter, get_encoding

    name = default_counter().encoding_name
    if name not in _SAFE_ENCODINGS:
        return None
    enc = get_encoding(name)
    return lambda text: enc.encode(text, disallowed_special=())


def _counter_has(text: str) -> bool:
    """Whether the default counter has the ids of `text` memoised already (e.g. a background request the
    offline engine counted): then a look-up beats the incremental path."""
    from om_core.tokens import default_counter

    memo = getattr(default_counter(), "_ids", None)
    return memo is not None and text in memo


def _encode_segment(key: str, text: str, enc: Tokenizer) -> tuple[int, ...]:
    """Token ids of a segment text not in the memo: incrementally from the last long text of the same key
    when the default tokenizer is in use, else enc(text)."""
    if _TOKENIZER is not None or len(text) < INCREMENTAL_MIN_CHARS or not key:
        return enc(text)
    prev = _LAST_LONG.get(key)
    ids = None
    if prev is not None and prev[0] != text and not _counter_has(text):
        raw = _raw_encoder()
        if raw is not None:
            ids = encode_incremental(prev[0], prev[1], text, raw)
    if ids is None:
        ids = enc(text)
    _LAST_LONG.pop(key, None)
    if len(_LAST_LONG) >= _LAST_LONG_MAX:
        del _LAST_LONG[next(iter(_LAST_LONG))]  # the least recently rendered key
    _LAST_LONG[key] = (text, ids)
    return ids


# (role, text) -> (unit key, token ids): one dict look-up per new segment instead of a tokenizer call.
# Bounded by entries and by the tokens it holds (token ids are ~36 bytes each as Python ints, and background
# requests are 100k-token segments): past either bound the oldest entries go (first in, first out).
_SEG_MEMO: dict[tuple[str, str], tuple[tuple[str, str], tuple[int, ...]]] = {}
_SEG_MEMO_MAX = 200_000
_SEG_MEMO_MAX_TOKENS = 6_000_000
_seg_memo_tokens = 0


def _seg_memo_add(k: tuple[str, str], ids: tuple[int, ...]) -> tuple[tuple[str, str], tuple[int, ...]]:
    global _seg_memo_tokens
    memo = _SEG_MEMO
    if len(memo) >= _SEG_MEMO_MAX or _seg_memo_tokens + len(ids) > _SEG_MEMO_MAX_TOKENS:
        drop = max(len(memo) // 2, 1)  # the older half (and more while still over the token bound)
        for old in list(memo)[:drop]:
            _seg_memo_tokens -= len(memo.pop(old)[1])
        while memo and _seg_memo_tokens + len(ids) > _SEG_MEMO_MAX_TOKENS:
            _seg_memo_tokens -= len(memo.pop(next(iter(memo)))[1])
    hit = memo[k] = (k, ids)  # the key tuple is the unit key
    _seg_memo_tokens += len(ids)
    return hit


class Unit(NamedTuple):
    """One piece of the token rendering: a message header (block=-1) or one segment (block=its index).

    A NamedTuple because thousands are built per prompt and tuple construction is the cheapest."""

    # (role, text) of a segment, or "h:<role>" for a header: equal keys <=> equal token ids. A segment's key
    # is one shared tuple per (role, text) (the memo's), so dict look-ups by key mostly compare by identity;
    # it is exact, unlike a digest, and costs no hashing beyond the str's own cached hash.
    key: Any
    ids: tuple[int, ...]  # shared with the tokenizer's memo; never copied
    block: int
    breakpoint: bool = False


def common_len(a: list, b: list) -> int:
    """Length of the longest common prefix of two lists. Identical elements compare in C without calling
    __eq__: one slice comparison when one list starts with the other, else a bisection of slices."""
    n = min(len(a), len(b))
    if not n or a[0] != b[0]:
        return 0
    if a[:n] == b[:n]:
        return n
    lo, hi = 1, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


class _Rendering(NamedTuple):
    segments: list[Segment]  # snapshot of the rendered segments (keeps them alive, so their ids stay unique)
    ids: list[int]  # id() of each segment
    units: list[Unit]
    ends: list[int]  # ends[i]: len(units) once segment i is rendered
    tokens: list[int]  # tokens[i]: tokens of units[: ends[i]]


# The last few renderings. Strategies build each prompt from the Segment objects of the previous one (the
# history grows, the breakpoint moves to the new last message), so a new prompt reuses the Unit objects of
# the longest prefix of identical Segment objects (compared as id() lists: C speed, no __eq__ calls) and
# renders only the segments after it. Sharing Unit objects also lets simulators find, by identity, the
# part of a prompt they walked for the previous one. A Segment equal to a rendered one but not the same
# object is rendered again: one memo look-up, as before.
_RECENT: list[_Rendering] = []
_RECENT_MAX = 8
_HEADER_UNITS: dict[str, Unit] = {}


def _render(segs: list[Segment]) -> _Rendering:
    seg_ids = list(map(id, segs))
    best_k, best = 0, None
    n = len(seg_ids)
    for r in reversed(_RECENT):  # newest first: usually the best
        if best_k == n:
            break
        if len(r.ids) > best_k and r.ids[best_k] == seg_ids[best_k]:  # else it cannot share more than best_k
            k = common_len(r.ids, seg_ids)
            if k > best_k:
                best_k, best = k, r
    if best is not None:
        out = best.units[: best.ends[best_k - 1]]
        ends = best.ends[:best_k]
        tokens = best.tokens[:best_k]
        last: int | None = segs[best_k - 1].message_index
        total = tokens[-1]
    else:
        out, ends, tokens, last, total = [], [], [], None, 0
    enc = get_tokenizer()
    seg_memo = _SEG_MEMO
    for i in range(best_k, len(segs)):
        s = segs[i]
        if s.message_index != last or not out:  # same grouping rule as to_messages
            h = _HEADER_UNITS.get(s.role)
            if h is None:
                h = _HEADER_UNITS[s.role] = Unit("h:" + s.role, header_ids(s.role), -1)
            out.append(h)
            total += len(h.ids)
            last = s.message_index
        k = (s.role, s.text)
        hit = seg_memo.get(k)
        if hit is None:
            hit = _seg_memo_add(k, _encode_segment(s.key, s.text, enc))
        out.append(Unit(hit[0], hit[1], i, s.breakpoint))
        total += len(hit[1])
        ends.append(len(out))
        tokens.append(total)
    r = _Rendering(list(segs), seg_ids, out, ends, tokens)
    if best is not None and best_k == len(best.segments):
        _RECENT.remove(best)  # the new rendering extends it: keep the longer one only
    _RECENT.append(r)
    if len(_RECENT) > _RECENT_MAX:
        del _RECENT[0]
    return r


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

    def _rendering(self) -> "_Rendering":
        memo = self.__dict__.get("_units_memo")
        segs = self.segments
        if memo is not None and memo[0] == _TOKENIZER_GEN and memo[1] == segs:
            return memo[2]
        r = _render(segs)
        self.__dict__["_units_memo"] = (_TOKENIZER_GEN, r.segments, r)
        return r

    def units(self) -> list[Unit]:
        """The token rendering: a header unit opening each chat message, then one unit per segment."""
        return self._rendering().units

    @property
    def token_count(self) -> int:
        """Tokens of the rendering (headers included): what simulators report as prompt_tokens."""
        r = self._rendering()
        return r.tokens[-1] if r.tokens else 0

    def token_ids(self) -> tuple[int, ...]:
        """The flat rendering (for tests and debugging; simulators never build it)."""
        return tuple(t for u in self.units() for t in u.ids)
