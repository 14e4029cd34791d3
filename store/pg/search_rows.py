"""Writing the PostgreSQL search's derived rows: a segment's lexemes when the log gains it, its vector later.

`segment_search` (store/pg/search.py says what it holds) is derived from the log: `catch_up` adds the rows of
segments the log gained (a search calls it first, so an appended segment is found by its words at once),
`embed_pending` gives them their vectors in whole-batch transactions (a worker killed midway leaves the rest
pending, never a row embedded twice). Ranking reads these rows; this module only writes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..index.search_types import embedded_text, vector_key
from ..records import Segment
from .lexemes import tsvector_literal

if TYPE_CHECKING:
    from ..index.embedder_routes import EmbedderRoutes
    from ..index.search_types import SearchOptions
    from ..index.tokenize import MeetingTokenizer


class PgSearchRows:
    """The writing of `segment_search`'s rows (a part of `PgSearch`, on its sessions, tokenizer and models)."""

    routes: EmbedderRoutes | None
    tokenizer: MeetingTokenizer
    options: SearchOptions

    def index_segments(self, segments: Sequence[Segment]) -> int:
        """Add the lexical rows of stored segments (idempotent: a row already there is kept); a correction
        marks the row it supersedes as no longer live. Returns the rows added."""
        if not segments:
            return 0
        rows = []
        for seg in segments:
            tokens = self.tokenizer.tokens(seg.text)
            rows.append((seg.segment_id, seg.tenant, seg.meeting_id, seg.chain_pos, seg.start, seg.end,
                         seg.speaker, " ".join(tokens), tsvector_literal(tokens)))
        added = 0
        for tenant in sorted({seg.tenant for seg in segments}):
            mine = [row for row in rows if row[1] == tenant]
            superseded = [s.supersedes for s in segments if s.supersedes and s.tenant == tenant]
            with self.session(tenant) as conn:
                cur = conn.cursor()
                # Only for segments still in the log: a meeting deleted while it was being indexed leaves no rows.
                cur.executemany(
                    "INSERT INTO segment_search (segment_id, tenant, meeting_id, doc, start_s, end_s, speaker, "
                    "lexed, fts) SELECT %s, %s, %s, %s, %s, %s, %s, %s, %s::tsvector "
                    "WHERE EXISTS (SELECT 1 FROM segments WHERE segment_id = %s) "
                    "ON CONFLICT (segment_id) DO NOTHING", [(*row, row[0]) for row in mine])
                added += max(cur.rowcount, 0)  # psycopg sums executemany's rows
                if superseded:
                    cur.execute("UPDATE segment_search SET live = false WHERE segment_id = ANY(%s)", (superseded,))
        return added

    def catch_up(self, tenant: str, meeting_id: str) -> int:
        """Add the lexical rows of the meeting's segments the log gained since the last call (by chain
        position); returns how many. Cheap: a search calls it first, so an appended segment is found by its
        words at once, with or without a worker."""
        with self.session(tenant) as conn:
            rows = conn.execute(
                "SELECT segment_id, tenant, meeting_id, device_id, seq, start, \"end\", text, speaker, lang, raw_text, "
                "confidence, supersedes, received_at, chain_pos, prev_hash, hash FROM segments "
                "WHERE tenant = %s AND meeting_id = %s AND chain_pos > coalesce("
                "(SELECT max(doc) FROM segment_search WHERE tenant = %s AND meeting_id = %s), -1) ORDER BY chain_pos",
                (tenant, meeting_id, tenant, meeting_id),
            ).fetchall()
        return self.index_segments([Segment(*row) for row in rows]) if rows else 0

    def embed_pending(self, tenant: str, meeting_id: str, *, batch: int = 256) -> int:
        """Embed the meeting's rows that have no vector yet (each by its language's model); returns how many.

        Each batch is one transaction, so a worker killed midway leaves whole batches done and the rest
        still pending: running it again finishes the job, never embeds a row twice.
        """
        if self.routes is None:
            return 0
        done = 0
        while True:
            with self.session(tenant) as conn:
                rows = conn.execute(
                    "SELECT s.segment_id, s.speaker, g.text, g.lang FROM segment_search s "
                    "JOIN segments g USING (segment_id) WHERE s.tenant = %s AND s.meeting_id = %s "
                    "AND s.embedding IS NULL ORDER BY s.doc LIMIT %s",
                    (tenant, meeting_id, batch),
                ).fetchall()
            if not rows:
                return done
            done += self.store_vectors(rows, tenant=tenant)

    def store_vectors(self, rows: Sequence[tuple[str, str | None, str, str | None]], *, tenant: str) -> int:
        """Embed `(segment_id, speaker, text, lang)` rows of a tenant and store their vectors in one transaction."""
        if self.routes is None or not rows:
            return 0
        speaker_form = self.options.embed_speaker
        groups: dict[str, list[tuple[str, str | None, str, str | None]]] = {}
        for row in rows:
            groups.setdefault(self.routes.for_segment(row[2], row[3]).name, []).append(row)
        models = self.routes.by_name()
        updates = []
        for name, members in groups.items():
            texts = [embedded_text(_stub(sp, text), speaker=speaker_form) for _, sp, text, _ in members]
            vectors = np.asarray(models[name].encode(texts), dtype=np.float32)
            key = vector_key(name, speaker=speaker_form)
            updates += [(key, v, sid) for (sid, *_), v in zip(members, vectors, strict=True)]
        with self.session(tenant) as conn:
            conn.cursor().executemany(
                "UPDATE segment_search SET model = %s, embedding = %s WHERE segment_id = %s AND embedding IS NULL",
                updates,
            )
        return len(updates)


def _stub(speaker: str | None, text: str) -> Segment:
    """A segment carrying only what `embedded_text` reads."""
    return Segment("", "", "", "", 0, 0.0, 0.0, text, speaker, None, None, None, None, "", 0, "", "")
