"""compaction: one long conversation that a summariser condenses whenever it outgrows a threshold.

Prompt: [system] system prompt | [system] summary of everything condensed so far (once there is one) |
the raw messages since, each session opened by a dated marker | [user] the new message (at question time:
`Current Date: …\nQuestion: …`). Before a user turn is rendered, if summary + history + the new message pass
`threshold` tokens (absolute, or a fraction of the Actor's window when < 1), the summariser rewrites the
previous summary plus every message older than the most recent `keep_recent_tokens` into a new summary
(summaries chain), and the prompt is append-only again until the next compaction (event "compact"). The
summariser gets its instruction, the previous summary, the overflow as chat messages, then the request.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Annotated, Any

from bench.errors import ConfigError
from bench.prompt import Prompt, Segment
from bench.replay import ReplayTurn
from bench.roles import Role
from bench.strategies.base import Range, ReplaySettings, StrategyBase, StrategyContext, TurnResult
from bench.strategies.history import Msg, question_text, system_segments, turn_msgs, user_msg

SUMMARIZER_SYSTEM = (
    "You keep the running memory of a long conversation between a user and an AI assistant, so the assistant "
    "can carry on without the full transcript. The messages that follow are the part of the conversation to "
    "condense (bracketed lines mark where a session starts and its date); fold them into the existing summary, "
    "if there is one. Keep every concrete detail about the user: names, numbers, places, dates, preferences, "
    "plans, possessions, and every change of mind (say which value is the latest). Keep what the assistant "
    "recommended or stated when the user may come back to it. Date each item with the session date it comes "
    "from. Write short dated bullet points, oldest first, and output only the summary."
)
EXISTING_SUMMARY = "Existing summary of the conversation before these messages:\n"
SUMMARY_REQUEST = "Write the updated summary of the conversation so far, following your instructions."
SUMMARY_PREFIX = "Summary of the earlier conversation with this user (older messages were condensed into it):\n"


@dataclass
class CompactionParams:
    # tokens of summary + history (+ new message); < 1: fraction of max_input_tokens
    threshold: Annotated[float, Range(gt=0, unit="(tokens, or a fraction of the Actor's window in (0, 1))")] = 30000
    keep_recent_tokens: Annotated[int, Range(ge=0, unit="tokens")] = 6000
    summary_max_tokens: Annotated[int, Range(gt=0, unit="tokens")] = 2000
    session_markers: bool = True


def threshold_tokens(threshold: float, max_input_tokens: int) -> int:
    """The compaction threshold in tokens: absolute, or a fraction of the Actor's window when in (0, 1)."""
    return int(threshold * max_input_tokens) if 0 < threshold < 1 else int(threshold)


def session_marker(date_str: str) -> str:
    return f"[A new conversation session starts. Date: {date_str}]"


