"""What a search is asked and what it answers, shared by every search backend.

The options and filters a search takes, the hit it returns (with the CONTRACT's JSON shape), and the text
form a segment is embedded in with the key its vectors are cached under. The SQLite `TranscriptSearch` and the
PostgreSQL search both use them, so they live apart from either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..records import Segment

SearchMode = Literal["hybrid", "bm25", "dense"]

#: Reciprocal rank fusion's constant (Cormack, Clarke & Buettcher, SIGIR 2009).
RRF_K = 60


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Restrict a search to a time range (overlap, seconds) and/or one speaker."""

    start: float | None = None
    end: float | None = None
    speaker: str | None = None


@dataclass(frozen=True, slots=True)
class SearchOptions:
    """How hits are found and fused.

    Args:
        pool: how many candidates each ranking contributes to the fusion.
        fusion: `rrf` (reciprocal rank fusion) or `convex` (a weighted sum of each ranking's scores, each
            scaled to [0, 1] over its pool: BM25 by its best score, dense cosines by min-max).
        rrf_k: the reciprocal rank fusion constant.
        bm25_weight, dense_weight: weights of each ranking in the fusion (`dense_weight` is the weight when
            `adaptive_dense_weight` is None).
        adaptive_dense_weight: `(low, high)`: the dense weight of each query, from how much of the query
            the best BM25 hits hold (`coverage`): `low` when one holds every query word (a code, a name, a
            number said as asked: BM25 is right), rising to `high` when none does (the question names the
            subject in other words: only the dense ranking can find it). The BM25 weight is 1 - that.
            None: the fixed `bm25_weight` / `dense_weight`.
        neighbour_weight: each candidate's fused score gains this share of its best neighbour's (the
            segment just before or after it in the meeting): an answer often sits beside the turn that
            matches the question ("Is that a one-off cost?" / "One-off: $4,250."). 0 turns it off.
        embed_speaker: embed a segment as "Speaker: text" (the stored text stays verbatim; only the derived
            vector changes, cached under `vector_key`).
        query_adapter: move a question's vector by the shipped query adapter of its embedder (`meetmem train
            retrieval`, `learned/query_adapter.py`) before the dense search; passages are untouched, so stored
            vectors stay valid. An embedder without a fitting adapter is used as it is.
    """

    pool: int = 50
    # "Speaker: text" embedded: LoCoMo's questions name who said it (docs/BENCHMARKS.md, issue 14).
    embed_speaker: bool = True
    # Convex fusion beat RRF on QMSum (hit@1 and P@5) and on the Chinese set: docs/BENCHMARKS.md.
    fusion: Literal["rrf", "convex"] = "convex"
    rrf_k: int = RRF_K
    bm25_weight: float = 0.3
    dense_weight: float = 0.7
    # Chosen on the tune halves of QMSum, LoCoMo and the Chinese set (docs/BENCHMARKS.md, issue 14): a fixed
    # 0.7 suits QMSum's topic questions and paraphrases but loses LoCoMo's chat questions to BM25 alone.
    adaptive_dense_weight: tuple[float, float] | None = (0.2, 0.8)
    neighbour_weight: float = 0.2
    query_adapter: bool = True


def embedded_text(segment: Segment, *, speaker: bool = True) -> str:
    """What the dense model embeds for a segment: its text, after "Speaker: " when `speaker` and known.

    A question often names who said it ("What did Caroline research?"); a turn's own words rarely do.
    """
    if speaker and segment.speaker:
        return f"{segment.speaker}: {segment.text}"
    return segment.text


def vector_key(model: str, *, speaker: bool = True) -> str:
    """The key of a model's vectors in the `segment_vectors` cache: the model name, marked when the embedded
    text carries the speaker, so vectors of another text form are never reused for this one."""
    return f"{model}+speaker" if speaker else model


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result: the stored segment, its fused score and its rank in each ranking (1-based)."""

    segment: Segment
    score: float
    bm25_rank: int | None = None
    dense_rank: int | None = None

    def public(self) -> dict:
        """The CONTRACT's `search --json` shape."""
        s = self.segment
        return {
            "segment_id": s.segment_id,
            "start": s.start,
            "end": s.end,
            "speaker": s.speaker,
            "text": s.text,
            "score": round(self.score, 6),
        }
