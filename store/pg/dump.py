"""Moving a meeting between databases, the PostgreSQL log's part: `store/dump.py`'s dump and load (the same
`MeetingDump`, the same rules for what the target holds already), in this database's transactions.

A dump reads on one REPEATABLE READ snapshot; a load runs under the meeting's advisory lock, the one appends
and deletion take, and keeps a tombstone through the schema's `meetmem_import_tombstone`, since the service's
role cannot write tombstones itself.
"""

from __future__ import annotations

from ..dump import check_same_head, check_same_tombstone
from ..errors import MeetingDeleted, MeetingNotFound
from ..records import DEFAULT_TENANT, MeetingDump
from ..rows import SEGMENT_COLUMNS, SEGMENT_SELECT, TOMBSTONE_COLUMNS, row_to_segment
from ..tombstones import Tombstone


class PgMeetingDumps:
    """The PostgreSQL log's dump and load of a meeting (a part of `PgTranscriptLog`, on its sessions)."""

    def dump_meeting(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> MeetingDump:
        """The meeting's rows exactly as stored, read on one snapshot."""
        args = (tenant, meeting_id)
        with self._session(tenant, isolation="REPEATABLE READ") as conn:
            row = conn.execute("SELECT created_at, title, started_at, participants FROM meetings WHERE tenant = %s "
                               "AND meeting_id = %s", args).fetchone()
            if row is None:
                raise MeetingNotFound(tenant, meeting_id)
            segments = tuple(map(row_to_segment, conn.execute(
                f"SELECT {SEGMENT_SELECT} FROM segments WHERE tenant = %s AND meeting_id = %s ORDER BY chain_pos",
                args)))
            closures = tuple((str(c[0]), str(c[1]), int(c[2])) for c in conn.execute(
                "SELECT closed_at, reason, through_pos FROM meeting_closures WHERE tenant = %s AND meeting_id = %s "
                "ORDER BY ord", args))
            head = conn.execute("SELECT head_pos, head_hash FROM meeting_heads WHERE tenant = %s AND "
                                "meeting_id = %s", args).fetchone()
        return MeetingDump(tenant, meeting_id, row[0], row[1], row[2], row[3], segments, closures,
                           (int(head[0]), str(head[1])) if head else None)

    def load_meeting(self, dump: MeetingDump) -> bool:
        """Store a dumped meeting with its rows, links and head as they were (as `TranscriptLog.load_meeting`)."""
        d = dump
        args = (d.tenant, d.meeting_id)
        with self._session(d.tenant) as conn:
            self._lock_meeting(conn, d.tenant, d.meeting_id)
            gone = conn.execute("SELECT deleted_at FROM meeting_deletions WHERE tenant = %s AND meeting_id = %s",
                                args).fetchone()
            if gone is not None:
                raise MeetingDeleted(d.tenant, d.meeting_id, gone[0])
            if conn.execute("SELECT 1 FROM meetings WHERE tenant = %s AND meeting_id = %s", args).fetchone():
                head = conn.execute("SELECT head_pos, head_hash FROM meeting_heads WHERE tenant = %s AND "
                                    "meeting_id = %s", args).fetchone()
                check_same_head(d, head)
                return False
            conn.execute("INSERT INTO meetings (tenant, meeting_id, created_at, title, started_at, participants) "
                         "VALUES (%s, %s, %s, %s, %s, %s)",
                         (*args, d.created_at, d.title, d.started_at, d.participants))
            columns = ", ".join(f'"{c}"' for c in SEGMENT_COLUMNS)
            marks = ", ".join(["%s"] * len(SEGMENT_COLUMNS))
            # INSERT, not COPY: PostgreSQL refuses COPY FROM into a table under row-level security.
            with conn.cursor() as cur:
                cur.executemany(f"INSERT INTO segments ({columns}) VALUES ({marks})",
                                [tuple(getattr(seg, c) for c in SEGMENT_COLUMNS) for seg in d.segments])
                cur.executemany("INSERT INTO meeting_closures (tenant, meeting_id, closed_at, reason, through_pos) "
                                "VALUES (%s, %s, %s, %s, %s)", [(*args, *c) for c in d.closures])
            if d.head is not None:
                conn.execute("INSERT INTO meeting_heads (tenant, meeting_id, head_pos, head_hash) "
                             "VALUES (%s, %s, %s, %s)", (*args, *d.head))
        return True

    def load_tombstone(self, tombstone: Tombstone) -> bool:
        """Keep another database's tombstone as signed (False: it is here already); through the schema's
        `meetmem_import_tombstone`, since the service's role cannot write tombstones itself."""
        t = tombstone
        with self._session(t.tenant) as conn:
            held = conn.execute(f"SELECT {TOMBSTONE_COLUMNS} FROM meeting_deletions WHERE tenant = %s AND "
                                "meeting_id = %s", (t.tenant, t.meeting_id)).fetchone()
            if held is not None:
                check_same_tombstone(t, held)
                return False
            conn.execute("SELECT meetmem_import_tombstone(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                         (t.tenant, t.meeting_id, t.deleted_at, t.reason, t.segments, t.head_pos, t.head_hash,
                          t.key_id, t.sig, t.version))
        return True
