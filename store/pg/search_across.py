"""Search across all of a tenant's meetings on PostgreSQL: the candidates `answers/across.py` ranks.

These queries run over every meeting of a tenant (or a given few) at once, on the `segment_search` rows: the
nearest vectors (pgvector, HNSW where the model has the index), the best full-text matches (`ts_rank` over the
GIN index), and which meetings' search rows lag behind their log.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from .lexemes import tsquery_literal

if TYPE_CHECKING:
    import numpy as np

#: How the nearest vectors are found: every vector compared, or pgvector's HNSW index.
DenseRanking = Literal["exact", "hnsw"]


class PgSearchAcross:
    """Queries over every meeting of a tenant (a part of `PgSearch`, on its sessions and its dense ranking)."""

    def dense_across(self, tenant: str, query_vector: np.ndarray, *, model: str, k: int = 10,
                     method: DenseRanking | None = None,
                     meeting_ids: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """The `k` nearest segments of every meeting of the tenant (or of `meeting_ids`): (segment id, cosine)."""
        where, params = ("", []) if meeting_ids is None else (" AND meeting_id = ANY(%s)", [list(meeting_ids)])
        with self.session(tenant) as conn:
            return self._dense_rows(conn, tenant, model, query_vector, k, where, params, method)

    def keyword_across(self, tenant: str, query: str, *, k: int = 50,
                       meeting_ids: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """The `k` segments of the tenant's meetings (or `meeting_ids`) whose lexemes best match the query's,
        by `ts_rank` over the GIN index: candidates across meetings, whose own ranking is done by the caller."""
        q = tsquery_literal(self.tokenizer.tokens(query))
        if not q:
            return []
        where, params = ("", []) if meeting_ids is None else (" AND meeting_id = ANY(%s)", [list(meeting_ids)])
        with self.session(tenant) as conn:
            rows = conn.execute(
                "SELECT segment_id, ts_rank(fts, q, 1) AS r FROM segment_search, CAST(%s AS tsquery) q "
                f"WHERE tenant = %s AND fts @@ q AND live {where} ORDER BY r DESC, segment_id LIMIT %s",
                [q, tenant, *params, k]).fetchall()
        return [(sid, float(r)) for sid, r in rows]

    def lagging(self, tenant: str, meeting_ids: Sequence[str] | None = None) -> list[str]:
        """The tenant's meetings whose log holds rows their search rows do not yet (`catch_up` adds them)."""
        where, params = ("", []) if meeting_ids is None else (" AND h.meeting_id = ANY(%s)", [list(meeting_ids)])
        with self.session(tenant) as conn:
            rows = conn.execute(
                "SELECT h.meeting_id FROM meeting_heads h WHERE h.tenant = %s" + where + " AND h.head_pos > "
                "coalesce((SELECT max(doc) FROM segment_search s WHERE s.tenant = h.tenant "
                "AND s.meeting_id = h.meeting_id), -1) ORDER BY h.meeting_id", [tenant, *params]).fetchall()
        return [m for (m,) in rows]
