"""full_context: everything so far, in the benchmark's reader layout (LongMemEval's official one), cut to the
Actor's window. The layout comes with the context (`StrategyContext.reader`, the benchmark's).

Turn prompt:     [system] system prompt | [user] reader instruction + one block per finished session |
                 [user]/[assistant] the current session's messages so far | [user] the new message
Question prompt: [system] system prompt | [user] reader instruction + all session blocks + Current Date/Question

Each session block is two segments (its numbered header and its content) whose concatenation is exactly
`reader_prompt.session_block`, so the content is tokenised once and a renumbering only touches headers.
The history (session blocks and current messages) is held to max_input - output_budget - reserve tokens,
the official baseline's budget (128000 - 800 - 1000 for gpt-4o). `truncation: drop_oldest` (a live agent's
sliding window) drops whole sessions from the oldest, then the oldest current messages; `keep_head` keeps
the first tokens of the history like the official script (which slices the token list's head).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from bench.errors import ConfigError
from bench.prompt import Prompt, Segment
from bench.replay import ReplayTurn
from bench.strategies.base import Range, ReplaySettings, StrategyBase, StrategyContext, TurnResult
from bench.strategies.history import Msg, SegmentCache, SessionLog, system_segments, turn_msgs, user_msg
from bench.strategies.json_ids import json_content_ids

_CONTENT_MARK = "\nSession Content:\n"


@dataclass
class FullContextParams:
    reserve_tokens: Annotated[int, Range(ge=0, unit="tokens")] = 1000
    truncation: Literal["drop_oldest", "keep_head"] = "drop_oldest"
    method: Literal["con", "direct"] = "con"
    history_format: Literal["json", "nl"] = "json"


# question-turn event `haystack_in_window=0.1234`: the share of the haystack's tokens the question prompt held
HAYSTACK_IN_WINDOW = "haystack_in_window"


@dataclass
class _Cut:
    start: int  # first finished session kept (drop_oldest) or number kept whole (keep_head)
    dropped_msgs: int  # oldest current-session messages dropped
    partial_tokens: int = -1  # keep_head: tokens kept of the first session that did not fit (-1: none)

    @property
    def truncated(self) -> bool:
        return self.start > 0 or self.dropped_msgs > 0 or self.partial_tokens >= 0


class FullContextStrategy(StrategyBase):
    name = "full_context"
    params_type = FullContextParams
    renders_reader_prompt = True  # the official reader layout, cut to the Actor's window

    @staticmethod
    def _budget(p: FullContextParams, window: int, output_budget: int) -> int:
        """Tokens left for history: the window minus the answer budget and the reserve."""
        return window - output_budget - p.reserve_tokens

    @classmethod
    def check(cls, p: FullContextParams, settings: ReplaySettings, resolved: Any = None) -> None:
        if cls._budget(p, settings.max_input_tokens, settings.output_budget) <= 0:
            raise ConfigError(
                f"strategies.{cls.name}.params.reserve_tokens={p.reserve_tokens}: leaves no room for history in a "
                f"{settings.max_input_tokens}-token window (model.actor_max_input_tokens) with "
                f"{settings.output_budget} output tokens (answer.max_tokens); lower it"
            )

    def __init__(self, p: FullContextParams, ctx: StrategyContext) -> None:
        self.p = p
        self.ctx = ctx
        self.reader = ctx.reader if ctx.reader is not None else _default_reader()
        self.budget = self._budget(p, ctx.max_input_tokens, ctx.output_budget)
        if self.budget <= 0:  # checked with the config (`check`); a context built by hand gets the same line
            self.check(p, ReplaySettings(max_input_tokens=ctx.max_input_tokens, output_budget=ctx.output_budget))
        key, text = self.reader.reader_prompt_parts([], "", "", method=self.p.method, history_format=self.p.history_format)[0]
        self._instr = (key, text)
        self.closed: list[SessionLog] = []
        self._closed_tokens: list[int] = []  # header (at its own position) + content tokens per finished session
        self._closed_total = 0  # their sum
        self.cur: SessionLog | None = None
        self._cur_tokens = 0
        self._cur_segs: list[Segment] = []  # the current session's messages as prompt segments
        self._blocks: dict[tuple[str, int], tuple[str, str]] = {}
        self._hist_key: tuple[int, int, int] | None = None
        self._hist: list[Segment] = []
        # the history's Segment objects, reused across rebuilds: a session's close then re-renders only what
        # changed (the renderer and simulators share the rendering of identical leading Segment objects)
        self._hist_segs = SegmentCache()
        self._last_cut = _Cut(0, 0)

    # ---- protocol ---------------------------------------------------------------------------------------
    async def add_turn(self, turn: ReplayTurn) -> TurnResult:
        if self.cur is None or self.cur.label != turn.thread_id:
            self._close()
            self.cur = SessionLog(turn.thread_id, turn.session_date, turn.date_str)
        user = user_msg(turn, self.ctx.tokens)
        result = TurnResult(prompt=None)
        if user is not None:
            result.prompt, cut = self._render(tail=self.cur.msgs, tail_tokens=self._cur_tokens, new=user)
            if cut.truncated and cut != self._last_cut:
                result.events.append("truncate")
            self._last_cut = cut
        for m in turn_msgs(turn, self.ctx.tokens, user):
            self._append(m)
        return result

    async def question_prompt(self, question: str, question_date: datetime, question_date_str: str) -> Prompt:
        self._close()
        prompt, cut = self._render(tail=[], tail_tokens=0, new=None)
        share = self._share_in_window(cut)
        if share < 1.0:  # the summary says how much of the haystack the answer could see (bench.runner.window_notes)
            prompt.meta["events"] = [*prompt.meta.get("events", []), f"{HAYSTACK_IN_WINDOW}={share:.4f}"]
        prompt.add(
            "user",
            self.reader.question_block(question, question_date_str, self.p.method),
            key="reader:question",
            breakpoint=True,
            new_message=False,
        )
        return prompt

    def _append(self, m: Msg) -> None:
        assert self.cur is not None
        index = (2 if self.ctx.system_prompt else 1) + len(self.cur.msgs)  # after system + history messages
        self.cur.msgs.append(m)
        self._cur_segs.append(Segment(m.role, m.text, m.key, False, index))
        self._cur_tokens += m.tokens

    def state(self) -> dict[str, Any]:
        return {
            "closed": [s.to_json() for s in self.closed],
            "current": self.cur.to_json() if self.cur else None,
        }

    def load_state(self, state: dict[str, Any]) -> None:
        self.closed, self._closed_tokens, self._blocks, self._hist_key = [], [], {}, None
        self._hist_segs.clear()
        self._closed_total = 0
        self.cur, self._cur_tokens, self._cur_segs = None, 0, []
        for d in state.get("closed", []):
            self.cur = SessionLog.from_json(d, self.ctx.tokens)
            self._close()
        if state.get("current"):
            cur = SessionLog.from_json(state["current"], self.ctx.tokens)
            self.cur = SessionLog(cur.label, cur.date, cur.date_str)
            for m in cur.msgs:
                self._append(m)

    # ---- rendering --------------------------------------------------------------------------------------
    def _close(self) -> None:
        if self.cur is None:
            return
        if self.cur.msgs:
            self.closed.append(self.cur)
            header, body = self._block(len(self.closed), self.cur)
            self._closed_tokens.append(self.ctx.tokens(header) + self._body_tokens(body, self.cur))
            self._closed_total += self._closed_tokens[-1]
        self.cur, self._cur_tokens, self._cur_segs = None, 0, []

    def _body_tokens(self, body: str, s: SessionLog) -> int:
        """Tokens of a session block's content. The JSON content (the default layout) is tokenised from its
        messages' ids, which the turns already hold (`json_content_ids`: exact, and what JSON changes is all
        it tokenises), and handed to the renderer for the prompts that hold the block."""
        if self.p.history_format != "json" or not body or not self.ctx.renders_with_counter():
            return self.ctx.tokens(body)
        from bench.render import default_renderer

        ids = json_content_ids(body, [(m.role, m.text) for m in s.msgs], self.ctx.counter)
        default_renderer().remember("user", body, ids)
        return len(ids)

    def _block(self, i: int, s: SessionLog) -> tuple[str, str]:
        """(header, content) of session `s` numbered `i`; their concatenation is the official block."""
        hit = self._blocks.get((s.label, i))
        if hit is None:
            text = self.reader.session_block(i, s.view(), self.p.history_format)
            cut = text.find(_CONTENT_MARK)
            cut = 0 if cut < 0 else cut + len(_CONTENT_MARK)
            hit = self._blocks[(s.label, i)] = (text[:cut], text[cut:])
        return hit

    def _share_in_window(self, cut: _Cut) -> float:
        """Share (0-1) of the finished sessions' tokens that the prompt of `cut` holds."""
        toks = self._closed_tokens
        total = sum(toks)
        if not total:
            return 1.0
        if self.p.truncation == "keep_head":
            kept = sum(toks[: cut.start]) + max(0, cut.partial_tokens)
        else:
            kept = sum(toks[cut.start :])
        return min(1.0, kept / total)

    def _choose(self, avail: int) -> _Cut:
        """Which finished sessions fit in `avail` tokens."""
        toks = self._closed_tokens
        if self._closed_total <= avail:  # everything fits (the common case): no walk over the sessions
            return _Cut(len(toks), 0) if self.p.truncation == "keep_head" else _Cut(0, 0)
        if self.p.truncation == "keep_head":
            used = 0
            for j, t in enumerate(toks):
                if used + t > avail:
                    return _Cut(j, 0, max(0, avail - used))
                used += t
            return _Cut(len(toks), 0)
        used, start = 0, len(toks)
        while start > 0 and used + toks[start - 1] <= avail:
            start -= 1
            used += toks[start]
        return _Cut(start, 0)

    def _history(self, cut: _Cut) -> list[Segment]:
        """System + the history message (instruction and session blocks); rebuilt only when the kept sessions
        change, so consecutive prompts share these Segment objects."""
        key = (cut.start, cut.partial_tokens, len(self.closed))
        if self._hist_key == key:
            return self._hist
        out = system_segments(self.ctx.system_prompt)
        idx = len(out)
        seg = self._hist_segs.get
        out.append(seg("user", self._instr[1], self._instr[0], False, idx))
        kept = self.closed[: cut.start] if self.p.truncation == "keep_head" else self.closed[cut.start :]
        if self.p.truncation == "drop_oldest" and cut.start and len(self._blocks) > 4 * len(self.closed):
            self._blocks.clear()  # renumbered blocks of a sliding window: keep the memo small
            self._hist_segs.clear()
        for n, sess in enumerate(kept, start=1):
            header, body = self._block(n, sess)
            out.append(seg("user", header, f"sess:{sess.label}:h", False, idx))
            out.append(seg("user", body, f"sess:{sess.label}", False, idx))
        if cut.partial_tokens >= 0 and cut.start < len(self.closed):
            sess = self.closed[cut.start]
            header, body = self._block(cut.start + 1, sess)
            text, _ = self.ctx.counter.truncate(header + body, cut.partial_tokens)
            if text:
                out.append(seg("user", text, f"sess:{sess.label}:cut", False, idx))
        last = out[-1]  # end of the history message: a cache breakpoint that holds for the whole session
        out[-1] = seg(last.role, last.text, last.key, True, last.message_index)
        self._hist_key, self._hist = key, out
        return out

    def _render(self, tail: list[Msg], tail_tokens: int, new: Msg | None) -> tuple[Prompt, _Cut]:
        tail_tokens += new.tokens if new else 0
        dropped = 0
        while tail_tokens > self.budget and dropped < len(tail):  # the current session alone overflows
            tail_tokens -= tail[dropped].tokens
            dropped += 1
        cut = self._choose(max(0, self.budget - tail_tokens))
        cut.dropped_msgs = dropped
        segs = list(self._history(cut))
        base = segs[-1].message_index + 1
        if dropped:
            segs.extend(Segment(m.role, m.text, m.key, False, base + i) for i, m in enumerate(tail[dropped:]))
        elif tail:
            segs.extend(self._cur_segs)  # built once per message, in commit order
        if new is not None:  # breakpoint on the last message, as a cache-aware agent moves it each turn
            segs.append(Segment(new.role, new.text, new.key, True, base + len(tail) - dropped))
        prompt = Prompt(segments=segs, meta={"truncated": cut.truncated})
        if cut.truncated:
            kept = cut.start if self.p.truncation == "keep_head" else len(self.closed) - cut.start
            prompt.meta.update(
                dropped_sessions=len(self.closed) - kept - (1 if cut.partial_tokens >= 0 else 0),
                partial_session=cut.partial_tokens >= 0,
                dropped_messages=dropped,
            )
        return prompt, cut


def _default_reader() -> Any:
    """LongMemEval's reader layout, for a strategy built outside a job (no benchmark in its context)."""
    from bench.benchmarks import get_benchmark

    return get_benchmark("longmemeval").reader
