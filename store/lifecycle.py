"""A meeting's life in the SQLite log after its segments: closing it, and deleting it (the one way rows leave
the log), which leaves a signed tombstone (store/tombstones.py).

`MeetingLifecycle` is a part of `TranscriptLog` (store/log.py): it works in the log's transactions, on its
connection, and reads through its reader pool. The PostgreSQL log's counterpart is store/pg/lifecycle.py.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from .errors import MeetingNotFound, StoreError
from .interchange import check_id
from .receipts import ReceiptError, ReceiptKey
from .records import DEFAULT_TENANT, GENESIS_HASH, Closure, utc_now
from .rows import TOMBSTONE_COLUMNS
from .tombstones import Tombstone, check_tombstone, sign_tombstone


class MeetingLifecycle:
    """Closing and deleting meetings (a part of `TranscriptLog`, which provides what is declared here)."""

    if TYPE_CHECKING:  # the log's, which these methods use
        _conn: sqlite3.Connection

        def transaction(self) -> AbstractContextManager[None]: ...
        def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...
        def require_meeting(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> None: ...
        def last_chain_pos(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> int: ...

    # -- meeting life -----------------------------------------------------------------------------------
    def close_meeting(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT, reason: str = "closed") -> Closure:
        """Record that a meeting ended (explicitly or after a silence); closing a closed meeting is a no-op.

        Raises:
            MeetingNotFound: the tenant has no such meeting.
        """
        with self.transaction():
            self.require_meeting(meeting_id, tenant=tenant)
            current = self.closure(meeting_id, tenant=tenant)
            if current is not None:
                return current
            through = self.last_chain_pos(meeting_id, tenant=tenant)
            closed_at = utc_now()
            self._conn.execute(
                "INSERT INTO meeting_closures (tenant, meeting_id, closed_at, reason, through_pos) "
                "VALUES (?, ?, ?, ?, ?)",
                (tenant, meeting_id, closed_at, reason, through),
            )
            return Closure(meeting_id, closed_at, reason, through)

    def closure(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> Closure | None:
        """The closure in force: the latest one, if no segment arrived after it; else None (open)."""
        rows = self.read(
            "SELECT closed_at, reason, through_pos FROM meeting_closures WHERE tenant = ? AND meeting_id = ? "
            "ORDER BY through_pos DESC, rowid DESC LIMIT 1",
            (tenant, meeting_id),
        )
        if not rows:
            return None
        closed_at, reason, through = rows[0]
        if through < self.last_chain_pos(meeting_id, tenant=tenant):
            return None
        return Closure(meeting_id, closed_at, reason, through)

    def open_meetings(self) -> list[tuple[str, str, str]]:
        """`(tenant, meeting_id, received_at of its newest row)` of every meeting not closed."""
        rows = self.read(
            "SELECT m.tenant, m.meeting_id, (SELECT received_at FROM segments s WHERE s.tenant = m.tenant "
            "AND s.meeting_id = m.meeting_id ORDER BY chain_pos DESC LIMIT 1) FROM meetings m"
        )
        return [(t, m, r or "") for t, m, r in rows if self.closure(m, tenant=t) is None]

    # -- deletion: the one way rows leave the log -------------------------------------------------------
    #: The key `delete_meeting` signs with, while it writes its tombstone (the schema's
    #: `meetmem_tombstone_signed` checks a tombstone against it; None: every tombstone is refused).
    _deleting_with: ReceiptKey | None = None

    def tombstone_signed(self, *fields: Any) -> int:
        """The schema's `meetmem_tombstone_signed(tenant, ..., version)` (store/schema.py): 1 when the key
        `delete_meeting` holds right now signed exactly this tombstone, else 0."""
        key = self._deleting_with
        if key is None:
            return 0
        try:
            check_tombstone(key, Tombstone(*fields))
        except (ReceiptError, TypeError, ValueError):
            return 0
        return 1

    #: Derived tables keyed by (tenant, meeting_id), made by the modules that own them (each may be absent).
    DERIVED_MEETING_TABLES = ("summary_sections", "meeting_digests", "ledger_items", "meeting_audio", "audio_policy",
                              "speaker_names")

    def delete_meeting(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT, reason: str = "deleted",
                       key: ReceiptKey) -> tuple[Tombstone, list[str]]:
        """Delete a meeting: its segments, closures, head and metadata, and every row derived from it
        (vectors, summaries, ledger, audio rows and policy), all in one transaction, leaving a tombstone
        signed with `key` (store/tombstones.py; the schema allows the DELETEs only for a tombstoned meeting).

        The audio files are not touched here: they go after the commit (`AudioStore.remove_files` with the
        returned sha256s), since a file removed before a rolled-back transaction could not come back.

        Returns:
            the tombstone, and the sha256 of each audio file the meeting's rows named.

        Raises:
            MeetingNotFound: the tenant has no such meeting (a deleted one included).
        """
        check_id("meeting id", meeting_id)
        check_id("tenant", tenant)
        reason = " ".join(str(reason).split())[:200] or "deleted"
        key_args = (tenant, meeting_id)
        try:
            with self.transaction():
                conn = self._conn
                found = conn.execute("SELECT 1 FROM meetings WHERE tenant = ? AND meeting_id = ?", key_args)
                if found.fetchone() is None:
                    raise MeetingNotFound(tenant, meeting_id)
                count = conn.execute("SELECT COUNT(*) FROM segments WHERE tenant = ? AND meeting_id = ?",
                                     key_args).fetchone()[0]
                head = conn.execute("SELECT head_pos, head_hash FROM meeting_heads WHERE tenant = ? AND "
                                    "meeting_id = ?", key_args).fetchone()
                head_pos, head_hash = (int(head[0]), str(head[1])) if head else (-1, GENESIS_HASH)
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                shas = ([r[0] for r in conn.execute("SELECT DISTINCT sha256 FROM meeting_audio WHERE tenant = ? AND "
                                                     "meeting_id = ?", key_args)]
                        if "meeting_audio" in tables else [])
                tombstone = sign_tombstone(key, tenant=tenant, meeting_id=meeting_id, deleted_at=utc_now(),
                                           reason=reason, segments=int(count), head_pos=head_pos,
                                           head_hash=head_hash)
                t = tombstone
                # The tombstone first: the schema's triggers refuse these DELETEs for a meeting without one,
                # and refuse the tombstone unless this key signed it.
                self._deleting_with = key
                try:
                    conn.execute("INSERT INTO meeting_deletions (tenant, meeting_id, deleted_at, reason, segments, "
                                 "head_pos, head_hash, key_id, sig, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                 (t.tenant, t.meeting_id, t.deleted_at, t.reason, t.segments, t.head_pos,
                                  t.head_hash, t.key_id, t.sig, t.version))
                finally:
                    self._deleting_with = None
                if "segment_vectors" in tables:
                    conn.execute("DELETE FROM segment_vectors WHERE segment_id IN (SELECT segment_id FROM segments "
                                 "WHERE tenant = ? AND meeting_id = ?)", key_args)
                for table in self.DERIVED_MEETING_TABLES:
                    if table in tables:
                        conn.execute(f"DELETE FROM {table} WHERE tenant = ? AND meeting_id = ?", key_args)
                for table in ("segments", "meeting_closures", "meeting_heads", "meetings"):
                    conn.execute(f"DELETE FROM {table} WHERE tenant = ? AND meeting_id = ?", key_args)
        except sqlite3.Error as exc:
            raise StoreError(f"deleting meeting {meeting_id!r} failed, nothing was removed: {exc}") from exc
        return tombstone, shas

    def tombstone(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> Tombstone | None:
        """The meeting's tombstone, if it was deleted."""
        rows = self.read(f"SELECT {TOMBSTONE_COLUMNS} FROM meeting_deletions WHERE tenant = ? AND meeting_id = ?",
                         (tenant, meeting_id))
        return Tombstone(*rows[0]) if rows else None

    def tombstones(self, *, tenant: str | None = None) -> list[Tombstone]:
        """Every tombstone (of one tenant, or all), oldest deletion first."""
        if tenant is None:
            rows = self.read(f"SELECT {TOMBSTONE_COLUMNS} FROM meeting_deletions ORDER BY deleted_at, rowid")
        else:
            rows = self.read(f"SELECT {TOMBSTONE_COLUMNS} FROM meeting_deletions WHERE tenant = ? "
                             "ORDER BY deleted_at, rowid", (tenant,))
        return [Tombstone(*r) for r in rows]

    def check_tombstone(self, tombstone: Tombstone, key: ReceiptKey) -> None:
        """Raises `ReceiptError` unless `key` signed the tombstone as stored."""
        check_tombstone(key, tombstone)
