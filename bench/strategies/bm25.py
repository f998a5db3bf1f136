"""Okapi BM25 over an incremental inverted index.

Scores equal rank_bm25's BM25Okapi (same idf, same epsilon floor for negative idf, same k1/b), but adding a
document costs O(its terms) and a query O(postings of its terms), instead of rank_bm25's full rebuild per
change and per-query scan of every document (measured: see bench/perf.py's report).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from itertools import compress
from typing import Iterable, Mapping

_WORD = re.compile(r"\w+")

# Function words that carry no topic; dropping them keeps postings short (a common analyzer choice).
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having
    he her here hers herself him himself his how i if in into is it its itself just me more most my myself no
    nor not now of off on once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too under until up very
    was we were what when where which while who whom why will with would you your yours yourself yourselves
    s t ll re ve d m don""".split()
)


def tokenize(text: str, stopwords: bool = True) -> list[str]:
    words = _WORD.findall(text.lower())
    return [w for w in words if w not in STOPWORDS] if stopwords else words


def term_counts(text: str, stopwords: bool = True) -> Counter[str]:
    """Counter(tokenize(text, stopwords)) (same counts, same key order), without the filtered word list:
    the stopwords are deleted from the counts of every word."""
    counts = Counter(_WORD.findall(text.lower()))
    if stopwords:
        for w in STOPWORDS.intersection(counts):
            dict.__delitem__(counts, w)  # (Counter.__delitem__ is Python code)
    return counts


class BM25Index:
    """Documents are added (ids 0, 1, ...) and removed one at a time; queries return the best ids with their
    scores. A removal leaves the index scoring exactly as one rebuilt from the remaining documents (in their
    order): the ids of the others do not change."""

    def __init__(self, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25) -> None:
        self.k1, self.b, self.epsilon = k1, b, epsilon
        self.postings: dict[str, dict[int, int]] = {}  # term -> {doc id: term frequency}, in id order
        self.doc_len: list[int] = []  # per id ever added (a removed document keeps its entry)
        self._doc_terms: list[Mapping[str, int] | None] = []  # per id: its counts, None once removed
        self._live = 0
        self._total_len = 0
        # document frequency -> number of terms with it. Its keys are always 1, 2, ... in that order (a new key
        # is only ever the largest frequency + 1), so _floor sums in the same order as after a rebuild.
        self._df_hist: dict[int, int] = {}
        self._norm_key: tuple[int, int, int] | None = None
        self._norm_list: list[float] = []

    def __len__(self) -> int:
        """Documents in the index (removed ones not counted)."""
        return self._live

    def add(self, terms: Iterable[str]) -> int:
        return self.add_counts(Counter(terms))

    def add_counts(self, counts: Mapping[str, int]) -> int:
        """add() from the document's term counts (e.g. term_counts(text)); the index keeps `counts` (until the
        document is removed), so the caller must not change it."""
        doc = len(self.doc_len)
        n = sum(counts.values())
        hist, postings = self._df_hist, self.postings
        new_terms = 0
        dfs: list[int] = []  # document frequencies of the known terms, before this document
        for term, tf in counts.items():
            plist = postings.get(term)
            if plist is None:
                postings[term] = {doc: tf}
                new_terms += 1
            else:
                dfs.append(len(plist))
                plist[doc] = tf
        # each known term moves from df to df + 1; grouped by df (first-seen order, so the histogram's keys
        # are created in the same order as one term at a time: _floor's sum runs in that order)
        for df, c in Counter(dfs).items():
            hist[df] -= c
            hist[df + 1] = hist.get(df + 1, 0) + c
        hist[1] = hist.get(1, 0) + new_terms
        self.doc_len.append(n)
        self._doc_terms.append(counts)
        self._live += 1
        self._total_len += n
        return doc

    def remove(self, doc: int) -> None:
        """Drop document `doc` (a no-op when it was removed already): O(its terms)."""
        counts = self._doc_terms[doc]
        if counts is None:
            return
        hist, postings = self._df_hist, self.postings
        for term in counts:
            plist = postings[term]
            df = len(plist)
            hist[df] -= 1
            if df == 1:
                del postings[term]  # the vocabulary shrinks as a rebuild's would
            else:
                hist[df - 1] += 1  # key df - 1 exists: keys run 1..largest
                del plist[doc]
        self._doc_terms[doc] = None
        self._live -= 1
        self._total_len -= self.doc_len[doc]

    def _idf(self, df: int, n_docs: int) -> float:
        return math.log(n_docs - df + 0.5) - math.log(df + 0.5)

    def _floor(self) -> float:
        """rank_bm25 replaces negative idf by epsilon x the vocabulary's mean idf. The mean comes from the
        document-frequency histogram: a few dozen distinct frequencies instead of every term."""
        n = self._live
        total = sum(c * self._idf(df, n) for df, c in self._df_hist.items() if c)
        return self.epsilon * total / max(1, len(self.postings))

    def _norm(self) -> list[float]:
        """k1 * (1 - b + b * dl / avgdl) per document id; kept until a document comes or goes (several queries
        often run between two changes)."""
        key = (len(self.doc_len), self._live, self._total_len)
        if self._norm_key != key:
            k1, b = self.k1, self.b
            c, slope = k1 * (1 - b), k1 * b * self._live / self._total_len
            self._norm_list = [c + slope * dl for dl in self.doc_len]
            self._norm_key = key
        return self._norm_list

    def scores(self, query: Iterable[str]) -> dict[int, float]:
        """BM25 score of every document that shares a term with the query (others score 0)."""
        return self.scores_counts(Counter(query))

    def scores_counts(self, query: Mapping[str, int]) -> dict[int, float]:
        """scores() from the query's term counts."""
        n = self._live
        if n == 0:
            return {}
        k1 = self.k1
        out: dict[int, float] = {}
        floor: float | None = None
        norm: list[float] | None = None
        get = out.get
        for term, qtf in query.items():  # a repeated query term counts once per occurrence
            plist = self.postings.get(term)
            if not plist:
                continue
            if norm is None:
                norm = self._norm()
            idf = self._idf(len(plist), n)
            if idf < 0:
                floor = self._floor() if floor is None else floor
                idf = floor
            w = idf * qtf * (k1 + 1)
            for doc, tf in plist.items():
                out[doc] = get(doc, 0.0) + w * tf / (tf + norm[doc])
        return out

    def top(self, query: Iterable[str], k: int, exclude: set[int] | frozenset[int] = frozenset()) -> list[int]:
        """Up to k documents sharing a term with the query, best first (ties: the older document first).

        Scores can be negative in small corpora (rank_bm25's epsilon floor is then negative); a matching
        document still ranks, but documents sharing no term never do."""
        return self.top_counts(Counter(query), k, exclude)

    def top_counts(
        self, query: Mapping[str, int], k: int, exclude: set[int] | frozenset[int] = frozenset()
    ) -> list[int]:
        """top() from the query's term counts."""
        sc = self.scores_counts(query)
        for d in exclude:
            sc.pop(d, None)
        if len(sc) > k:  # only documents scoring at least the k-th best score can rank: found in C
            kth = sorted(sc.values(), reverse=True)[k - 1]
            best = list(compress(sc, map(kth.__le__, sc.values())))
        else:
            best = list(sc)
        best.sort(key=lambda d: (-sc[d], d))  # best first, ties the older first
        return best[:k]
