"""Token rendering of a `Prompt`: what a provider's prefix cache sees, and the memos that make it cheap.

For every chat message, a small header (`MESSAGE_HEADER`, "{role}\\n": 2 tokens in o200k_base, standing in
for ChatML's `<|im_start|>role<|im_sep|>`), then the token ids of each of its segments, tokenised separately.
Real providers tokenise the concatenated message, so a token may differ at a segment join; that only moves a
cache boundary by a token or two. The rendering is a list of `Unit`s (one per header and one per segment).

One `Renderer` owns the tokenizer and every memo (segment ids by text, recent renderings); `reset()` drops
them. The process-wide default (`default_renderer()`, o200k
through om_core's memoised counter) is what `prompt_units(prompt)` / `token_count(prompt)` / `token_ids(prompt)` use;
tests swap it with `set_default_renderer`. (`bench.prompt` holds the plain types and never imports this module.)

Speed: a prompt reuses the rendering of the leading Segment objects it shares with a recent prompt (so
rendering costs O(changed segments)), and a long segment whose text changed is tokenised piece by piece between
the newlines where the encoding must split, each piece memoised (`TokenCounter.encode_by_lines`), so only the
pieces not seen before are tokenised. (`encode_incremental`, the earlier rule that re-used a previous text's
ids up to its first change, stays for callers and tests.)
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Sequence

from bench.prompt import Prompt, Segment

Tokenizer = Callable[[str], tuple[int, ...]]

# Text tokenised to stand for the per-message chat template header.
MESSAGE_HEADER = "{role}\n"


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


def common_len(a: Sequence[Any], b: Sequence[Any]) -> int:
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


class _Rendering(NamedTuple):
    segments: list[Segment]  # snapshot of the rendered segments (keeps them alive, so their ids stay unique)
    ids: list[int]  # id() of each segment
    units: list[Unit]
    ends: list[int]  # ends[i]: len(units) once segment i is rendered
    tokens: list[int]  # tokens[i]: tokens of units[: ends[i]]


class Renderer:
    """Renders prompts to `Unit`s with one tokenizer; owns the memos that make re-rendering cheap.

    `tokenizer` maps a text to its token ids and should memoise by text (it is called for every new segment);
    None is om_core's default o200k_base counter, whose memo is shared with token counting, and which
    tokenises long segments that changed by line pieces. The memos are bounded: `max_memo_entries` segment
    texts and `max_memo_tokens` token ids (past either the oldest half goes), `recent` renderings. Not
    thread-safe: one renderer per thread.
    """

    def __init__(self, tokenizer: Tokenizer | None = None, *, max_memo_entries: int = 200_000,
                 max_memo_tokens: int = 6_000_000, recent: int = 8) -> None:
        self._custom = tokenizer
        self._default: tuple[Any, Tokenizer] | None = None  # (om_core's default counter, its encode)
        self.max_memo_entries = max_memo_entries
        self.max_memo_tokens = max_memo_tokens
        self.recent = recent
        self.reset()

    @property
    def tokenizer(self) -> Tokenizer:
        """The text -> token ids function in use."""
        if self._custom is not None:
            return self._custom
        from om_core.tokens import default_counter

        counter = default_counter()
        if self._default is None or self._default[0] is not counter:  # one bound method per counter
            self._default = (counter, counter.encode)
        return self._default[1]

    @property
    def memo_tokens(self) -> int:
        """Token ids held by the segment memo (bounded by max_memo_tokens)."""
        return self._memo_tokens

    def reset(self) -> None:
        """Forget every memo (segment ids, recent renderings, headers)."""
        # (role, text) -> (unit key, token ids): one dict look-up per new segment instead of a tokenizer call;
        # first in, first out past its bounds (token ids are ~36 bytes each, and background requests are
        # 100k-token segments)
        self._memo: dict[tuple[str, str], tuple[tuple[str, str], tuple[int, ...]]] = {}
        self._memo_tokens = 0
        # The last few renderings. Strategies build each prompt from the Segment objects of the previous one
        # (the history grows, the breakpoint moves to the new last message), so a new prompt reuses the Unit
        # objects of the longest prefix of identical Segment objects (compared as id() lists: C speed, no
        # __eq__ calls) and renders only the segments after it. Sharing Unit objects also lets simulators
        # find, by identity, the part of a prompt they walked for the previous one.
        self._recent: list[_Rendering] = []
        self._last: tuple[Prompt, list[Segment], _Rendering] | None = None  # every simulator asks for it
        self._header_units: dict[str, Unit] = {}

    # ---- public rendering -------------------------------------------------------------------------------
    def render(self, prompt: Prompt) -> list[Unit]:
        """The token rendering: a header unit opening each chat message, then one unit per segment."""
        return self._rendering(prompt).units

    def token_count(self, prompt: Prompt) -> int:
        """Tokens of the rendering (headers included): what simulators report as prompt_tokens."""
        tokens = self._rendering(prompt).tokens
        return tokens[-1] if tokens else 0

    def segment_tokens(self, prompt: Prompt) -> list[int]:
        """Tokens of each segment's text (headers excluded), in segment order, from the rendering: a changed
        long segment is tokenised incrementally there (`encode_incremental`), so counting it through this costs
        no second tokenisation of the whole text."""
        counts = [0] * len(prompt.segments)
        for u in self._rendering(prompt).units:
            if u.block >= 0:
                counts[u.block] += len(u.ids)
        return counts

    def token_ids(self, prompt: Prompt) -> tuple[int, ...]:
        """The flat rendering (for tests and debugging; simulators never build it)."""
        return tuple(t for u in self.render(prompt) for t in u.ids)

    def segment_ids(self, segment: Segment) -> tuple[int, ...]:
        """Token ids of a segment's text alone (no message header)."""
        hit = self._memo.get((segment.role, segment.text))
        return hit[1] if hit is not None else self.tokenizer(segment.text)

    def remember(self, role: str, text: str, ids: tuple[int, ...]) -> None:
        """Hand the renderer the token ids of a segment text it will render (they must be the tokenizer's
        ids of `text`, e.g. built exactly from pieces), so rendering it is a look-up."""
        if (role, text) not in self._memo:
            self._remember((role, text), ids)

    def header_ids(self, role: str) -> tuple[int, ...]:
        """Token ids of the header that opens a chat message of `role`."""
        return self._header(role).ids

    # ---- internals --------------------------------------------------------------------------------------
    def _header(self, role: str) -> Unit:
        unit = self._header_units.get(role)
        if unit is None:
            unit = self._header_units[role] = Unit("h:" + role, self.tokenizer(MESSAGE_HEADER.format(role=role)), -1)
        return unit

    def _rendering(self, prompt: Prompt) -> _Rendering:
        last = self._last
        segs = prompt.segments
        if last is not None and last[0] is prompt and last[1] == segs:
            return last[2]
        r = self._render(segs)
        self._last = (prompt, r.segments, r)
        return r

    def _remember(self, k: tuple[str, str], ids: tuple[int, ...]) -> tuple[tuple[str, str], tuple[int, ...]]:
        memo = self._memo
        if len(memo) >= self.max_memo_entries or self._memo_tokens + len(ids) > self.max_memo_tokens:
            drop = max(len(memo) // 2, 1)  # the older half (and more while still over the token bound)
            for old in list(memo)[:drop]:
                self._memo_tokens -= len(memo.pop(old)[1])
            while memo and self._memo_tokens + len(ids) > self.max_memo_tokens:
                self._memo_tokens -= len(memo.pop(next(iter(memo)))[1])
        hit = memo[k] = (k, ids)  # the key tuple is the unit key
        self._memo_tokens += len(ids)
        return hit

    def _encode_segment(self, key: str, text: str, enc: Tokenizer) -> tuple[int, ...]:
        """Token ids of a segment text not in the memo: a long text through the default counter's line-piece
        memo (`TokenCounter.encode_by_lines`, exact for o200k and cl100k) when the default tokenizer is in use,
        else enc(text). A block whose parts moved (om's OTHER-conversations block gains a thread at its start
        when a session ends) then tokenises only the pieces it has not seen; `encode_incremental`, used here
        before, only saved a change near the end."""
        if self._custom is not None or len(text) < INCREMENTAL_MIN_CHARS or not key:
            return enc(text)
        from om_core import default_counter

        counter = default_counter()
        if counter.encoding_name in _SAFE_ENCODINGS:
            return counter.encode_by_lines(text)
        return enc(text)

    def _render(self, segs: list[Segment]) -> _Rendering:
        seg_ids = list(map(id, segs))
        best_k, best = 0, None
        n = len(seg_ids)
        for r in reversed(self._recent):  # newest first: usually the best
            if best_k == n:
                break
            if len(r.ids) > best_k and r.ids[best_k] == seg_ids[best_k]:  # else it cannot share more than best_k
                k = common_len(r.ids, seg_ids)
                if k > best_k:
                    best_k, best = k, r
        last: int | None
        if best is not None:
            out = best.units[: best.ends[best_k - 1]]
            ends = best.ends[:best_k]
            tokens = best.tokens[:best_k]
            last = segs[best_k - 1].message_index
            total = tokens[-1]
        else:
            out, ends, tokens, last, total = [], [], [], None, 0
        enc = self._custom or self.tokenizer
        memo = self._memo
        headers = self._header_units
        for i in range(best_k, len(segs)):
            s = segs[i]
            if s.message_index != last or not out:  # same grouping rule as Prompt.to_messages
                h = headers.get(s.role) or self._header(s.role)
                out.append(h)
                total += len(h.ids)
                last = s.message_index
            mk = (s.role, s.text)
            hit = memo.get(mk)
            if hit is None:
                hit = self._remember(mk, self._encode_segment(s.key, s.text, enc))
            out.append(Unit(hit[0], hit[1], i, s.breakpoint))
            total += len(hit[1])
            ends.append(len(out))
            tokens.append(total)
        r = _Rendering(list(segs), seg_ids, out, ends, tokens)
        if best is not None and best_k == len(best.segments):  # the new rendering extends it: keep the longer one
            self._recent = [x for x in self._recent if x is not best]  # (by identity: == compares segments)
        self._recent.append(r)
        if len(self._recent) > self.recent:
            del self._recent[0]
        return r


_DEFAULT: Renderer | None = None


def default_renderer() -> Renderer:
    """The process-wide renderer (o200k_base through om_core's default counter unless replaced)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Renderer()
    return _DEFAULT


def set_default_renderer(renderer: Renderer | None) -> Renderer:
    """Make `renderer` (None: a fresh o200k renderer) the process-wide default; returns the previous one."""
    global _DEFAULT
    previous = default_renderer()
    _DEFAULT = renderer if renderer is not None else Renderer()
    return previous


def prompt_units(prompt: Prompt) -> list[Unit]:
    """The default renderer's token rendering: a header unit opening each chat message, then one unit per
    segment."""
    return default_renderer().render(prompt)


def token_count(prompt: Prompt) -> int:
    """Tokens of the default rendering (headers included): what simulators report as prompt_tokens."""
    return default_renderer().token_count(prompt)


def token_ids(prompt: Prompt) -> tuple[int, ...]:
    """The flat default rendering (for tests and debugging; simulators never build it)."""
    return default_renderer().token_ids(prompt)
