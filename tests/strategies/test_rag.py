import json

import pytest
from rank_bm25 import BM25Okapi

from bench.errors import ConfigError
from bench.replay import build_timeline
from bench.strategies import make_strategy
from bench.strategies.bm25 import BM25Index, tokenize
from bench.strategies.rag import MEMORY_HEADER

from tests.helpers.encode_spy import EncodeSpy
from tests.helpers.strategies import chat, is_prefix, make_ctx, make_view

CORPUS = [
    "my dog pixel loves the beach and long walks",
    "I bought a new laptop for work yesterday",
    "the beach house rental costs too much in july",
    "pixel the dog needs a vet appointment",
    "work laptop keyboard broke again",
    "walks walks walks every day with the dog",
    "tea or coffee in the morning",
]


@pytest.mark.parametrize("query", ["dog beach", "laptop work broke", "pixel vet", "coffee", "walks dog dog", "unknownword"])
def test_bm25_scores_equal_rank_bm25(query):
    docs = [tokenize(d) for d in CORPUS]
    lib = BM25Okapi(docs)
    idx = BM25Index()
    for d in docs:
        idx.add(d)
    q = tokenize(query)
    ours = idx.scores(q)
    for i, s in enumerate(lib.get_scores(q)):
        assert ours.get(i, 0.0) == pytest.approx(s, abs=1e-9)


def test_bm25_negative_idf_uses_rank_bm25_floor():
    docs = [["a", "x"], ["a", "y"], ["a", "z"], ["b"]]  # "a" in 3 of 4 docs: negative idf
    lib, idx = BM25Okapi(docs), BM25Index()
    for d in docs:
        idx.add(d)
    assert [idx.scores(["a"]).get(i, 0.0) for i in range(4)] == pytest.approx(list(lib.get_scores(["a"])))


async def replay(strategy, view):
    return [await strategy.add_turn(t) for t in build_timeline(view)]


def retrieved_keys(prompt):
    return [s.key for s in prompt.segments if s.key.startswith("rag:round:") or s.key.startswith("rag:session:")]


async def test_round_retrieval_layout_window_and_dates():
    view = make_view([chat(3, "kayak"), chat(3, "violin"), chat(6, "garden")])
    s = make_strategy("rag", {"top_k": 2, "recent_turns": 2}, make_ctx())
    results = await replay(s, view)
    last = results[-1].prompt  # garden session, 6th user turn: window = garden rounds 4 and 5
    msgs = last.to_messages()
    assert msgs[0]["role"] == "system" and msgs[1]["role"] == "system"
    assert msgs[1]["content"].startswith(MEMORY_HEADER)
    assert [m["role"] for m in msgs[2:]] == ["user", "assistant", "user", "assistant", "user"]
    assert msgs[2]["content"].startswith("garden question 3") and msgs[-1]["content"].startswith("garden question 5")
    keys = retrieved_keys(last)
    assert len(keys) == 2
    window_ids = {f"rag:round:{i}" for i in (3 + 3 + 3, 3 + 3 + 4)}
    assert not window_ids & set(keys)  # rounds already in the window are not retrieved again
    assert "[2023/05/03 (Wed) 10:00]" in msgs[1]["content"]  # dates shown
    ids = [int(k.rsplit(":", 1)[1]) for k in keys]
    assert ids == sorted(ids)  # oldest first


async def test_query_is_the_user_message_then_the_question():
    view = make_view([chat(2, "kayak"), chat(2, "violin"), [("user", "tell me about kayak0 kayak1"), ("assistant", "ok")]])
    s = make_strategy("rag", {"top_k": 1, "recent_turns": 0}, make_ctx())
    results = await replay(s, view)
    assert "kayak" in results[-1].prompt.segments[2].text
    q = await s.question_prompt("what about violin3 violin4?", view.question_date, view.question_date_str)
    msgs = q.to_messages()
    assert "violin" in msgs[1]["content"]
    assert msgs[-1] == {"role": "user", "content": f"Current Date: {view.question_date_str}\nQuestion: what about violin3 violin4?"}


async def test_retrieve_event_only_when_the_retrieval_changes_and_cache_prefix_shape():
    view = make_view([chat(2, "kayak"), [("user", "kayak0 again"), ("assistant", "a"), ("user", "kayak0 kayak1 again"), ("assistant", "b"),
                                         ("user", "now violin"), ("assistant", "c")]])
    s = make_strategy("rag", {"top_k": 2, "recent_turns": 4}, make_ctx())
    results = await replay(s, view)
    r1, r2, r3 = results[2:]
    assert "retrieve" in r1.events
    assert retrieved_keys(r1.prompt) == retrieved_keys(r2.prompt) and r2.events == []
    assert is_prefix(r1.prompt, r2.prompt)  # same retrieval: the prompt only grows
    assert "retrieve" in r3.events and retrieved_keys(r3.prompt) == []  # nothing matches "violin"
    assert r3.prompt.segments[1].key != "rag:header" and not is_prefix(r2.prompt, r3.prompt)


