"""rag: retrieve past rounds (user+assistant pairs) or sessions, and show them as a typical RAG agent does.

Prompt: [system] system prompt | [system] "Relevant memories" header + the retrieved items sorted by date,
each with its date | [user]/[assistant] the last `recent_turns` rounds of the current session | [user] the
new message (at question time: `Current Date: …\nQuestion: …`, no window). The query is the new user message
(the question at question time). Rounds shown in the window are not retrieved again; in session granularity
only finished sessions are indexed. Each retrieved item is its own segment, so a changed retrieval misses
the cache from the first item that differs onward.

Retrievers: `bm25` (our incremental index, rank_bm25's scores), `rank_bm25` (the library itself, rebuilt
lazily when queried after new documents; kept to compare), `dense` (cosine over ctx.embed vectors, cached
per text).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from bench.errors import ConfigError
from bench.prompt import Prompt, Segment
from bench.replay import ReplayTurn
from bench.roles import Role
from bench.strategies.base import Range, ReplaySettings, StrategyBase, StrategyContext, TurnResult
from bench.strategies.bm25 import BM25Index, term_counts, tokenize
from bench.strategies.history import Msg, SegmentCache, question_text, system_segments, turn_msgs, user_msg

MEMORY_HEADER = (
    "Relevant memories from earlier conversations with this user, oldest first. Each starts with the date "
    "it was said; use them when they help with the current message.\n"
)


@dataclass
class RagParams:
    granularity: Literal["round", "session"] = "round"
    retriever: Literal["bm25", "rank_bm25", "dense"] = "bm25"
    top_k: Annotated[int | None, Range(ge=1, unit="(or null: 10 rounds / 5 sessions)")] = None  # None: 10 rounds / 5 sessions
    recent_turns: Annotated[int, Range(ge=0, unit="rounds")] = 4  # rounds of the current session kept raw
    stopwords: bool = True
    k1: Annotated[float, Range(ge=0)] = 1.5
    b: Annotated[float, Range(ge=0, le=1)] = 0.75


def resolved_top_k(p: RagParams) -> int:
    return p.top_k if p.top_k is not None else (10 if p.granularity == "round" else 5)


class RagStrategy(StrategyBase):
    name = "rag"
    params_type = RagParams
    roles = frozenset({Role.EMBEDDER})  # only with retriever=dense (model_roles)

    def __init__(self, p: RagParams, ctx: StrategyContext) -> None:
        self.p = p
        self.ctx = ctx
        self.top_k = resolved_top_k(p)  # top_k and recent_turns are range-checked with the config
        if self.p.retriever == "dense" and ctx.embed is None:
            raise ConfigError(
                "strategies.rag.params.retriever=dense needs an embedder; configure model.embedder or use bm25"
            )
        self._by_lines = ctx.renders_with_counter()
        self._reset()

    def _reset(self) -> None:
        self.turns: list[list[Any]] = []  # committed pairs (the checkpoint state)
        self.docs: list[str] = []  # retrievable items, as shown in the prompt (date first)
        self._doc_parts: list[tuple[str, list[Msg]]] = []  # per doc: its date line and its messages
        self._terms: list[list[str]] = []
        self._bm25 = BM25Index(self.p.k1, self.p.b)
        self._lib: Any = None  # rank_bm25 index, rebuilt lazily
        self._vecs: dict[str, Any] = {}
        self._doc_segs: dict[tuple[int, bool], Segment] = {}
        self._segs = SegmentCache()
        self._label: str | None = None
        self._cur: list[tuple[int, list[Msg]]] = []  # (doc id or -1, messages) per round of the current session
        self._last_ids: list[int] = []
        self._doc_src: list[tuple[str, int | None]] = []  # per doc: (session label, timeline turn index or None)

    # ---- protocol ---------------------------------------------------------------------------------------
    async def add_turn(self, turn: ReplayTurn) -> TurnResult:
        if turn.thread_id != self._label:
            self._close()
            self._label = turn.thread_id
        user = user_msg(turn, self.ctx.tokens)
        result = TurnResult(prompt=None)
        if user is not None:
            window = self._cur[-self.p.recent_turns :] if self.p.recent_turns else []
            ids = sorted(await self._retrieve(user.text, exclude={d for d, _ in window}))
            if ids != self._last_ids:
                result.events.append("retrieve")
            self._last_ids = ids
            result.prompt = self._render(ids, [m for _, ms in window for m in ms], user)
        self._commit(turn, list(turn_msgs(turn, self.ctx.tokens, user)))
        return result

    async def question_prompt(self, question: str, question_date: datetime, question_date_str: str) -> Prompt:
        self._close()
        ranked = await self._retrieve(question, exclude=set())
        text = question_text(question, question_date_str)
        prompt = self._render(sorted(ranked), [], Msg("user", text, "question", 0))
        # what was retrieved, best first, as opaque labels (session label, timeline turn index): the harness maps
        # them to the dataset's ids to score retrieval; the system under test never sees the gold labels
        prompt.meta.update(retrieved_items=[list(self._doc_src[i]) for i in ranked], top_k=self.top_k,
                           granularity=self.p.granularity)
        return prompt

    def state(self) -> dict[str, Any]:
        return {"turns": self.turns}

    def load_state(self, state: dict[str, Any]) -> None:
        self._reset()
        for label, date_str, index, user, assistant in state.get("turns", []):
            if label != self._label:
                self._close()
                self._label = label
            turn = _StoredTurn(index, label, date_str, user, assistant)
            self._commit(turn, list(turn_msgs(turn, self.ctx.tokens)))

    @classmethod
    def model_roles(cls, p: RagParams) -> frozenset[Role]:
        return cls.roles if p.retriever == "dense" else frozenset()

    @classmethod
    def key_params(cls, p: RagParams, settings: ReplaySettings, resolved: Any = None) -> dict[str, Any]:
        return {**asdict(p), "top_k": resolved_top_k(p)}

    # ---- indexing ---------------------------------------------------------------------------------------
    def _commit(self, turn: ReplayTurn | "_StoredTurn", msgs: list[Msg]) -> None:
        self.turns.append([turn.thread_id, turn.date_str, turn.index, turn.user, turn.assistant])
        doc_id = -1
        if self.p.granularity == "round" and msgs:
            head = f"\n[{turn.date_str}]\n"
            body = "".join(f"{m.role}: {m.text}\n" for m in msgs)
            doc_id = self._index(head + body, (turn.thread_id, turn.index), head, msgs)
        self._cur.append((doc_id, msgs))

    def _close(self) -> None:
        """End of a session: in session granularity it becomes one document."""
        if self.p.granularity == "session" and self._cur:
            msgs = [m for _, ms in self._cur for m in ms]
            if msgs:
                body = "".join(f"{m.role}: {m.text}\n" for m in msgs)
                head = f"\n[Session of {self.turns[-1][1]}]\n"
                self._index(head + body, (self.turns[-1][0], None), head, msgs)
        self._cur = []

    def _index(self, doc: str, source: tuple[str, int | None], head: str, msgs: list[Msg]) -> int:
        self.docs.append(doc)
        self._doc_parts.append((head, msgs))
        self._doc_src.append(source)
        if self.p.retriever == "bm25":
            self._bm25.add_counts(term_counts(doc, self.p.stopwords))
        elif self.p.retriever == "rank_bm25":
            self._terms.append(tokenize(doc, self.p.stopwords))
        return len(self.docs) - 1

    # ---- retrieval --------------------------------------------------------------------------------------
    async def _retrieve(self, query: str, exclude: set[int]) -> list[int]:
        if not self.docs:
            return []
        if self.p.retriever == "bm25":
            best = self._bm25.top_counts(term_counts(query, self.p.stopwords), self.top_k, exclude)
        elif self.p.retriever == "rank_bm25":
            best = self._lib_top(tokenize(query, self.p.stopwords), exclude)
        else:
            best = await self._dense_top(query, exclude)
        return best  # best first; date order (== index order: the timeline is chronological) is sorted(best)

    def _lib_top(self, query: list[str], exclude: set[int]) -> list[int]:
        from rank_bm25 import BM25Okapi

        if self._lib is None or self._lib.corpus_size != len(self._terms):
            self._lib = BM25Okapi(self._terms, k1=self.p.k1, b=self.p.b) if any(self._terms) else None
        if self._lib is None or not query:
            return []
        scores = self._lib.get_scores(query)
        freqs = self._lib.doc_freqs
        match = [i for i in range(len(scores)) if i not in exclude and any(q in freqs[i] for q in query)]
        ranked = sorted(match, key=lambda i: (-scores[i], i))
        return ranked[: self.top_k]

    async def _dense_top(self, query: str, exclude: set[int]) -> list[int]:
        import numpy as np

        assert self.ctx.embed is not None
        missing = list(dict.fromkeys(t for t in [*self.docs, query] if t not in self._vecs))
        if missing:
            for text, vec in zip(missing, await self.ctx.embed(missing)):
                v = np.asarray(vec, dtype=np.float32)
                n = float(np.linalg.norm(v))
                self._vecs[text] = v / n if n else v
        mat = np.stack([self._vecs[d] for d in self.docs])
        sims = mat @ self._vecs[query]
        order = [int(i) for i in np.argsort(-sims, kind="stable") if int(i) not in exclude]
        return order[: self.top_k]

    # ---- rendering --------------------------------------------------------------------------------------
    def _render(self, ids: list[int], window: list[Msg], new: Msg) -> Prompt:
        # cache breakpoints (Anthropic): system prompt, end of the memories, and the last message
        segs = system_segments(self.ctx.system_prompt)
        if ids:
            idx = len(segs)
            segs.append(self._segs.get("system", MEMORY_HEADER, "rag:header", False, idx))
            for i in ids[:-1]:
                segs.append(self._doc_segment(i, idx, False))
            segs.append(self._doc_segment(ids[-1], idx, True))
        idx = (segs[-1].message_index + 1) if segs else 0
        get = self._segs.get  # the same objects while a message keeps its position
        segs.extend(get(m.role, m.text, m.key, False, idx + n) for n, m in enumerate(window))
        segs.append(Segment(new.role, new.text, new.key, True, idx + len(window)))
        return Prompt(segments=segs, meta={"retrieved": len(ids)})

    def _doc_segment(self, i: int, index: int, breakpoint: bool) -> Segment:
        """One retrieved item; the Segment objects are shared by every prompt that shows the item."""
        key = (i, breakpoint)
        seg = self._doc_segs.get(key)
        if seg is None:
            if self._by_lines and (i, not breakpoint) not in self._doc_segs:  # the rendering finds the
                from bench.render import default_renderer  # document's ids, built from its messages' (_doc_ids)

                default_renderer().remember("system", self.docs[i], self._doc_ids(i))
            seg = Segment("system", self.docs[i], f"rag:{self.p.granularity}:{i}", breakpoint, index)
            self._doc_segs[key] = seg
        return seg

    def _doc_ids(self, i: int) -> tuple[int, ...]:
        """encode(docs[i]), exactly, from its messages' ids (memoised when they were counted): the encoding
        must split after each line "<role>: <text>\\n" (a newline, then a role's first letter), and
        `encode_affixed` tokenises only each text's edges with the role and the newline. Other encodings, or
        roles the split rule does not cover: the document tokenised by lines."""
        counter = self.ctx.counter
        head, msgs = self._doc_parts[i]
        if not counter.splits_at_newlines or not head.endswith("\n") or any(
            not m.role[:1].isalpha() for m in msgs
        ):
            return counter.encode_by_lines(self.docs[i])
        ids = list(counter.encode(head))
        for m in msgs:
            ids.extend(counter.encode_affixed(f"{m.role}: ", m.text, "\n"))
        return tuple(ids)


@dataclass(frozen=True)
class _StoredTurn:
    """The fields of a ReplayTurn a checkpoint keeps."""

    index: int
    thread_id: str
    date_str: str
    user: str | None
    assistant: str | None
