"""Moving a meeting between databases, the log's part: its rows dumped exactly as stored, and loaded into
another log with their ids, arrival times, chain positions, links and head as they were (`meetmem migrate`,
store/transfer.py, copies every meeting this way).

The dump's form is the `MeetingDump` record (its rows as `store/rows.py` lays them out), the same from either
backend; the rules for a meeting or tombstone the target holds already are here, for both. The SQLite log's
dump and load are `MeetingDumps`, a part of `TranscriptLog`; PostgreSQL's are store/pg/dump.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .errors import MeetingDeleted, MeetingNotFound, StoreError
from .records import DEFAULT_TENANT, MeetingDump
from .rows import SEGMENT_COLUMNS, SEGMENT_SELECT, TOMBSTONE_COLUMNS, row_to_segment
from .tombstones import Tombstone


def check_same_head(dump: MeetingDump, head: Sequence[Any] | None) -> None:
    """A meeting the target holds already must end at the dump's head (a migration run again); else nothing
    of it is copied.

    Raises:
        StoreError: the target holds the meeting with other rows.
    """
    if (tuple(head) if head else None) != dump.head:
        raise StoreError(f"the target already holds meeting {dump.meeting_id!r} of tenant {dump.tenant!r} with "
                         "other rows; nothing of it was copied")


def check_same_tombstone(tombstone: Tombstone, held: Sequence[Any]) -> None:
    """A tombstone the target holds already for the meeting must be the same one, as signed.

    Raises:
        StoreError: the target holds another.
    """
    if Tombstone(*held) != tombstone:
        raise StoreError(f"the target holds another tombstone for meeting {tombstone.meeting_id!r}")


class MeetingDumps:
    """The SQLite log's dump and load of a meeting (a part of `TranscriptLog`, on its write transaction)."""

    def dump_meeting(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> MeetingDump:
        """The meeting's rows exactly as stored, read in one transaction (a consistent snapshot)."""
        with self.transaction():
            conn = self._conn
            row = conn.execute("SELECT created_at, title, started_at, participants FROM meetings WHERE tenant = ? "
                               "AND meeting_id = ?", (tenant, meeting_id)).fetchone()
            if row is None:
                raise MeetingNotFound(tenant, meeting_id)
            segments = tuple(row_to_segment(r) for r in conn.execute(
                f"SELECT {SEGMENT_SELECT} FROM segments WHERE tenant = ? AND meeting_id = ? ORDER BY chain_pos",
                (tenant, meeting_id)))
            closures = tuple((str(c[0]), str(c[1]), int(c[2])) for c in conn.execute(
                "SELECT closed_at, reason, through_pos FROM meeting_closures WHERE tenant = ? AND meeting_id = ? "
                "ORDER BY rowid", (tenant, meeting_id)))
            head = conn.execute("SELECT head_pos, head_hash FROM meeting_heads WHERE tenant = ? AND meeting_id = ?",
                                (tenant, meeting_id)).fetchone()
        return MeetingDump(tenant, meeting_id, row[0], row[1], row[2], row[3], segments, closures,
                           (int(head[0]), str(head[1])) if head else None)

    def load_meeting(self, dump: MeetingDump) -> bool:
        """Store a dumped meeting with its rows, links and head as they were; all or nothing.

        Returns:
            False when this database holds the meeting already with the same head (a migration run again).

        Raises:
            StoreError: the meeting is here with other rows, or was deleted here.
        """
        d = dump
        with self.transaction():
            conn = self._conn
            gone = conn.execute("SELECT deleted_at FROM meeting_deletions WHERE tenant = ? AND meeting_id = ?",
                                (d.tenant, d.meeting_id)).fetchone()
            if gone is not None:
                raise MeetingDeleted(d.tenant, d.meeting_id, gone[0])
            if conn.execute("SELECT 1 FROM meetings WHERE tenant = ? AND meeting_id = ?",
                            (d.tenant, d.meeting_id)).fetchone() is not None:
                head = conn.execute("SELECT head_pos, head_hash FROM meeting_heads WHERE tenant = ? AND "
                                    "meeting_id = ?", (d.tenant, d.meeting_id)).fetchone()
                check_same_head(d, head)
                return False
            conn.execute("INSERT INTO meetings (tenant, meeting_id, created_at, title, started_at, participants) "
                         "VALUES (?, ?, ?, ?, ?, ?)",
                         (d.tenant, d.meeting_id, d.created_at, d.title, d.started_at, d.participants))
            columns = ", ".join(f'"{c}"' for c in SEGMENT_COLUMNS)
            conn.executemany(f"INSERT INTO segments ({columns}) VALUES ({', '.join('?' * len(SEGMENT_COLUMNS))})",
                             [tuple(getattr(seg, c) for c in SEGMENT_COLUMNS) for seg in d.segments])
            conn.executemany("INSERT INTO meeting_closures (tenant, meeting_id, closed_at, reason, through_pos) "
                             "VALUES (?, ?, ?, ?, ?)", [(d.tenant, d.meeting_id, *c) for c in d.closures])
            if d.head is not None:
                conn.execute("INSERT INTO meeting_heads (tenant, meeting_id, head_pos, head_hash) VALUES (?, ?, ?, ?)",
                             (d.tenant, d.meeting_id, *d.head))
        return True

    def load_tombstone(self, tombstone: Tombstone) -> bool:
        """Keep another database's tombstone as signed (False: it is here already)."""
        t = tombstone
        with self.transaction():
            conn = self._conn
            held = conn.execute(f"SELECT {TOMBSTONE_COLUMNS} FROM meeting_deletions WHERE tenant = ? AND "
                                "meeting_id = ?", (t.tenant, t.meeting_id)).fetchone()
            if held is not None:
                check_same_tombstone(t, held)
                return False
            if conn.execute("SELECT 1 FROM meetings WHERE tenant = ? AND meeting_id = ?",
                            (t.tenant, t.meeting_id)).fetchone() is not None:
                raise StoreError(f"the target holds meeting {t.meeting_id!r}, which the source deleted")
            conn.execute(f"INSERT INTO meeting_deletions ({TOMBSTONE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (t.tenant, t.meeting_id, t.deleted_at, t.reason, t.segments, t.head_pos, t.head_hash,
                          t.key_id, t.sig, t.version))
        return True
