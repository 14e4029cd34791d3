"""Hybrid search over a meeting's transcript: BM25 and dense vectors, fused by reciprocal rank.

The index is derived from the log and kept in step with it: before every search it reads the rows the log
gained since it last looked (by chain position), so a segment is searchable as soon as it is appended,
without a rebuild. Segment vectors are cached in the database (`segment_vectors`, derived, rebuildable),
so a restart does not re-embed a day of meetings.
"""

from __future__ import annotations

import logging
import threading
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..log import DEFAULT_TENANT, TranscriptLog
from ..records import Segment
from .bm25 import BM25Index
from .dense import DenseIndex
from .embedder_routes import EmbedderRoutes, embedder_routes, segment_language
from .errors import SearchError
from .fusion import Ranked, adaptive_weights, coverage, fuse, with_neighbours
from .query_adapters import QueryAdapters
from .search_types import RRF_K, Hit, SearchFilters, SearchMode, SearchOptions, embedded_text, vector_key
from .timing import span
from .tokenize import MeetingTokenizer

if TYPE_CHECKING:
    from .embedders import Embedder

# The routes and the search types moved to modules of their own; callers that import them from here keep
# working.
__all__ = [
    "RRF_K", "EmbedderRoutes", "Hit", "MeetingIndex", "Progress", "SearchFilters", "SearchMode", "SearchOptions",
    "TranscriptSearch", "embedded_text", "embedder_routes", "segment_language", "vector_key",
]

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]


@dataclass
class MeetingIndex:
    """The derived indexes of one meeting, in document order (= the log's chain order)."""

    bm25: BM25Index
    dense: dict[str, DenseIndex] = field(default_factory=dict)
    models: list[str | None] = field(default_factory=list)
    segment_ids: list[str] = field(default_factory=list)
    positions: dict[str, int] = field(default_factory=dict)
    starts: array = field(default_factory=lambda: array("d"))
    ends: array = field(default_factory=lambda: array("d"))
    speakers: list[str | None] = field(default_factory=list)
    superseded: set[str] = field(default_factory=set)
    live: bytearray = field(default_factory=bytearray)  # 1 per document still current, 0 once corrected
    last_pos: int = -1
    lock: threading.RLock = field(default_factory=threading.RLock)
    catching_up: threading.Lock = field(default_factory=threading.Lock)  # held while new rows are embedded
    appending: threading.Lock = field(default_factory=threading.Lock)  # held while new rows join the BM25 index
    unembedded: list[tuple[int, Segment]] = field(default_factory=list)  # documents in BM25, not yet in dense

    def __len__(self) -> int:
        return len(self.segment_ids)


