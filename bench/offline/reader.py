"""Offline reader (Actor): answers a question by lexical retrieval over its own prompt.

Finds the question (the last `Question:` line of the last user message, else that message), scores every
line/sentence of the prompt with BM25 against it and answers with the best one to three snippets. When
nothing overlaps it says the information is not in the history. Deterministic; counting and reasoning
questions are often wrong, as expected of a dry-run engine that is not an LLM.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

from om_core.formats import observation_text

from bench.offline.text import content_words, sentences, truncate_words

NOT_FOUND = "The information is not mentioned in the available history, so I don't know."
_QUESTION_LINE = re.compile(r"^\s*Question:\s*(.+)$", re.M)
_JSON_TURN = re.compile(r'\[?\{"role": "(\w+)", "content": "')
_JSON_END = re.compile(r'"\}(?:, |\])')
K1, B = 1.2, 0.75


def text_of(message: dict[str, Any]) -> str:
    c = message.get("content")
    if isinstance(c, list):
        return "\n".join(str(p.get("text", "")) for p in c if isinstance(p, dict))
    return str(c or "")


def find_question(messages: list[dict[str, Any]]) -> str:
    last_user = next((text_of(m) for m in reversed(messages) if m.get("role") == "user"), "")
    found = _QUESTION_LINE.findall(last_user)
    if found:
        return str(found[-1]).strip()
    paras = [p.strip() for p in last_user.split("\n\n") if p.strip()]
    if not paras:
        return ""
    return last_user.strip() if len(last_user.split()) <= 80 else paras[-1]


def _units(messages: list[dict[str, Any]], question: str) -> list[str]:
    units: list[str] = []
    for m in messages:
        text = text_of(m).replace("\\n", "\n").replace('\\"', '"')
        text = _JSON_END.sub("\n", _JSON_TURN.sub(lambda g: f"\n{g.group(1)}: ", text))
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith("Question:") or line == question:
                continue
            units.extend(sentences(line) if len(line.split()) > 40 else [line])
    return units


def bm25_rank(query: list[str], docs: list[list[str]]) -> list[float]:
    n = len(docs)
    if not n or not query:
        return [0.0] * n
    avg = sum(len(d) for d in docs) / n or 1.0
    df: Counter[str] = Counter()
    for d in docs:
        df.update(set(d))
    scores = []
    q = set(query)
    for d in docs:
        tf = Counter(d)
        s = 0.0
        for w in q:
            f = tf.get(w, 0)
            if f:
                idf = math.log((n - df[w] + 0.5) / (df[w] + 0.5) + 1.0)
                s += idf * f * (K1 + 1) / (f + K1 * (1 - B + B * len(d) / avg))
        scores.append(s)
    return scores


def answer(messages: list[dict[str, Any]], max_snippets: int = 3) -> str:
    question = find_question(messages)
    qwords = content_words(question)
    units = _units(messages, question)
    scores = bm25_rank(qwords, [content_words(u) for u in units])
    ranked = sorted(range(len(units)), key=lambda i: (-scores[i], i))
    if not ranked or scores[ranked[0]] <= 0:
        return NOT_FOUND
    top = scores[ranked[0]]
    picked: list[str] = []
    for i in ranked:
        if len(picked) >= max_snippets or scores[i] < 0.6 * top:
            break
        snippet = truncate_words(observation_text(units[i]), 40)
        if snippet and snippet not in picked:
            picked.append(snippet)
    return " ".join(s if s.endswith((".", "!", "?", "…")) else s + "." for s in picked)
