"""Moving a meeting between databases, the log's part: its rows dumped exactly as stored, and loaded into
another log with their ids, arrival times, chain positions, links and head as they were (`meetmem migrate`,
store/transfer.py, copies every meeting this way).

The dump's form is the `MeetingDump` record (its rows as `store/rows.py` lays them out), the same from either
backend; the rules for a meeting or tombstone the target holds already are here, for both. The SQLite log's
dump and load are `MeetingDumps`, a part of `Log` on either engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .database import Database, Dialect, marks
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
    """A meeting's dump and load (a part of `Log`, written once for both engines): a dump reads on one
    snapshot; a load runs under the meeting's lock, the one appends and deletion take."""

    if TYPE_CHECKING:  # the log's, which these methods use
        database: Database
        dialect: Dialect

    def dump_meeting(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> MeetingDump:
        """The meeting's rows exactly as stored, read on one snapshot."""
        args = (tenant, meeting_id)
        with self.database.session(tenant, snapshot=True) as conn:
            row = conn.execute("SELECT created_at, title, started_at, participants FROM meetings WHERE tenant = ? "
                               "AND meeting_id = ?", args).fetchone()
            if row is None:
                raise MeetingNotFound(tenant, meeting_id)
            segments = tuple(map(row_to_segment, conn.execute(
                f"SELECT {SEGMENT_SELECT} FROM segments WHERE tenant = ? AND meeting_id = ? ORDER BY chain_pos",
                args).fetchall()))
            closures = tuple((str(c[0]), str(c[1]), int(c[2])) for c in conn.execute(
                "SELECT closed_at, reason, through_pos FROM meeting_closures WHERE tenant = ? AND meeting_id = ? "
                f"ORDER BY {self.dialect.ordinal}", args).fetchall())
            head = conn.execute("SELECT head_pos, head_hash FROM meeting_heads WHERE tenant = ? AND meeting_id = ?",
                                args).fetchone()
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
        args = (d.tenant, d.meeting_id)
        with self.database.session(d.tenant, lock=d.meeting_id) as conn:
            gone = conn.execute("SELECT deleted_at FROM meeting_deletions WHERE tenant = ? AND meeting_id = ?",
                                args).fetchone()
            if gone is not None:
                raise MeetingDeleted(d.tenant, d.meeting_id, gone[0])
            if conn.execute("SELECT 1 FROM meetings WHERE tenant = ? AND meeting_id = ?", args).fetchone():
                head = conn.execute("SELECT head_pos, head_hash FROM meeting_heads WHERE tenant = ? AND "
                                    "meeting_id = ?", args).fetchone()
                check_same_head(d, head)
                return False
            conn.execute("INSERT INTO meetings (tenant, meeting_id, created_at, title, started_at, participants) "
                         "VALUES (?, ?, ?, ?, ?, ?)", (*args, d.created_at, d.title, d.started_at, d.participants))
            # INSERT, not a bulk copy: PostgreSQL refuses COPY FROM into a table under row-level security.
            columns = ", ".join(f'"{c}"' for c in SEGMENT_COLUMNS)
            conn.executemany(f"INSERT INTO segments ({columns}) VALUES ({marks(len(SEGMENT_COLUMNS))})",
                             [tuple(getattr(seg, c) for c in SEGMENT_COLUMNS) for seg in d.segments])
            conn.executemany("INSERT INTO meeting_closures (tenant, meeting_id, closed_at, reason, through_pos) "
                             "VALUES (?, ?, ?, ?, ?)", [(*args, *c) for c in d.closures])
            if d.head is not None:
                conn.execute("INSERT INTO meeting_heads (tenant, meeting_id, head_pos, head_hash) VALUES (?, ?, ?, ?)",
                             (*args, *d.head))
        return True

    def load_tombstone(self, tombstone: Tombstone) -> bool:
        """Keep another database's tombstone as signed (False: it is here already)."""
        t = tombstone
        with self.database.session(t.tenant, lock=t.meeting_id) as conn:
            held = conn.execute(f"SELECT {TOMBSTONE_COLUMNS} FROM meeting_deletions WHERE tenant = ? AND "
                                "meeting_id = ?", (t.tenant, t.meeting_id)).fetchone()
            if held is not None:
                check_same_tombstone(t, held)
                return False
            if conn.execute("SELECT 1 FROM meetings WHERE tenant = ? AND meeting_id = ?",
                            (t.tenant, t.meeting_id)).fetchone() is not None:
                raise StoreError(f"the target holds meeting {t.meeting_id!r}, which the source deleted")
            self.database.import_tombstone(conn, t)
        return True