class TranscriptSearch:
    """Keeps every meeting's BM25 and dense index in step with the log and answers searches.

    Args:
        log: the transcript log (the truth).
        embedder: the dense model (or models by language), or None for BM25 alone.
        tokenizer: the BM25 tokenizer.
        options: fusion settings.
        max_meetings: meeting indexes kept in memory, the least recently used dropped first (None: all; a
            dropped one is rebuilt from the log and the stored vectors when next asked for). A `meetmem worker`
            sees every meeting in turn and bounds it.
    """

    def __init__(
        self,
        log: TranscriptLog,
        embedder: Embedder | EmbedderRoutes | None = None,
        *,
        tokenizer: MeetingTokenizer | None = None,
        options: SearchOptions | None = None,
        max_meetings: int | None = None,
    ) -> None:
        self.log = log
        if embedder is None or isinstance(embedder, EmbedderRoutes):
            self.routes = embedder
        else:
            self.routes = EmbedderRoutes(embedder)
        self.tokenizer = tokenizer or MeetingTokenizer()
        self.options = options or SearchOptions()
        self._meetings: dict[tuple[str, str], MeetingIndex] = {}  # least recently used first
        self.max_meetings = max_meetings
        # Set by a server whose background indexer embeds new rows: searches then only add them to BM25.
        self.background_embedding = False
        self._lock = threading.Lock()
        self.query_adapters = QueryAdapters(speaker=self.options.embed_speaker) if self.options.query_adapter else None

    @property
    def embedder(self) -> Embedder | None:
        """The default dense model (None when searching with BM25 alone)."""
        return self.routes.default if self.routes is not None else None

    # -- the vector cache (derived) ---------------------------------------------------------------------
    @property
    def _caches_vectors(self) -> bool:
        # The vector cache is a table beside the SQLite log; on PostgreSQL vectors are recomputed for now.
        return self.log.dialect.backend == "sqlite"

    def vectors_for(
        self,
        embedder: Embedder,
        segments: Sequence[Segment],
        progress: Progress | None = None,
    ) -> np.ndarray:
        """The embedder's vectors of `segments`, in order: from the vector cache where it holds them, else
        embedded now (and cached)."""
        name, dim = vector_key(embedder.name, speaker=self.options.embed_speaker), embedder.dim
        ids = [s.segment_id for s in segments]
        row_of = {sid: i for i, sid in enumerate(ids)}
        # One preallocated array, not a dict of rows and a stack: at 100k segments that is 150 MB less.
        out = np.empty((len(ids), dim), dtype=np.float32)
        filled = np.zeros(len(ids), dtype=bool)
        for i in range(0, len(ids) if self._caches_vectors else 0, 500):
            chunk = ids[i : i + 500]
            marks = ",".join("?" * len(chunk))
            rows = self.log.read(
                f"SELECT segment_id, vector FROM segment_vectors WHERE model = ? AND segment_id IN ({marks})",
                [name, *chunk],
            )
            for sid, blob in rows:
                if len(blob) == 4 * dim:
                    out[row_of[sid]] = np.frombuffer(blob, dtype=np.float32)
                    filled[row_of[sid]] = True
        missing = [s for s, ok in zip(segments, filled, strict=True) if not ok]
        if missing:
            batch = 256
            for i in range(0, len(missing), batch):
                part = missing[i : i + batch]
                texts = [embedded_text(s, speaker=self.options.embed_speaker) for s in part]
                vecs = np.asarray(embedder.encode(texts), dtype=np.float32)
                if self._caches_vectors:
                    self._cache(name, part, vecs)
                for s, v in zip(part, vecs, strict=True):
                    out[row_of[s.segment_id]] = v
                if progress is not None:
                    progress(min(i + batch, len(missing)), len(missing))
        return out

    def _cache(self, name: str, part: Sequence[Segment], vecs: np.ndarray) -> None:
        with self.log.transaction():
            # Only for rows still in the log: a meeting deleted while it was being embedded
            # leaves no vectors behind.
            self.log.db.conn.executemany(
                "INSERT OR REPLACE INTO segment_vectors (segment_id, model, vector) SELECT ?, ?, ? "
                "WHERE EXISTS (SELECT 1 FROM segments WHERE segment_id = ?)",
                [(s.segment_id, name, v.tobytes(), s.segment_id) for s, v in zip(part, vecs, strict=True)],
            )

    def _new_meeting_index(self) -> MeetingIndex:
        return MeetingIndex(bm25=BM25Index())

    def meeting_index(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT,
                      progress: Progress | None = None, embed: bool | None = None) -> MeetingIndex:
        """The meeting's index, caught up with every row the log holds.

        A new row joins the BM25 index at once (cheap: one thread at a time, a few rows), so an appended
        segment is always found. Its embedding is the slow part: with `embed` (the default unless
        `background_embedding` is set) the caller embeds every row not embedded yet, one thread at a time
        (another that needs them waits for it); without it, the rows stay lexical-only until a caller with
        `embed` (the server's background indexer) embeds them, so a question never pays for the embedding
        of segments that arrived since the last index pass. The embedding happens outside the index's lock.
        """
        key = (tenant, meeting_id)
        with self._lock:
            index = self._meetings.pop(key, None)
            if index is None:
                self.log.require_meeting(meeting_id, tenant=tenant)
                index = self._new_meeting_index()
            self._meetings[key] = index  # now the most recently used
            while self.max_meetings is not None and len(self._meetings) > self.max_meetings:
                del self._meetings[next(iter(self._meetings))]
        if self.log.last_chain_pos(meeting_id, tenant=tenant) > index.last_pos:
            with span("catchup_lexical"), index.appending:
                new = list(self.log.chain(meeting_id, tenant=tenant, after_pos=index.last_pos))
                if new:
                    with index.lock:
                        self._add_lexical_locked(index, new)
        if not (self.background_embedding is False if embed is None else embed) or not index.unembedded:
            return index
        with span("catchup_wait"):
            index.catching_up.acquire()
        try:
            with index.lock:
                todo = list(index.unembedded)
            if todo:
                with span("catchup_embed"):
                    prepared = self._prepare([seg for _, seg in todo], progress, self.routes)
                with index.lock:
                    self._add_dense_locked(index, [doc for doc, _ in todo], prepared)
                    del index.unembedded[: len(todo)]  # rows are only ever appended after these
        finally:
            index.catching_up.release()
        return index

    def _prepare(self, segments: Sequence[Segment], progress: Progress | None,
                 routes: EmbedderRoutes | None) -> tuple[dict[str, list[int]], dict[str, np.ndarray], dict[str, int]]:
        """Embed new rows (the slow part, done without the index's lock): rows per model, vectors, dims."""
        groups: dict[str, list[int]] = {}
        if routes is not None:
            for i, seg in enumerate(segments):
                groups.setdefault(routes.for_segment(seg.text, seg.lang).name, []).append(i)
        models = routes.by_name() if routes is not None else {}
        vectors = {
            name: self.vectors_for(models[name], [segments[i] for i in members], progress)
            for name, members in groups.items()
        }
        return groups, vectors, {name: models[name].dim for name in groups}

    def _add_lexical_locked(self, index: MeetingIndex, segments: Sequence[Segment]) -> None:
        """New rows into BM25 and the document tables; listed for embedding when there is a model."""
        for seg in segments:
            doc = len(index.segment_ids)
            index.bm25.add(self.tokenizer.tokens(seg.text))
            index.positions[seg.segment_id] = doc
            index.live.append(1)
            index.segment_ids.append(seg.segment_id)
            index.starts.append(seg.start)
            index.ends.append(seg.end)
            index.speakers.append(seg.speaker)
            index.models.append(None)
            if seg.supersedes is not None:
                index.superseded.add(seg.supersedes)
                old = index.positions.get(seg.supersedes)
                if old is not None:
                    index.live[old] = 0
            index.last_pos = seg.chain_pos
            if self.routes is not None:
                index.unembedded.append((doc, seg))

    def _add_dense_locked(self, index: MeetingIndex, docs: Sequence[int],
                          prepared: tuple[dict[str, list[int]], dict[str, np.ndarray], dict[str, int]]) -> None:
        """The vectors of documents already in BM25 (`docs[i]` is the document of the i-th prepared row)."""
        groups, vectors, dims = prepared
        for name, members in groups.items():
            if name not in index.dense:
                index.dense[name] = DenseIndex(dims[name])
            index.dense[name].add(vectors[name], [docs[i] for i in members])
            for i in members:
                index.models[docs[i]] = name

    def pending_vectors(self, *, tenant: str | None = None) -> int:
        """Rows of this process's meeting indexes not embedded yet (found by their words alone until they are);
        of `tenant`'s meetings alone when given."""
        with self._lock:
            indexes = [index for key, index in self._meetings.items() if tenant is None or key[0] == tenant]
        return sum(len(index.unembedded) for index in indexes)

    def forget(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> None:
        """Drop the meeting's in-memory index (after the meeting was deleted)."""
        with self._lock:
            self._meetings.pop((tenant, meeting_id), None)

    def rebuild(self, *, progress: Progress | None = None) -> int:
        """Forget every derived index and vector and rebuild them from the log; returns segments indexed."""
        with self._lock:
            self._meetings.clear()
        if self._caches_vectors:
            with self.log.transaction():
                self.log.db.execute("DELETE FROM segment_vectors")
        total = 0
        for tenant, meeting_id in self.log.meetings():
            total += len(self.meeting_index(meeting_id, tenant=tenant, progress=progress))
        return total

    def encode_query(self, meeting_id: str, query: str, *, tenant: str = DEFAULT_TENANT) -> dict[str, np.ndarray]:
        """The query embedded by every model the meeting's segments were embedded with."""
        if self.routes is None:
            return {}
        index = self.meeting_index(meeting_id, tenant=tenant)
        models = self.routes.by_name()
        names = [name for name in index.dense if name in models] or [self.routes.default.name]
        vectors = {name: models[name].encode_query(query) for name in names}
        if self.query_adapters is not None:
            vectors = {name: self.query_adapters.apply(models[name].name, v) for name, v in vectors.items()}
        return vectors

    def similarities(self, meeting_id: str, query_vectors: Mapping[str, np.ndarray], segment_ids: Sequence[str], *,
                     tenant: str = DEFAULT_TENANT) -> dict[str, float]:
        """Cosine similarity of the query to stored segments of a meeting, each in its own model's space."""
        index = self.meeting_index(meeting_id, tenant=tenant)
        out: dict[str, float] = {}
        with index.lock:
            for sid in segment_ids:
                doc = index.positions.get(sid)
                name = index.models[doc] if doc is not None else None
                if name is None or name not in index.dense or name not in query_vectors:
                    continue
                vector = index.dense[name].vector(doc)
                out[sid] = float(vector @ np.asarray(query_vectors[name], dtype=np.float32))
        return out

    def segment_vectors(self, meeting_id: str, segment_ids: Sequence[str], *,
                        tenant: str = DEFAULT_TENANT) -> list[np.ndarray | None]:
        """The stored embeddings of a meeting's segments, all in one model's space (the model most of its
        segments were embedded with); None for a segment embedded by another model or not at all."""
        index = self.meeting_index(meeting_id, tenant=tenant)
        with index.lock:
            counts: dict[str, int] = {}
            for name in index.models:
                if name is not None:
                    counts[name] = counts.get(name, 0) + 1
            if not counts:
                return [None] * len(segment_ids)
            model = max(sorted(counts), key=lambda name: counts[name])
            out: list[np.ndarray | None] = []
            for sid in segment_ids:
                doc = index.positions.get(sid)
                if doc is None or index.models[doc] != model:
                    out.append(None)
                else:
                    out.append(np.asarray(index.dense[model].vector(doc), dtype=np.float32))
            return out

    # -- search -----------------------------------------------------------------------------------------
    def mask(self, index: MeetingIndex, filters: SearchFilters | None) -> np.ndarray | None:
        """Which of the index's documents a search may return (superseded ones and those outside `filters`
        are off); None when all may."""
        n = len(index)
        mask: np.ndarray | None = None
        if index.superseded:
            mask = np.frombuffer(bytes(index.live), dtype=np.uint8).astype(bool)
        if filters is None:
            return mask
        if filters.start is not None or filters.end is not None or filters.speaker is not None:
            keep = np.ones(n, dtype=bool) if mask is None else mask
            if filters.start is not None:
                keep &= np.frombuffer(index.ends, dtype=np.float64) >= filters.start
            if filters.end is not None:
                keep &= np.frombuffer(index.starts, dtype=np.float64) <= filters.end
            if filters.speaker is not None:
                wanted = filters.speaker.casefold()
                keep &= np.array([(s or "").casefold() == wanted for s in index.speakers], dtype=bool)
            mask = keep
        return mask

    def search(
        self,
        meeting_id: str,
        query: str,
        *,
        tenant: str = DEFAULT_TENANT,
        k: int = 10,
        mode: SearchMode = "hybrid",
        filters: SearchFilters | None = None,
        query_vector: np.ndarray | None = None,
        query_vectors: Mapping[str, np.ndarray] | None = None,
    ) -> list[Hit]:
        """The `k` best segments of a meeting for `query`, best first.

        Args:
            mode: `hybrid` (BM25 and dense rankings fused, see `SearchOptions`), `bm25` or `dense`.
            query_vector: a precomputed embedding of the query by the default model.
            query_vectors: precomputed embeddings by model name (`encode_query`); saves encoding twice.

        Raises:
            MeetingNotFound: the tenant has no such meeting.
            SearchError: `dense` was asked for without an embedder.
        """
        if k <= 0:
            raise SearchError("k must be at least 1")
        if mode not in ("hybrid", "bm25", "dense"):
            raise SearchError(f"unknown search mode {mode!r}; use hybrid, bm25 or dense")
        if mode == "dense" and self.routes is None:
            raise SearchError("dense search needs an embedding model; none is configured")
        # A dense-only search has nothing else to find a new row by: it embeds what is not embedded yet.
        index = self.meeting_index(meeting_id, tenant=tenant, embed=True if mode == "dense" else None)
        use_dense = mode in ("hybrid", "dense") and self.routes is not None
        vectors: dict[str, np.ndarray] = {}
        if use_dense:
            if query_vectors is not None:
                vectors = dict(query_vectors)
            elif query_vector is not None and self.routes is not None:
                vectors = {self.routes.default.name: query_vector}
            missing = [name for name in index.dense if name not in vectors]
            if missing or not vectors:
                vectors.update(self.encode_query(meeting_id, query, tenant=tenant))
        pool = max(self.options.pool, k)
        terms = self.tokenizer.tokens(query)
        with span("rank"), index.lock:
            mask = self.mask(index, filters)
            bm25_hits = index.bm25.top(terms, pool, mask) if mode != "dense" else []
            dense_rankings = [
                dense.top(vectors[name], pool, mask) for name, dense in index.dense.items() if name in vectors
            ] if use_dense else []
            ids = index.segment_ids
            if mode == "bm25" or not use_dense:
                ranked = [(d, s, r, None) for r, (d, s) in enumerate(bm25_hits[:k], start=1)]
            elif mode == "dense" and len(dense_rankings) == 1:
                ranked = [(d, s, None, r) for r, (d, s) in enumerate(dense_rankings[0][:k], start=1)]
            elif mode == "dense":
                ranked = self._fuse([], dense_rankings)[:k]
            else:
                weights = self.fusion_weights(index, terms, bm25_hits)
                ranked = self._fuse(bm25_hits, dense_rankings, weights)
                if self.options.neighbour_weight > 0:
                    ranked = self._with_neighbours(index, ranked, mask)
                ranked = ranked[:k]
            chosen = [(ids[d], s, br, dr) for d, s, br, dr in ranked]
        stored = self.log.get(sid for sid, *_ in chosen)
        return [Hit(stored[sid], score, br, dr) for sid, score, br, dr in chosen]

    def fusion_weights(self, index: MeetingIndex, terms: Sequence[str],
                       bm25_hits: Sequence[tuple[int, float]]) -> tuple[float, float]:
        """The (BM25, dense) weights of one query's fusion: fixed, or adapted to its `coverage`."""
        opts = self.options
        if opts.adaptive_dense_weight is None:
            return opts.bm25_weight, opts.dense_weight
        return adaptive_weights(opts.adaptive_dense_weight,
                                coverage(index.bm25, terms, [d for d, _ in bm25_hits[:3]]))

    def _with_neighbours(self, index: MeetingIndex, ranked: list[Ranked], mask: np.ndarray | None) -> list[Ranked]:
        return with_neighbours(ranked, len(index), self.options.neighbour_weight, mask)

    def _fuse(self, bm25_hits: list[tuple[int, float]], dense_rankings: list[list[tuple[int, float]]],
              weights: tuple[float, float] | None = None) -> list[Ranked]:
        opts = self.options
        return fuse(bm25_hits, dense_rankings, weights or (opts.bm25_weight, opts.dense_weight),
                    convex=opts.fusion == "convex", rrf_k=opts.rrf_k)
