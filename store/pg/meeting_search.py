"""The service's meeting search on PostgreSQL: `TranscriptSearch` whose vectors live in pgvector.

Each API process keeps, per meeting, the in-process index SQLite's service keeps (BM25 over the log's text,
a flat index of the vectors, the document tables the answerer reads), so questions run through the same code
and rank exactly as on SQLite: the in-process BM25 beat Postgres' `ts_rank` on QMSum and LoCoMo
(docs/BENCHMARKS.md, issue 20). What differs is where the vectors come from: `segment_search.embedding`
(`store/pg/search.py`), written once by whoever embedded the segment first (a `meetmem worker` job, or an API
process), and read by every other process. A second API process answering about a meeting embeds none of
its segments, only the question.

A row still lacking a vector stays lexical-only in this process's index until either a later look finds the
vector stored (`adopt_interval`), or a caller asks to embed (`embed=True`: the service's own indexer, or its
fallback when no worker has come), which embeds only what is still missing and stores it for the others.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..index.embedder_routes import EmbedderRoutes
from ..index.search import MeetingIndex, Progress, TranscriptSearch
from ..index.search_types import SearchOptions, embedded_text, vector_key
from ..log import DEFAULT_TENANT
from ..records import Segment
from .search import PgSearch, connect_pool

if TYPE_CHECKING:
    from ..index.embedders import Embedder
    from ..index.tokenize import MeetingTokenizer
    from .log import PgTranscriptLog

log = logging.getLogger(__name__)

#: Segments embedded per call of the model (and stored per transaction).
EMBED_BATCH = 256


@dataclass
class _PgMeetingIndex(MeetingIndex):
    adopt_after: float = 0.0  # monotonic time of the next look for vectors stored by another process


class PgTranscriptSearch(TranscriptSearch):
    """`TranscriptSearch` over a `PgTranscriptLog`, its segment vectors read from and written to pgvector.

    Args:
        log: the transcript log on PostgreSQL.
        embedder: the dense model (or models by language), or None for BM25 alone.
        pool: a connection pool (`search.connect_pool`); one of its own on the log's URL when omitted.
        adopt_interval: seconds between looks for vectors another process stored, per meeting, while some of
            its rows lack one here (a question then finds them without embedding anything).
        max_meetings: meeting indexes kept in memory (see `TranscriptSearch`).
    """

    def __init__(self, log: PgTranscriptLog, embedder: Embedder | EmbedderRoutes | None = None, *,
                 pool: Any = None, tokenizer: MeetingTokenizer | None = None,
                 options: SearchOptions | None = None, adopt_interval: float = 0.5,
                 max_meetings: int | None = None) -> None:
        super().__init__(log, embedder, tokenizer=tokenizer, options=options,  # type: ignore[arg-type]
                         max_meetings=max_meetings)
        self._own_pool = pool is None
        self.pool = pool if pool is not None else connect_pool(log.url, max_size=4)
        # The derived rows' writer and the tenant-wide ranking (HNSW) across meetings.
        self.rows = PgSearch(self.pool, self.routes, tokenizer=self.tokenizer,
                             options=self.options, dense="hnsw")
        self.adopt_interval = adopt_interval
        self._counts = threading.Lock()
        #: Segments this process embedded (and stored), and segment vectors it read from the database.
        self.embedded = 0
        self.adopted = 0
        self._foreign_warned: set[str] = set()

    def close(self) -> None:
        if self._own_pool:
            self.pool.close()

    # -- where vectors come from ------------------------------------------------------------------------
    def _key_names(self) -> dict[str, str]:
        """Stored `model` keys -> this process's model names."""
        if self.routes is None:
            return {}
        return {vector_key(name, speaker=self.options.embed_speaker): name for name in self.routes.by_name()}

    def _stored(self, tenant: str, segment_ids: Sequence[str]) -> dict[str, tuple[str, np.ndarray]]:
        """The stored vectors of these segments: segment id -> (model key, vector)."""
        out: dict[str, tuple[str, np.ndarray]] = {}
        for i in range(0, len(segment_ids), 5000):
            with self.rows.session(tenant) as conn:
                rows = conn.execute(
                    "SELECT segment_id, model, embedding FROM segment_search WHERE tenant = %s "
                    "AND segment_id = ANY(%s) AND embedding IS NOT NULL",
                    (tenant, list(segment_ids[i : i + 5000])),
                ).fetchall()
            for sid, model, vector in rows:
                as_array = getattr(vector, "to_numpy", None)  # pgvector's Vector (an untyped `vector` column)
                out[sid] = (model, np.asarray(as_array() if as_array else vector, dtype=np.float32))
        return out

    def vectors_for(self, embedder: Embedder, segments: Sequence[Segment],
                    progress: Progress | None = None) -> np.ndarray:
        """The embedder's vectors of `segments`, in order: from pgvector where stored, else embedded here and
        stored (a row another process embedded meanwhile keeps that process's vector)."""
        key = vector_key(embedder.name, speaker=self.options.embed_speaker)
        out = np.empty((len(segments), embedder.dim), dtype=np.float32)
        missing: list[int] = []
        by_tenant: dict[str, list[int]] = {}
        for i, seg in enumerate(segments):
            by_tenant.setdefault(seg.tenant, []).append(i)
        for tenant, members in by_tenant.items():
            stored = self._stored(tenant, [segments[i].segment_id for i in members])
            for i in members:
                got = stored.get(segments[i].segment_id)
                if got is not None and got[0] == key and len(got[1]) == embedder.dim:
                    out[i] = got[1]
                else:
                    if got is not None and got[0] not in self._foreign_warned:
                        self._foreign_warned.add(got[0])
                        log.warning("segment vectors stored by model %r, not this process's %r: embedding here "
                                    "(run the workers and API processes with the same MEETMEM_EMBEDDER)", got[0], key)
                    missing.append(i)
        with self._counts:
            self.adopted += len(segments) - len(missing)
        for start in range(0, len(missing), EMBED_BATCH):
            part = missing[start : start + EMBED_BATCH]
            texts = [embedded_text(segments[i], speaker=self.options.embed_speaker) for i in part]
            vectors = np.asarray(embedder.encode(texts), dtype=np.float32)
            for i, vector in zip(part, vectors, strict=True):
                out[i] = vector
            self._store([segments[i] for i in part], key, vectors)
            with self._counts:
                self.embedded += len(part)
            if progress is not None:
                progress(min(start + EMBED_BATCH, len(missing)), len(missing))
        return out

    def _store(self, segments: Sequence[Segment], key: str, vectors: np.ndarray) -> None:
        """Store vectors in the segments' rows (their lexical rows are added first where missing)."""
        for tenant, meeting_id in sorted({(s.tenant, s.meeting_id) for s in segments}):
            self.rows.catch_up(tenant, meeting_id)
        by_tenant: dict[str, list[tuple[str, np.ndarray, str]]] = {}
        for seg, vector in zip(segments, vectors, strict=True):
            by_tenant.setdefault(seg.tenant, []).append((key, vector, seg.segment_id))
        for tenant, updates in by_tenant.items():
            with self.rows.session(tenant) as conn:
                conn.cursor().executemany(
                    "UPDATE segment_search SET model = %s, embedding = %s WHERE segment_id = %s AND embedding IS NULL",
                    updates)

    # -- the meeting index ------------------------------------------------------------------------------
    def _new_meeting_index(self) -> MeetingIndex:
        from ..index.bm25 import BM25Index

        return _PgMeetingIndex(bm25=BM25Index())

    def meeting_index(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT,
                      progress: Progress | None = None, embed: bool | None = None) -> MeetingIndex:
        """`TranscriptSearch.meeting_index`, its rows' vectors taken from pgvector whenever stored there; with
        `embed` (see the parent), the rows still lacking one are embedded here and stored."""
        index = super().meeting_index(meeting_id, tenant=tenant, progress=progress, embed=False)
        if index.unembedded:
            self._adopt(index, tenant)
        wanted = (self.background_embedding is False) if embed is None else embed
        if wanted and index.unembedded:
            return super().meeting_index(meeting_id, tenant=tenant, progress=progress, embed=True)
        return index

    def _adopt(self, index: MeetingIndex, tenant: str) -> None:
        """Move the leading rows whose vectors are stored (by a worker or another process) into the dense
        index, in document order, as SQLite's index holds them; looks at most every `adopt_interval`."""
        assert isinstance(index, _PgMeetingIndex)
        now = time.monotonic()
        if now < index.adopt_after or not index.catching_up.acquire(blocking=False):
            return  # looked a moment ago, or another thread is embedding these rows right now
        try:
            index.adopt_after = now + self.adopt_interval
            with index.lock:
                todo = list(index.unembedded)
            if not todo or self.routes is None:
                return
            stored = self._stored(tenant, [seg.segment_id for _, seg in todo])
            names = self._key_names()
            taken: list[tuple[int, str, np.ndarray]] = []
            for doc, seg in todo:
                got = stored.get(seg.segment_id)
                name = self.routes.for_segment(seg.text, seg.lang).name
                if got is None or names.get(got[0]) != name:
                    break  # only a prefix: the dense index keeps document order
                taken.append((doc, name, got[1]))
            if not taken:
                return
            groups: dict[str, list[int]] = {}
            for i, (_, name, _) in enumerate(taken):
                groups.setdefault(name, []).append(i)
            vectors = {name: np.stack([taken[i][2] for i in members]) for name, members in groups.items()}
            dims = {name: int(vectors[name].shape[1]) for name in groups}
            with index.lock:
                self._add_dense_locked(index, [doc for doc, _, _ in taken], (groups, vectors, dims))
                del index.unembedded[: len(taken)]
            with self._counts:
                self.adopted += len(taken)
        finally:
            index.catching_up.release()

    def pending_vectors(self, *, tenant: str | None = None) -> int:
        """Rows whose search row has no vector yet: `tenant`'s, else every tenant's (0 without a model)."""
        if self.routes is None:
            return 0
        with self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT set_config('app.tenant', %s, true)", (tenant or "*",))
            sql = "SELECT count(*) FROM segment_search WHERE embedding IS NULL"
            row = conn.execute(sql + " AND tenant = %s", (tenant,)) if tenant else conn.execute(sql)
            return int(row.fetchone()[0])

    @contextmanager
    def exclusive(self, tenant: str, meeting_id: str) -> Iterator[bool]:
        """Whether this process may do a meeting's fallback work now (True) or another holds it (False): a
        session advisory lock on the database, so several API processes never embed the same rows at once."""
        with self.pool.connection() as conn:
            got = conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 20))",
                               (f"{tenant}\x1f{meeting_id}",)).fetchone()[0]
            try:
                yield bool(got)
            finally:
                if got:
                    conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 20))", (f"{tenant}\x1f{meeting_id}",))

    def rebuild(self, *, progress: Progress | None = None) -> int:
        """Forget every in-process index and every stored vector, then rebuild them from the log."""
        with self._lock:
            self._meetings.clear()
        for tenant in sorted({tenant for tenant, _ in self.log.meetings()}):
            with self.rows.session(tenant) as conn:
                conn.execute("UPDATE segment_search SET model = NULL, embedding = NULL WHERE tenant = %s", (tenant,))
        return super().rebuild(progress=progress)
