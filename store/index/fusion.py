"""Hybrid fusion (pure): BM25 and dense rankings into one, a weight adapted to the query, neighbour scores.

Fed rankings of document numbers, returns rankings; no index or model is touched here, so each rule can be
read and tested on its own. `TranscriptSearch` (search.py) supplies the rankings and the options.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .bm25 import BM25Index

#: One fused candidate: (document, fused score, its BM25 rank, its best dense rank); a rank is None where
#: that ranking did not hold the document.
Ranked = tuple[int, float, int | None, int | None]


def fuse(bm25_hits: Sequence[tuple[int, float]], dense_rankings: Sequence[Sequence[tuple[int, float]]],
         weights: tuple[float, float], *, convex: bool, rrf_k: int) -> list[Ranked]:
    """Fuse the BM25 ranking with one dense ranking per model, best first.

    Args:
        weights: the (BM25, dense) weights.
        convex: a weighted sum of each ranking's scores scaled to [0, 1]; else reciprocal rank fusion.
        rrf_k: the reciprocal rank fusion constant.
    """
    bm25_weight, dense_weight = weights
    fused: dict[int, list] = {}

    def parts(hits: Sequence[tuple[int, float]], *, lexical: bool) -> list[float]:
        if convex:
            return _scaled([s for _, s in hits], floor_zero=lexical)
        return [1.0 / (rrf_k + rank) for rank in range(1, len(hits) + 1)]

    for rank, ((doc, _), part) in enumerate(zip(bm25_hits, parts(bm25_hits, lexical=True), strict=True), 1):
        entry = fused.setdefault(doc, [0.0, None, None])
        entry[0] += bm25_weight * part
        entry[1] = rank
    for dense_hits in dense_rankings:
        for rank, ((doc, _), part) in enumerate(zip(dense_hits, parts(dense_hits, lexical=False), strict=True), 1):
            entry = fused.setdefault(doc, [0.0, None, None])
            entry[0] += dense_weight * part
            entry[2] = rank if entry[2] is None else min(entry[2], rank)
    order = sorted(fused.items(), key=lambda item: (-item[1][0], item[0]))
    return [(doc, v[0], v[1], v[2]) for doc, v in order]


def adaptive_weights(dense_range: tuple[float, float], query_coverage: float) -> tuple[float, float]:
    """The (BM25, dense) weights for a query: dense from `low` (the query repeats the meeting's words) to
    `high` (it names things in other words), by its `coverage`."""
    low, high = dense_range
    dense = low + (high - low) * (1.0 - query_coverage)
    return 1.0 - dense, dense


def with_neighbours(ranked: Sequence[Ranked], n: int, share: float, mask: np.ndarray | None) -> list[Ranked]:
    """Each candidate and each candidate's neighbour scored by its own fused score plus `share` times its
    best neighbour's; best first. `n` is the number of documents, `mask` the ones a filter allows."""
    fused = {doc: score for doc, score, _b, _d in ranked}
    ranks = {doc: (b, d) for doc, _s, b, d in ranked}
    docs = {d for doc in fused for d in (doc - 1, doc, doc + 1) if 0 <= d < n and (mask is None or mask[d])}
    scored = [(doc, fused.get(doc, 0.0) + share * max(fused.get(doc - 1, 0.0), fused.get(doc + 1, 0.0)))
              for doc in docs]
    scored.sort(key=lambda item: (-item[1], item[0]))
    return [(doc, score, *ranks.get(doc, (None, None))) for doc, score in scored]


def coverage(bm25: BM25Index, terms: Sequence[str], docs: Sequence[int]) -> float:
    """How much of a query the best of `docs` holds: the idf-weighted share of the query's distinct terms
    it contains, a term the meeting never uses weighing as a term said once (`BM25Index.unseen_idf`).

    Near 1: the question repeats the meeting's own words; near 0: it names things in other words.
    """
    distinct = set(terms)
    if not distinct or not docs:
        return 0.0
    unseen = bm25.unseen_idf()
    weights = {t: (bm25.idf(t) if bm25.holds_term(t) else unseen) for t in distinct}
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    return max(sum(w for t, w in weights.items() if bm25.holds(t, doc)) for doc in docs) / total


def _scaled(scores: list[float], *, floor_zero: bool) -> list[float]:
    """Scores scaled to [0, 1]: divided by the best (BM25, whose zero is meaningful) or min-max (cosines)."""
    if not scores:
        return []
    top = max(scores)
    low = 0.0 if floor_zero else min(scores)
    span = top - low
    if span <= 0:
        return [1.0 for _ in scores]
    return [(s - low) / span for s in scores]
