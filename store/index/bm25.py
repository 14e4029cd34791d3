"""An incremental BM25 index with rank-bm25's exact Okapi scoring, fast enough for 100k segments.

rank-bm25 (`BM25Okapi`) is the reference: its scores are what this index returns, term for term
(a test compares them). rank-bm25 itself scans every document in Python for every query term and must be
rebuilt to add a document, which at 100k segments costs tens of milliseconds a query; this index keeps
postings lists and scores only the documents that contain a query term, and takes new documents one at
a time, so a segment is searchable as soon as it is appended.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Sequence

import numpy as np


class BM25Index:
    """Okapi BM25 over documents added in order (document number = order of `add`).

    Args:
        k1, b, epsilon: rank-bm25's `BM25Okapi` parameters and defaults. `epsilon` floors the idf of terms
            found in more than half of the documents at `epsilon` times the average idf, as rank-bm25 does.
    """

    def __init__(self, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25) -> None:
        self.k1 = k1
        self.b = b
        self.epsilon = epsilon
        self._term_ids: dict[str, int] = {}
        self._docs: list[array] = []  # per term: document numbers (int32)
        self._tfs: list[array] = []  # per term: term frequency in that document (float32)
        self._df = array("i")
        self._doc_len = array("f")
        self._total_len = 0
        self._avg_idf_cache: tuple[int, int, float] | None = None

    def __len__(self) -> int:
        return len(self._doc_len)

    @property
    def vocabulary_size(self) -> int:
        return len(self._term_ids)

    def add(self, tokens: Sequence[str]) -> int:
        """Index one document's terms; returns its document number."""
        doc = len(self._doc_len)
        for term, tf in Counter(tokens).items():
            tid = self._term_ids.get(term)
            if tid is None:
                tid = len(self._docs)
                self._term_ids[term] = tid
                self._docs.append(array("i"))
                self._tfs.append(array("f"))
                self._df.append(0)
            self._docs[tid].append(doc)
            self._tfs[tid].append(tf)
            self._df[tid] += 1
        self._doc_len.append(len(tokens))
        self._total_len += len(tokens)
        return doc

    def _average_idf(self) -> float:
        n = len(self._doc_len)
        cached = self._avg_idf_cache
        if cached is not None and cached[0] == n and cached[1] == len(self._df):
            return cached[2]
        df = np.frombuffer(self._df, dtype=np.int32).astype(np.float64)
        average = float(np.mean(np.log(n - df + 0.5) - np.log(df + 0.5))) if len(df) else 0.0
        self._avg_idf_cache = (n, len(self._df), average)
        return average

    def idf(self, term: str) -> float:
        """rank-bm25's idf: log((N - df + 0.5) / (df + 0.5)), floored for very common terms; 0 if unseen."""
        tid = self._term_ids.get(term)
        if tid is None:
            return 0.0
        n = len(self._doc_len)
        df = self._df[tid]
        value = math.log(n - df + 0.5) - math.log(df + 0.5)
        if value < 0:
            value = self.epsilon * self._average_idf()
        return value

    def unseen_idf(self) -> float:
        """The idf a term would have if one document held it: what a query word absent from the meeting
        weighs when judging how much of a query the best documents cover."""
        n = len(self._doc_len)
        return math.log(n + 0.5) - math.log(1.5) if n else 0.0

    def holds_term(self, term: str) -> bool:
        """True when some document contains `term`."""
        return term in self._term_ids

    def postings(self, term: str) -> int:
        """How many documents contain `term` (the length of its postings list; 0 for an unknown term)."""
        tid = self._term_ids.get(term)
        return 0 if tid is None else len(self._docs[tid])

    def holds(self, term: str, doc: int) -> bool:
        """True when document `doc` contains `term` (postings are in document order: a binary search)."""
        tid = self._term_ids.get(term)
        if tid is None:
            return False
        docs = np.frombuffer(self._docs[tid], dtype=np.int32)
        at = int(np.searchsorted(docs, doc))
        return at < len(docs) and int(docs[at]) == doc

    def scores(self, query: Sequence[str]) -> np.ndarray:
        """The BM25 score of every document for `query` (a repeated query term counts again, as in rank-bm25)."""
        return self._scores(query)[0]

    def _scores(self, query: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Scores of every document, and which documents hold at least one query term."""
        n = len(self._doc_len)
        out = np.zeros(n, dtype=np.float64)
        touched = np.zeros(n, dtype=bool)
        if n == 0:
            return out, touched
        doc_len = np.frombuffer(self._doc_len, dtype=np.float32)
        avgdl = self._total_len / n
        k1, b = self.k1, self.b
        for term in query:
            tid = self._term_ids.get(term)
            if tid is None:
                continue
            weight = self.idf(term)
            docs = np.frombuffer(self._docs[tid], dtype=np.int32)
            tf = np.frombuffer(self._tfs[tid], dtype=np.float32).astype(np.float64)
            norm = k1 * (1 - b + b * doc_len[docs].astype(np.float64) / avgdl)
            # A posting list holds each document once, so plain fancy-index addition is exact here.
            out[docs] += weight * (tf * (k1 + 1) / (tf + norm))
            touched[docs] = True
        return out, touched

    def top(self, query: Sequence[str], k: int, mask: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The `k` best documents holding a query term, best first; `mask` keeps only True documents.

        Candidates are the documents that hold a query term, whatever their score: Okapi's idf is zero or
        negative for a term in half or more of the documents, which in a two-segment meeting is every term.
        """
        scores, touched = self._scores(query)
        if mask is not None:
            touched &= mask[: len(scores)]
        candidates = np.flatnonzero(touched)
        if len(candidates) == 0:
            return []
        if len(candidates) > k:
            part = np.argpartition(-scores[candidates], k - 1)[:k]
            candidates = candidates[part]
        # Ties go to the earlier document, so rankings are stable across rebuilds.
        order = sorted(candidates.tolist(), key=lambda d: (-scores[d], d))
        return [(d, float(scores[d])) for d in order]
