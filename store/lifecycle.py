"""A meeting's life in the log after its segments: closing it, and deleting it (the one way rows leave the
log), which leaves a signed tombstone (store/tombstones.py).

`MeetingLifecycle` is a part of `Log` (store/log.py), written once for both engines: it works in the
database's sessions, under the meeting's lock. How a deleted meeting's rows leave is the one thing the
engines do their own way (`Database.remove_meeting`: SQLite's guarded DELETEs, PostgreSQL's
`meetmem_delete_meeting`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .database import ALL_TENANTS, Database, Dialect
from .errors import MeetingNotFound, StoreError
from .interchange import check_id
from .receipts import ReceiptKey
from .records import DEFAULT_TENANT, GENESIS_HASH, Closure, utc_now
from .rows import TOMBSTONE_COLUMNS
from .tombstones import Tombstone, check_tombstone, sign_tombstone


class MeetingLifecycle:
    """Closing and deleting meetings (a part of `Log`, which provides what is declared here)."""

    if TYPE_CHECKING:  # the log's, which these methods use
        database: Database
        dialect: Dialect

        def _rows(self, sql: str, params: Sequence[Any] = (), *, tenant: str) -> list[tuple[Any, ...]]: ...

    # -- meeting life -----------------------------------------------------------------------------------
    def close_meeting(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT, reason: str = "closed") -> Closure:
        """Record that a meeting ended (explicitly or after a silence); closing a closed meeting is a no-op.

        Raises:
            MeetingNotFound: the tenant has no such meeting.
        """
        args = (tenant, meeting_id)
        with self.database.session(tenant, lock=meeting_id) as conn:
            if conn.execute("SELECT 1 FROM meetings WHERE tenant = ? AND meeting_id = ?", args).fetchone() is None:
                gone = conn.execute("SELECT deleted_at FROM meeting_deletions WHERE tenant = ? AND meeting_id = ?",
                                    args).fetchone()
                raise MeetingNotFound(tenant, meeting_id, deleted_at=gone[0] if gone else None)
            current = self._closure(conn, tenant, meeting_id)
            if current is not None:
                return current
            through = conn.execute("SELECT COALESCE(MAX(chain_pos), -1) FROM segments WHERE tenant = ? AND "
                                   "meeting_id = ?", args).fetchone()[0]
            closed_at = utc_now()
            conn.execute("INSERT INTO meeting_closures (tenant, meeting_id, closed_at, reason, through_pos) "
                         "VALUES (?, ?, ?, ?, ?)", (tenant, meeting_id, closed_at, reason, through))
            return Closure(meeting_id, closed_at, reason, int(through))

    def _closure(self, conn: Any, tenant: str, meeting_id: str) -> Closure | None:
        row = conn.execute(
            "SELECT c.closed_at, c.reason, c.through_pos, (SELECT COALESCE(MAX(chain_pos), -1) FROM segments s "
            "WHERE s.tenant = c.tenant AND s.meeting_id = c.meeting_id) FROM meeting_closures c "
            f"WHERE c.tenant = ? AND c.meeting_id = ? ORDER BY c.through_pos DESC, c.{self.dialect.ordinal} DESC "
            "LIMIT 1", (tenant, meeting_id)).fetchone()
        if row is None or row[2] < row[3]:
            return None
        return Closure(meeting_id, row[0], row[1], int(row[2]))

    def closure(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> Closure | None:
        """The closure in force: the latest one, if no segment arrived after it; else None (open)."""
        with self.database.session(tenant, snapshot=True) as conn:
            return self._closure(conn, tenant, meeting_id)

    def open_meetings(self) -> list[tuple[str, str, str]]:
        """`(tenant, meeting_id, received_at of its newest row)` of every meeting not closed, oldest first."""
        rows = self._rows(
            "SELECT m.tenant, m.meeting_id, "
            "(SELECT received_at FROM segments s WHERE s.tenant = m.tenant AND s.meeting_id = m.meeting_id "
            "ORDER BY chain_pos DESC LIMIT 1), "
            "(SELECT COALESCE(MAX(chain_pos), -1) FROM segments s WHERE s.tenant = m.tenant AND "
            "s.meeting_id = m.meeting_id), "
            "(SELECT MAX(through_pos) FROM meeting_closures c WHERE c.tenant = m.tenant AND "
            "c.meeting_id = m.meeting_id) "
            f"FROM meetings m ORDER BY m.created_at, m.{self.dialect.ordinal}", tenant=ALL_TENANTS)
        return [(t, m, r or "") for t, m, r, head, through in rows if through is None or int(through) < int(head)]

    # -- deletion: the one way rows leave the log -------------------------------------------------------
    def delete_meeting(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT, reason: str = "deleted",
                       key: ReceiptKey) -> tuple[Tombstone, list[str]]:
        """Delete a meeting: its segments, closures, head and metadata, and every row derived from it
        (vectors, summaries, ledger, audio rows and policy), all in one transaction, leaving a tombstone
        signed with `key` (store/tombstones.py; the database allows the removal only for a tombstoned meeting).

        On SQLite the audio files are not touched here: they go after the commit (`AudioStore.remove_files`
        with the returned sha256s), since a file removed before a rolled-back transaction could not come back.
        On PostgreSQL the audio is rows, removed with the rest (no sha256s are returned).

        Returns:
            the tombstone, and the sha256 of each audio file the meeting's rows named.

        Raises:
            MeetingNotFound: the tenant has no such meeting (a deleted one included).
        """
        check_id("meeting id", meeting_id)
        check_id("tenant", tenant)
        reason = " ".join(str(reason).split())[:200] or "deleted"
        args = (tenant, meeting_id)
        try:
            with self.database.session(tenant, lock=meeting_id) as conn:
                if conn.execute("SELECT 1 FROM meetings WHERE tenant = ? AND meeting_id = ?", args).fetchone() is None:
                    raise MeetingNotFound(tenant, meeting_id)
                count = conn.execute("SELECT COUNT(*) FROM segments WHERE tenant = ? AND meeting_id = ?",
                                     args).fetchone()[0]
                head = conn.execute("SELECT head_pos, head_hash FROM meeting_heads WHERE tenant = ? AND "
                                    "meeting_id = ?", args).fetchone()
                head_pos, head_hash = (int(head[0]), str(head[1])) if head else (-1, GENESIS_HASH)
                tombstone = sign_tombstone(key, tenant=tenant, meeting_id=meeting_id, deleted_at=utc_now(),
                                           reason=reason, segments=int(count), head_pos=head_pos,
                                           head_hash=head_hash)
                shas = self.database.remove_meeting(conn, tombstone, key)
                # Its webhook deliveries hold its summary and ledger: they go with it (store/webhooks.py).
                conn.execute("DELETE FROM webhook_deliveries WHERE tenant = ? AND meeting_id = ?", args)
        except MeetingNotFound:
            raise
        except StoreError as exc:
            raise StoreError(f"deleting meeting {meeting_id!r} failed, nothing was removed: {exc}") from exc
        return tombstone, shas

    def tombstone(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> Tombstone | None:
        """The meeting's tombstone, if it was deleted."""
        rows = self._rows(f"SELECT {TOMBSTONE_COLUMNS} FROM meeting_deletions WHERE tenant = ? AND meeting_id = ?",
                          (tenant, meeting_id), tenant=tenant)
        return Tombstone(*rows[0]) if rows else None

    def tombstones(self, *, tenant: str | None = None) -> list[Tombstone]:
        """Every tombstone (of one tenant, or all), oldest deletion first."""
        order = f"ORDER BY deleted_at, {self.dialect.ordinal}"
        if tenant is None:
            rows = self._rows(f"SELECT {TOMBSTONE_COLUMNS} FROM meeting_deletions {order}", tenant=ALL_TENANTS)
        else:
            rows = self._rows(f"SELECT {TOMBSTONE_COLUMNS} FROM meeting_deletions WHERE tenant = ? {order}",
                              (tenant,), tenant=tenant)
        return [Tombstone(*r) for r in rows]

    def check_tombstone(self, tombstone: Tombstone, key: ReceiptKey) -> None:
        """Raises `ReceiptError` unless `key` signed the tombstone as stored."""
        check_tombstone(key, tombstone)