async def test_session_granularity_indexes_finished_sessions_only():
    view = make_view([chat(2, "kayak"), chat(2, "violin"), chat(2, "garden")])
    s = make_strategy("rag", {"granularity": "session"}, make_ctx())
    assert s.top_k == 5
    results = await replay(s, view)
    keys = retrieved_keys(results[-1].prompt)
    assert keys and all(k in ("rag:session:0", "rag:session:1") for k in keys)
    q = await s.question_prompt("garden1 garden2", view.question_date, view.question_date_str)
    assert "rag:session:2" in retrieved_keys(q)
    assert "[Session of 2023/05/03 (Wed) 10:00]" in q.text


async def test_rank_bm25_backend_retrieves_the_same():
    view = make_view([chat(3, "kayak"), chat(3, "violin"), chat(3, "garden")])
    a = make_strategy("rag", {"recent_turns": 1}, make_ctx())
    b = make_strategy("rag", {"recent_turns": 1, "retriever": "rank_bm25"}, make_ctx())
    for ra, rb in zip(await replay(a, view), await replay(b, view)):
        assert retrieved_keys(ra.prompt) == retrieved_keys(rb.prompt)


async def test_dense_retriever_embeds_each_text_once():
    seen: list[str] = []

    async def embed(texts):
        seen.extend(texts)
        return [[t.count("kayak") + 0.01, t.count("violin") + 0.01, t.count("garden") + 0.01] for t in texts]

    view = make_view([chat(2, "kayak"), chat(2, "violin"), [("user", "violin violin"), ("assistant", "ok")]])
    s = make_strategy("rag", {"retriever": "dense", "top_k": 2, "recent_turns": 0}, make_ctx(embed=embed))
    results = await replay(s, view)
    assert len(seen) == len(set(seen))
    keys = retrieved_keys(results[-1].prompt)
    assert keys == ["rag:round:2", "rag:round:3"]  # the violin rounds
    with pytest.raises(ConfigError, match="retriever=dense"):
        make_strategy("rag", {"retriever": "dense"}, make_ctx())


async def test_state_round_trip():
    view = make_view([chat(2, "kayak"), chat(3, "violin")])
    for gran in ("round", "session"):
        s = make_strategy("rag", {"granularity": gran}, make_ctx())
        await replay(s, view)
        s2 = make_strategy("rag", {"granularity": gran}, make_ctx())
        s2.load_state(json.loads(json.dumps(s.state())))
        a = await s.question_prompt("violin2", view.question_date, view.question_date_str)
        b = await s2.question_prompt("violin2", view.question_date, view.question_date_str)
        assert a.segments == b.segments and retrieved_keys(a)


def test_term_counts_equal_counter_of_tokenize():
    from collections import Counter

    from bench.strategies.bm25 import term_counts, tokenize

    text = "The user said: I bought 3 bikes, and the bikes were red! Don't you think it's great? The END the"
    for stop in (True, False):
        a, b = term_counts(text, stop), Counter(tokenize(text, stop))
        assert a == b and list(a) == list(b)  # same counts, same order (the index's histogram order)


async def test_a_retrieved_round_tokenises_only_its_messages_edges_again(monkeypatch):
    """rag counts each message whole and builds a retrieved document's ids from its messages' ids
    (TokenCounter.encode_affixed), handed to the renderer: showing a round tokenises again only each message's
    first word with its role and its last word with the newline, and the prompt's tokens are tiktoken's (issue 30)."""
    from bench.render import prompt_units
    from om_core.tokens import default_counter

    counter = default_counter()

    spy = EncodeSpy(counter._enc)
    monkeypatch.setattr(counter, "_enc", spy)
    steps = [f"Step {k}: feed the qv{k}fish at dawn" for k in range(6)]
    messages = ["How do I keep qv0fish?\nThey are new.", "\n".join(steps), "Remind me about qv3fish"]
    view = make_view([[("user", messages[0]), ("assistant", messages[1])], [("user", messages[2])]])
    s = make_strategy("rag", {"recent_turns": 0}, make_ctx())
    results = [await s.add_turn(t) for t in build_timeline(view)]
    prompt = results[-1].prompt
    assert any(seg.key.startswith("rag:") and "qv5fish" in seg.text for seg in prompt.segments)
    n = sum(len(u.ids) for u in prompt_units(prompt))
    assert n == sum(len(spy.enc.encode(seg.text)) for seg in prompt.segments) + sum(
        len(u.ids) for u in prompt_units(prompt) if u.block == -1)
    assert [t for t in spy.texts if "fish" in t] == messages  # each message once, whole
    for edge in ("user: How", " new.\n", "assistant: Step", " dawn\n"):
        assert edge in spy.texts


async def test_retrieved_documents_ids_equal_tiktoken_on_real_sessions():
    """Every round and session document of a real S question: the ids built from its messages' ids are
    tiktoken's ids of the document (issue 30)."""
    from tests.helpers.strategies import s_dataset

    inst = s_dataset().instances[1]
    for granularity in ("round", "session"):
        s = make_strategy("rag", {"granularity": granularity}, make_ctx())
        for t in build_timeline(inst.view()):
            await s.add_turn(t)
        await s.question_prompt(inst.question, inst.question_date, inst.question_date_str)
        enc = s.ctx.counter._enc
        assert len(s.docs) > 10
        for i, doc in enumerate(s.docs):
            assert s._doc_ids(i) == tuple(enc.encode(doc, disallowed_special=())), i
