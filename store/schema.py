"""The log's tables, indexes and the triggers that make the database itself refuse to change history.

Kept apart from the log's code: this is the one place that says what the database holds and what it
refuses, whatever program opens it.
"""

from __future__ import annotations

import sqlite_utils

SCHEMA_TRIGGERS = [
    # The log is append-only: the database refuses to change or remove a row, whoever asks.
    """CREATE TRIGGER IF NOT EXISTS segments_refuse_update BEFORE UPDATE ON segments
       BEGIN SELECT RAISE(ABORT, 'transcript log is append-only: UPDATE refused'); END""",
    """CREATE TRIGGER IF NOT EXISTS segments_refuse_delete BEFORE DELETE ON segments
       BEGIN SELECT RAISE(ABORT, 'transcript log is append-only: DELETE refused'); END""",
    # INSERT OR REPLACE deletes the old row without firing delete triggers (unless recursive_triggers is
    # on), so a second insert of a stored segment is silently dropped before it can replace anything.
    """CREATE TRIGGER IF NOT EXISTS segments_ignore_replay BEFORE INSERT ON segments
       WHEN EXISTS (SELECT 1 FROM segments WHERE segment_id = NEW.segment_id)
         OR EXISTS (SELECT 1 FROM segments WHERE tenant = NEW.tenant AND meeting_id = NEW.meeting_id
                    AND device_id = NEW.device_id AND seq = NEW.seq)
         OR EXISTS (SELECT 1 FROM segments WHERE tenant = NEW.tenant AND meeting_id = NEW.meeting_id
                    AND chain_pos = NEW.chain_pos)
       BEGIN SELECT RAISE(IGNORE); END""",
    """CREATE TRIGGER IF NOT EXISTS meetings_refuse_delete BEFORE DELETE ON meetings
       BEGIN SELECT RAISE(ABORT, 'meetings are never deleted from the log'); END""",
    """CREATE TRIGGER IF NOT EXISTS closures_refuse_update BEFORE UPDATE ON meeting_closures
       BEGIN SELECT RAISE(ABORT, 'meeting closures are append-only: UPDATE refused'); END""",
    """CREATE TRIGGER IF NOT EXISTS closures_refuse_delete BEFORE DELETE ON meeting_closures
       BEGIN SELECT RAISE(ABORT, 'meeting closures are append-only: DELETE refused'); END""",
    # A meeting's head only moves forward, and is never removed: a log cut short no longer reaches it.
    """CREATE TRIGGER IF NOT EXISTS heads_refuse_going_back BEFORE UPDATE ON meeting_heads
       WHEN NEW.head_pos <= OLD.head_pos OR NEW.tenant != OLD.tenant OR NEW.meeting_id != OLD.meeting_id
       BEGIN SELECT RAISE(ABORT, 'a meeting head only moves forward: UPDATE refused'); END""",
    """CREATE TRIGGER IF NOT EXISTS heads_refuse_delete BEFORE DELETE ON meeting_heads
       BEGIN SELECT RAISE(ABORT, 'meeting heads are never deleted: DELETE refused'); END""",
]



def create_schema(db: sqlite_utils.Database) -> None:
    """Create whatever of the schema is missing (inside the caller's write transaction)."""
    if "meetings" not in db.table_names():
        db["meetings"].create(
            {"tenant": str, "meeting_id": str, "created_at": str},
            pk=("tenant", "meeting_id"),
            not_null={"tenant", "meeting_id", "created_at"},
        )
    if "segments" not in db.table_names():
        db["segments"].create(
            {
                "segment_id": str,
                "tenant": str,
                "meeting_id": str,
                "device_id": str,
                "seq": int,
                "start": float,
                "end": float,
                "text": str,
                "speaker": str,
                "lang": str,
                "raw_text": str,
                "confidence": float,
                "supersedes": str,
                "received_at": str,
                "chain_pos": int,
                "prev_hash": str,
                "hash": str,
            },
            pk="segment_id",
            not_null={
                "tenant", "meeting_id", "device_id", "seq", "start", "end", "text",
                "received_at", "chain_pos", "prev_hash", "hash",
            },
        )
        segments = db["segments"]
        segments.create_index(["tenant", "meeting_id", "device_id", "seq"], unique=True)
        segments.create_index(["tenant", "meeting_id", "chain_pos"], unique=True)
        segments.create_index(["tenant", "meeting_id", "start", "device_id", "seq"])
    if "meeting_closures" not in db.table_names():
        # A meeting's end is an event in time like its segments: appended, never rewritten. Segments
        # that arrive later (a device catching up after being offline) reopen it.
        db["meeting_closures"].create(
            {"tenant": str, "meeting_id": str, "closed_at": str, "reason": str, "through_pos": int},
            not_null={"tenant", "meeting_id", "closed_at", "reason", "through_pos"},
        )
        db["meeting_closures"].create_index(["tenant", "meeting_id", "through_pos"])
    if "meeting_heads" not in db.table_names():
        # Where each meeting's chain ends (its last position and hash), kept apart from the segments so that
        # rows removed from the end of a chain (which leaves the rest of it intact) still show. A database
        # from before heads gets them from its chains as they are now.
        db["meeting_heads"].create(
            {"tenant": str, "meeting_id": str, "head_pos": int, "head_hash": str},
            pk=("tenant", "meeting_id"),
            not_null={"tenant", "meeting_id", "head_pos", "head_hash"},
        )
        db.execute(
            "INSERT INTO meeting_heads (tenant, meeting_id, head_pos, head_hash) "
            "SELECT s.tenant, s.meeting_id, s.chain_pos, s.hash FROM segments s WHERE s.chain_pos = "
            "(SELECT MAX(t.chain_pos) FROM segments t WHERE t.tenant = s.tenant AND t.meeting_id = s.meeting_id)"
        )
    _migrate_meeting_metadata(db)
    for statement in SCHEMA_TRIGGERS:
        db.execute(statement)


#: The meeting's metadata (title, start with its time zone, participants as a JSON list), added in place to
#: a database made before they existed: `ALTER TABLE ... ADD COLUMN` keeps every stored row.
METADATA_COLUMNS = (("title", "TEXT"), ("started_at", "TEXT"), ("participants", "TEXT"))


def _migrate_meeting_metadata(db: sqlite_utils.Database) -> None:
    have = {row[1] for row in db.execute("PRAGMA table_info(meetings)").fetchall()}
    for name, kind in METADATA_COLUMNS:
        if name not in have:
            db.execute(f"ALTER TABLE meetings ADD COLUMN {name} {kind}")
