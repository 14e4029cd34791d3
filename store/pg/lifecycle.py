"""A meeting's life in the PostgreSQL log after its segments: closing it, and deleting it (the one way rows
leave the log, through the schema's `meetmem_delete_meeting`), which leaves a signed tombstone.

`PgMeetingLifecycle` is a part of `PgTranscriptLog` (store/pg/log.py): it works in the log's sessions, under
its per-meeting lock. The SQLite log's counterpart is store/lifecycle.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from ..errors import MeetingNotFound, StoreError
from ..interchange import check_id
from ..receipts import ReceiptKey
from ..records import DEFAULT_TENANT, GENESIS_HASH, Closure, utc_now
from ..rows import TOMBSTONE_COLUMNS
from ..tombstones import Tombstone, check_tombstone, sign_tombstone
from .connections import ALL_TENANTS


class PgMeetingLifecycle:
    """Closing and deleting meetings (a part of `PgTranscriptLog`, which provides what is declared here)."""

    if TYPE_CHECKING:  # the log's, which these methods use
        def _session(self, tenant: str) -> AbstractContextManager[Any]: ...
        def _rows(self, sql: str, params: Sequence[Any] = (), *, tenant: str) -> list[Any]: ...
        @staticmethod
        def _lock_meeting(conn: Any, tenant: str, meeting_id: str) -> None: ...

    # -- meeting life -----------------------------------------------------------------------------------
    def close_meeting(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT, reason: str = "closed") -> Closure:
        """Record that a meeting ended; closing a closed meeting is a no-op."""
        with self._session(tenant) as conn:
            self._lock_meeting(conn, tenant, meeting_id)
            if conn.execute("SELECT 1 FROM meetings WHERE tenant = %s AND meeting_id = %s",
                            (tenant, meeting_id)).fetchone() is None:
                gone = conn.execute("SELECT deleted_at FROM meeting_deletions WHERE tenant = %s AND meeting_id = %s",
                                    (tenant, meeting_id)).fetchone()
                raise MeetingNotFound(tenant, meeting_id, deleted_at=gone[0] if gone else None)
            current = self._closure(conn, tenant, meeting_id)
            if current is not None:
                return current
            through = conn.execute("SELECT COALESCE(MAX(chain_pos), -1) FROM segments WHERE tenant = %s AND "
                                   "meeting_id = %s", (tenant, meeting_id)).fetchone()[0]
            closed_at = utc_now()
            conn.execute("INSERT INTO meeting_closures (tenant, meeting_id, closed_at, reason, through_pos) "
                         "VALUES (%s, %s, %s, %s, %s)", (tenant, meeting_id, closed_at, reason, through))
            return Closure(meeting_id, closed_at, reason, int(through))

    @staticmethod
    def _closure(conn: Any, tenant: str, meeting_id: str) -> Closure | None:
        row = conn.execute(
            "SELECT c.closed_at, c.reason, c.through_pos, (SELECT COALESCE(MAX(chain_pos), -1) FROM segments s "
            "WHERE s.tenant = c.tenant AND s.meeting_id = c.meeting_id) FROM meeting_closures c "
            "WHERE c.tenant = %s AND c.meeting_id = %s ORDER BY c.through_pos DESC, c.ord DESC LIMIT 1",
            (tenant, meeting_id)).fetchone()
        if row is None or row[2] < row[3]:
            return None
        return Closure(meeting_id, row[0], row[1], int(row[2]))

    def closure(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> Closure | None:
        """The closure in force: the latest one, if no segment arrived after it; else None (open)."""
        with self._session(tenant) as conn:
            return self._closure(conn, tenant, meeting_id)

    def open_meetings(self) -> list[tuple[str, str, str]]:
        """`(tenant, meeting_id, received_at of its newest row)` of every meeting not closed."""
        rows = self._rows(
            "SELECT m.tenant, m.meeting_id, last.received_at FROM meetings m "
            "LEFT JOIN LATERAL (SELECT received_at, chain_pos FROM segments s WHERE s.tenant = m.tenant AND "
            "s.meeting_id = m.meeting_id ORDER BY chain_pos DESC LIMIT 1) last ON true "
            "WHERE NOT EXISTS (SELECT 1 FROM meeting_closures c WHERE c.tenant = m.tenant AND "
            "c.meeting_id = m.meeting_id AND c.through_pos >= COALESCE(last.chain_pos, -1)) "
            "ORDER BY m.created_at, m.ord", tenant=ALL_TENANTS)
        return [(t, m, r or "") for t, m, r in rows]

    # -- deletion: the one way rows leave the log -------------------------------------------------------
    def delete_meeting(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT, reason: str = "deleted",
                       key: ReceiptKey) -> tuple[Tombstone, list[str]]:
        """Delete a meeting and everything derived from it, leaving a tombstone signed with `key`
        (as `TranscriptLog.delete_meeting`; here through the schema's `meetmem_delete_meeting`)."""
        check_id("meeting id", meeting_id)
        check_id("tenant", tenant)
        reason = " ".join(str(reason).split())[:200] or "deleted"
        args = (tenant, meeting_id)
        try:
            with self._session(tenant) as conn:
                self._lock_meeting(conn, tenant, meeting_id)
                found = conn.execute("SELECT 1 FROM meetings WHERE tenant = %s AND meeting_id = %s", args).fetchone()
                if found is None:
                    raise MeetingNotFound(tenant, meeting_id)
                count = conn.execute("SELECT COUNT(*) FROM segments WHERE tenant = %s AND meeting_id = %s",
                                     args).fetchone()[0]
                head = conn.execute("SELECT head_pos, head_hash FROM meeting_heads WHERE tenant = %s AND "
                                    "meeting_id = %s", args).fetchone()
                head_pos, head_hash = (int(head[0]), str(head[1])) if head else (-1, GENESIS_HASH)
                # The audio's bytes are rows here (store/pg/audio.py): they go in this transaction, leaving no
                # files to remove after it (SQLite returns the sha256 of each).
                shas: list[str] = []
                t = sign_tombstone(key, tenant=tenant, meeting_id=meeting_id, deleted_at=utc_now(), reason=reason,
                                   segments=int(count), head_pos=head_pos, head_hash=head_hash)
                conn.execute("SELECT meetmem_delete_meeting(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                             (t.tenant, t.meeting_id, t.deleted_at, t.reason, t.segments, t.head_pos, t.head_hash,
                              t.key_id, t.sig, t.version))
        except MeetingNotFound:
            raise
        except StoreError as exc:
            raise StoreError(f"deleting meeting {meeting_id!r} failed, nothing was removed: {exc}") from exc
        return t, shas

    def tombstone(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> Tombstone | None:
        rows = self._rows(f"SELECT {TOMBSTONE_COLUMNS} FROM meeting_deletions WHERE tenant = %s AND "
                          "meeting_id = %s", (tenant, meeting_id), tenant=tenant)
        return Tombstone(*rows[0]) if rows else None

    def tombstones(self, *, tenant: str | None = None) -> list[Tombstone]:
        """Every tombstone (of one tenant, or all), oldest deletion first."""
        if tenant is None:
            rows = self._rows(f"SELECT {TOMBSTONE_COLUMNS} FROM meeting_deletions ORDER BY deleted_at, ord",
                              tenant=ALL_TENANTS)
        else:
            rows = self._rows(f"SELECT {TOMBSTONE_COLUMNS} FROM meeting_deletions WHERE tenant = %s "
                              "ORDER BY deleted_at, ord", (tenant,), tenant=tenant)
        return [Tombstone(*r) for r in rows]

    def check_tombstone(self, tombstone: Tombstone, key: ReceiptKey) -> None:
        check_tombstone(key, tombstone)