class CompactionStrategy(StrategyBase):
    name = "compaction"
    params_type = CompactionParams
    roles = frozenset({Role.SUMMARIZER})

    def __init__(self, p: CompactionParams, ctx: StrategyContext) -> None:
        self.p = p
        self.ctx = ctx
        self.threshold = threshold_tokens(self.p.threshold, ctx.max_input_tokens)
        self._check(self.threshold, self.p.keep_recent_tokens)
        self.summarizer = ctx.model(Role.SUMMARIZER, self.name)
        self.summary = ""
        self.generation = 0  # number of compactions so far
        self.msgs: list[Msg] = []
        self._segs: list[Segment] = []  # self.msgs as prompt segments
        self._tokens = 0  # summary + messages
        self._summary_seg: tuple[tuple[str, int, str], Segment] | None = None  # (source, segment) memo
        self._label: str | None = None

    # ---- protocol ---------------------------------------------------------------------------------------
    async def add_turn(self, turn: ReplayTurn) -> TurnResult:
        if turn.thread_id != self._label:
            self._label = turn.thread_id
            if self.p.session_markers:
                text = session_marker(turn.date_str)
                self._append(Msg("system", text, f"m:{turn.index}:s", self.ctx.tokens(text)))
        user = user_msg(turn, self.ctx.tokens)
        result = TurnResult(prompt=None)
        if user is not None:
            if await self._maybe_compact(user.tokens):
                result.events.append("compact")
            result.prompt = self._render(user)
        for m in turn_msgs(turn, self.ctx.tokens, user):
            self._append(m)
        return result

    async def question_prompt(self, question: str, question_date: datetime, question_date_str: str) -> Prompt:
        text = question_text(question, question_date_str)
        new = Msg("user", text, "question", self.ctx.tokens(text))
        await self._maybe_compact(new.tokens)
        return self._render(new)

    def state(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "generation": self.generation,
            "label": self._label,
            "msgs": [[m.role, m.text, m.key] for m in self.msgs],
        }

    def load_state(self, state: dict[str, Any]) -> None:
        self.summary = state.get("summary", "")
        self.generation = int(state.get("generation", 0))
        self._label = state.get("label")
        self.msgs = [Msg(r, t, k, self.ctx.tokens(t)) for r, t, k in state.get("msgs", [])]
        self._resegment()
        self._tokens = self._summary_tokens() + sum(m.tokens for m in self.msgs)

    @classmethod
    def check(cls, p: CompactionParams, settings: ReplaySettings, resolved: Any = None) -> None:
        cls._check(threshold_tokens(p.threshold, settings.max_input_tokens), p.keep_recent_tokens,
                   settings.max_input_tokens)

    @staticmethod
    def _check(threshold: int, keep_recent: int, window: int | None = None) -> None:
        w = "strategies.compaction.params"
        if threshold <= 0:
            raise ConfigError(f"{w}.threshold: resolves to {threshold} tokens; give a token count or a fraction in (0, 1)")
        if keep_recent >= threshold:
            raise ConfigError(f"{w}.keep_recent_tokens={keep_recent}: must be below the threshold ({threshold} "
                              f"tokens); lower it or raise {w}.threshold")
        if window is not None and threshold > window:
            raise ConfigError(f"{w}.threshold: {threshold:,} tokens is more than the Actor's window "
                              f"(model.actor_max_input_tokens={window:,}); lower it, or give a fraction in (0, 1)")

    @classmethod
    def call_inputs(cls, p: CompactionParams, settings: ReplaySettings, resolved: Any = None) -> dict[Role, int]:
        # the summariser condenses up to the threshold minus what stays raw; the Actor holds up to the threshold
        limit = threshold_tokens(p.threshold, settings.max_input_tokens)
        return {Role.SUMMARIZER: max(0, limit - p.keep_recent_tokens), Role.ACTOR: limit}

    @classmethod
    def key_params(cls, p: CompactionParams, settings: ReplaySettings, resolved: Any = None) -> dict[str, Any]:
        # a fraction of the window and the token count it stands for are the same setting
        return {**asdict(p), "threshold": threshold_tokens(p.threshold, settings.max_input_tokens)}

    # ---- compaction -------------------------------------------------------------------------------------
    def _base(self) -> int:
        """Message index of the first raw message: after the system prompt and the summary."""
        return (1 if self.ctx.system_prompt else 0) + (1 if self.summary else 0)

    def _append(self, m: Msg) -> None:
        self._segs.append(Segment(m.role, m.text, m.key, False, self._base() + len(self.msgs)))
        self.msgs.append(m)
        self._tokens += m.tokens

    def _resegment(self) -> None:
        # positions change only at a compaction; between two, prompts share these Segment objects
        base = self._base()
        self._segs = [Segment(m.role, m.text, m.key, False, base + i) for i, m in enumerate(self.msgs)]

    def _summary_tokens(self) -> int:
        return self.ctx.tokens(SUMMARY_PREFIX + self.summary) if self.summary else 0

    async def _maybe_compact(self, incoming: int) -> bool:
        if self._tokens + incoming <= self.threshold:
            return False
        # the most recent messages that fit in keep_recent_tokens stay raw
        keep, kept = len(self.msgs), 0
        while keep > 0 and kept + self.msgs[keep - 1].tokens <= self.p.keep_recent_tokens:
            keep -= 1
            kept += self.msgs[keep].tokens
        overflow = self.msgs[:keep]
        if not overflow:
            return False  # nothing older than the tail: the window simply has to hold it
        # The overflow goes as the chat messages it already is (texts the Actor prompts already tokenised),
        # between the instruction (+ the previous summary) and the request.
        request = [{"role": "system", "content": SUMMARIZER_SYSTEM}]
        if self.summary:
            request.append({"role": "system", "content": EXISTING_SUMMARY + self.summary})
        request += [{"role": m.role, "content": m.text} for m in overflow]
        request.append({"role": "user", "content": SUMMARY_REQUEST})
        completion = await self.summarizer.complete(
            request, role="summarizer", temperature=0.0, max_tokens=self.p.summary_max_tokens
        )
        self.summary = completion.text.strip()
        self.generation += 1
        self.msgs = self.msgs[keep:]
        self._resegment()
        self._tokens = self._summary_tokens() + kept
        return True

    def _render(self, new: Msg) -> Prompt:
        segs = system_segments(self.ctx.system_prompt)
        if self.summary:
            key = f"compact:summary:{self.generation}"
            src = (key, len(segs), self.summary)
            if self._summary_seg is None or self._summary_seg[0] != src:  # (summaries are short: == is cheap)
                self._summary_seg = (src, Segment("system", SUMMARY_PREFIX + self.summary, key, True, len(segs)))
            segs.append(self._summary_seg[1])  # the same object until the next compaction
        segs.extend(self._segs)
        # breakpoint on the last message, as a cache-aware agent moves it each turn
        segs.append(Segment(new.role, new.text, new.key, True, self._base() + len(self.msgs)))
        return Prompt(segments=segs, meta={"compactions": self.generation})
