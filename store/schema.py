"""The log's tables, indexes and the triggers that make the database itself refuse to change history.

Kept apart from the log's code: this is the one place that says what the database holds and what it
refuses, whatever program opens it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING

from .errors import StoreError

if TYPE_CHECKING:
    import sqlite_utils

# Deleting a meeting is the one way rows leave the log, and it has one narrow door: a DELETE of a meeting's
# rows (segments, closures, head, the meeting itself) is allowed only once that meeting has a tombstone in
# `meeting_deletions`, which `TranscriptLog.delete_meeting` inserts first, in the same transaction. So every
# other DELETE (a plain `DELETE FROM segments`, a bug, a hand on the file with the sqlite3 shell) is refused
# as before, and no row can leave without a signed tombstone that stays forever (its own triggers refuse to
# change or remove it) and names how many rows the meeting held and where its chain ended. A rolled-back
# deletion takes its tombstone with it, so nothing is left half-deleted. Chosen over a bypass flag (a
# temporary table or a settings row that the deletion sets and clears): a flag left set by a crash or by
# another connection would open every meeting at once, where a tombstone opens only its own meeting, and
# only a meeting that is, by then, deleted for good (new segments under its id are refused).
_NO_TOMBSTONE = ("NOT EXISTS (SELECT 1 FROM meeting_deletions d WHERE d.tenant = OLD.tenant "
                 "AND d.meeting_id = OLD.meeting_id)")

_MEETING_HELD = ("EXISTS (SELECT 1 FROM meetings m WHERE m.tenant = NEW.tenant "
                 "AND m.meeting_id = NEW.meeting_id)")
_OF_NEW = "tenant = NEW.tenant AND meeting_id = NEW.meeting_id"

#: The SQL function `TranscriptLog` registers on its own connection (store/lifecycle.py,
#: `MeetingLifecycle.tombstone_signed`): 1 when the deleting process's receipt key signed the tombstone.
TOMBSTONE_SIGNED_FUNCTION = "meetmem_tombstone_signed"

SCHEMA_TRIGGERS = [
    # The log is append-only: the database refuses to change or remove a row, whoever asks.
    """CREATE TRIGGER IF NOT EXISTS segments_refuse_update BEFORE UPDATE ON segments
       BEGIN SELECT RAISE(ABORT, 'transcript log is append-only: UPDATE refused'); END""",
    f"""CREATE TRIGGER IF NOT EXISTS segments_refuse_delete BEFORE DELETE ON segments WHEN {_NO_TOMBSTONE}
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
    f"""CREATE TRIGGER IF NOT EXISTS meetings_refuse_delete BEFORE DELETE ON meetings WHEN {_NO_TOMBSTONE}
       BEGIN SELECT RAISE(ABORT, 'meetings are never deleted from the log'); END""",
    """CREATE TRIGGER IF NOT EXISTS closures_refuse_update BEFORE UPDATE ON meeting_closures
       BEGIN SELECT RAISE(ABORT, 'meeting closures are append-only: UPDATE refused'); END""",
    f"""CREATE TRIGGER IF NOT EXISTS closures_refuse_delete BEFORE DELETE ON meeting_closures WHEN {_NO_TOMBSTONE}
       BEGIN SELECT RAISE(ABORT, 'meeting closures are append-only: DELETE refused'); END""",
    # A meeting's head only moves forward, and is never removed: a log cut short no longer reaches it.
    """CREATE TRIGGER IF NOT EXISTS heads_refuse_going_back BEFORE UPDATE ON meeting_heads
       WHEN NEW.head_pos <= OLD.head_pos OR NEW.tenant != OLD.tenant OR NEW.meeting_id != OLD.meeting_id
       BEGIN SELECT RAISE(ABORT, 'a meeting head only moves forward: UPDATE refused'); END""",
    f"""CREATE TRIGGER IF NOT EXISTS heads_refuse_delete BEFORE DELETE ON meeting_heads WHEN {_NO_TOMBSTONE}
       BEGIN SELECT RAISE(ABORT, 'meeting heads are never deleted: DELETE refused'); END""",
    # Tombstones are kept forever, as they were signed.
    """CREATE TRIGGER IF NOT EXISTS deletions_refuse_update BEFORE UPDATE ON meeting_deletions
       BEGIN SELECT RAISE(ABORT, 'tombstones are kept as signed: UPDATE refused'); END""",
    """CREATE TRIGGER IF NOT EXISTS deletions_refuse_delete BEFORE DELETE ON meeting_deletions
       BEGIN SELECT RAISE(ABORT, 'tombstones are kept forever: DELETE refused'); END""",
    # A tombstone opens its meeting's rows to DELETE, so writing one is guarded as far as the database can
    # (issue 30): an unsigned one is refused outright; one for a meeting held here must describe its rows as
    # stored (their count, the head), and must pass `meetmem_tombstone_signed`, which only a meetmem process
    # registers, on its own connection, and which answers 1 only while `delete_meeting` signs that very
    # tombstone with its receipt key. Anything else writing to the file (the sqlite3 shell, a script) has no
    # such function, so its INSERT fails. A tombstone for a meeting not held here (`meetmem migrate` bringing
    # another database's deletions) removes nothing and needs only its form. What the database cannot do is
    # check the HMAC itself (the key stays outside it), so a program that defines the function itself gets
    # as far as a program that drops the trigger; `meetmem verify` checks every tombstone's signature.
    """CREATE TRIGGER IF NOT EXISTS deletions_refuse_unsigned BEFORE INSERT ON meeting_deletions
       WHEN NEW.version IS NOT 1 OR length(NEW.sig) != 64 OR NEW.sig GLOB '*[^0-9a-f]*'
         OR length(NEW.key_id) != 12 OR NEW.key_id GLOB '*[^0-9a-f]*'
       BEGIN SELECT RAISE(ABORT, 'a tombstone must carry its key id and HMAC-SHA256 signature: INSERT refused');
       END""",
    f"""CREATE TRIGGER IF NOT EXISTS deletions_match_the_meeting BEFORE INSERT ON meeting_deletions
       WHEN {_MEETING_HELD} AND (
         NEW.segments IS NOT (SELECT COUNT(*) FROM segments WHERE {_OF_NEW})
         OR NEW.head_pos IS NOT COALESCE((SELECT head_pos FROM meeting_heads WHERE {_OF_NEW}), -1)
         OR NEW.head_hash IS NOT COALESCE((SELECT head_hash FROM meeting_heads WHERE {_OF_NEW}), '{"0" * 64}'))
       BEGIN SELECT RAISE(ABORT, 'a tombstone must name its meeting''s rows and head as stored: INSERT refused');
       END""",
    f"""CREATE TRIGGER IF NOT EXISTS deletions_need_the_key BEFORE INSERT ON meeting_deletions
       WHEN {_MEETING_HELD} AND NOT {TOMBSTONE_SIGNED_FUNCTION}(NEW.tenant, NEW.meeting_id, NEW.deleted_at,
         NEW.reason, NEW.segments, NEW.head_pos, NEW.head_hash, NEW.key_id, NEW.sig, NEW.version)
       BEGIN SELECT RAISE(ABORT, 'a tombstone must be signed by the deleting server''s key: INSERT refused'); END""",
]

_SPEAKER_NAME_TRIGGERS = [
    """CREATE TRIGGER IF NOT EXISTS speaker_names_refuse_update BEFORE UPDATE ON speaker_names
       BEGIN SELECT RAISE(ABORT, 'speaker names are append-only: UPDATE refused'); END""",
    f"""CREATE TRIGGER IF NOT EXISTS speaker_names_refuse_delete BEFORE DELETE ON speaker_names WHEN {_NO_TOMBSTONE}
       BEGIN SELECT RAISE(ABORT, 'speaker names are append-only: DELETE refused'); END""",
]

#: Triggers whose body changed since a database could have been made: dropped and made again on open.
_REMADE_TRIGGERS = ("segments_refuse_delete", "meetings_refuse_delete", "closures_refuse_delete",
                    "heads_refuse_delete")



def _release_2026_12(db: sqlite_utils.Database) -> None:
    """Step 1: the schema of the release that numbered its steps, from nothing or from any database an earlier
    release made (every statement tolerates what is there already: tables, columns and triggers missing
    are made; triggers whose body changed are made again)."""
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
    if "meeting_deletions" not in db.table_names():
        # Tombstones (store/tombstones.py): one per deleted meeting, signed, kept forever.
        db.execute(
            "CREATE TABLE meeting_deletions (tenant TEXT NOT NULL, meeting_id TEXT NOT NULL, deleted_at TEXT NOT NULL, "
            "reason TEXT NOT NULL, segments INTEGER NOT NULL, head_pos INTEGER NOT NULL, head_hash TEXT NOT NULL, "
            "key_id TEXT NOT NULL, sig TEXT NOT NULL, version INTEGER NOT NULL, PRIMARY KEY (tenant, meeting_id))"
        )
    # Each tenant's retention in days (store/retention.py), 0: keep forever.
    db.execute("CREATE TABLE IF NOT EXISTS retention_policy (tenant TEXT PRIMARY KEY, days INTEGER NOT NULL, "
               "set_at TEXT NOT NULL)")
    _derived_tables(db)
    # Speaker names (store/speaker_map.py): versions appended, never rewritten; removed with the meeting only.
    db.execute("CREATE TABLE IF NOT EXISTS speaker_names (tenant TEXT NOT NULL, meeting_id TEXT NOT NULL, "
               "label TEXT NOT NULL, version INTEGER NOT NULL, name TEXT, source TEXT NOT NULL, "
               "set_at TEXT NOT NULL, PRIMARY KEY (tenant, meeting_id, label, version))")
    # Kept audio (store/audio.py): each chunk's row (its bytes are a file named by its sha256), and the policy.
    db.execute("CREATE TABLE IF NOT EXISTS meeting_audio (tenant TEXT NOT NULL, meeting_id TEXT NOT NULL, "
               "device_id TEXT NOT NULL, chunk_seq INTEGER NOT NULL, start REAL NOT NULL, duration REAL NOT NULL, "
               "sha256 TEXT NOT NULL, bytes INTEGER NOT NULL, codec TEXT NOT NULL, added_at TEXT NOT NULL, "
               "PRIMARY KEY (tenant, meeting_id, device_id, chunk_seq))")
    db.execute("CREATE TABLE IF NOT EXISTS audio_policy (tenant TEXT NOT NULL, meeting_id TEXT NOT NULL, "
               "keep INTEGER NOT NULL, set_at TEXT NOT NULL, PRIMARY KEY (tenant, meeting_id))")
    # Ask sessions (answers/sessions.py): the rounds of a conversation about a meeting.
    db.execute("CREATE TABLE IF NOT EXISTS ask_turns (tenant TEXT NOT NULL, meeting_id TEXT NOT NULL, "
               "session_id TEXT NOT NULL, n INTEGER NOT NULL, question TEXT NOT NULL, answer TEXT NOT NULL, "
               "evidence TEXT NOT NULL, asked_at TEXT NOT NULL, PRIMARY KEY (tenant, meeting_id, session_id, n))")
    # API tokens (cloud/auth.py): only a token's hash is stored.
    db.execute("CREATE TABLE IF NOT EXISTS api_tokens (token_id TEXT PRIMARY KEY, token_hash TEXT NOT NULL UNIQUE, "
               "tenant TEXT NOT NULL, created_at TEXT NOT NULL, revoked_at TEXT, label TEXT, expires_at TEXT)")
    if "expires_at" not in {row[1] for row in db.execute("PRAGMA table_info(api_tokens)").fetchall()}:
        db.execute("ALTER TABLE api_tokens ADD COLUMN expires_at TEXT")  # a database from before tokens expired
    _migrate_meeting_metadata(db)
    db.execute("CREATE TABLE IF NOT EXISTS segment_vectors (segment_id TEXT NOT NULL, model TEXT NOT NULL, "
               "vector BLOB NOT NULL, PRIMARY KEY (segment_id, model))")  # the vector cache (store/index/search.py)


#: Webhook endpoints and their deliveries (store/webhooks.py, issue 35). The SQL is the same on PostgreSQL
#: (store/pg/migrations/versions/b35w01_webhooks.py).
WEBHOOK_TABLES = (
    "CREATE TABLE IF NOT EXISTS webhooks (webhook_id TEXT PRIMARY KEY, tenant TEXT NOT NULL, url TEXT NOT NULL, "
    "events TEXT NOT NULL, secret TEXT NOT NULL, created_at TEXT NOT NULL, description TEXT)",
    "CREATE INDEX IF NOT EXISTS webhooks_tenant ON webhooks (tenant)",
    "CREATE TABLE IF NOT EXISTS webhook_deliveries (delivery_id TEXT PRIMARY KEY, tenant TEXT NOT NULL, "
    "webhook_id TEXT NOT NULL, event TEXT NOT NULL, meeting_id TEXT NOT NULL, event_key TEXT NOT NULL, "
    "payload TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL, next_attempt_at TEXT NOT NULL, "
    "claimed_until TEXT, created_at TEXT NOT NULL, last_status INTEGER, last_error TEXT, delivered_at TEXT, "
    "UNIQUE (webhook_id, event, meeting_id, event_key))",
    "CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at)",
    "CREATE INDEX IF NOT EXISTS webhook_deliveries_tenant ON webhook_deliveries (tenant, created_at)",
)


def _webhooks(db: sqlite_utils.Database) -> None:
    for statement in WEBHOOK_TABLES:
        db.execute(statement)


#: The SQLite schema's numbered steps, oldest first: the database's `PRAGMA user_version` is how many it has
#: applied. A change of schema is a new step appended here (never an edit of one that shipped); opening a
#: database, or `meetmem db upgrade --db FILE`, applies the steps it lacks, in one transaction.
SQLITE_STEPS: tuple[Callable[[sqlite_utils.Database], None], ...] = (_release_2026_12, _webhooks)
SCHEMA_VERSION = len(SQLITE_STEPS)


def schema_version(conn: sqlite3.Connection) -> int:
    """How many of `SQLITE_STEPS` the database has applied (0: made before the steps were numbered, or new)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def upgrade_schema(conn: sqlite3.Connection) -> tuple[int, int]:
    """Apply the steps the database lacks (inside the caller's write transaction: all of them or none), and
    make the refusals again (a trigger dropped by hand, or one of an older body, comes back on the next
    open); returns the version before and after.

    Raises:
        StoreError: a newer meetmem upgraded the database past what this one knows.
    """
    before = schema_version(conn)
    if before > SCHEMA_VERSION:
        raise StoreError(f"the database is at schema version {before}, this meetmem knows {SCHEMA_VERSION}: a newer "
                         "meetmem upgraded it; run that version (or newer)")
    if before < SCHEMA_VERSION:
        import sqlite_utils  # the steps' table helpers; a database already up to date opens without them

        db = sqlite_utils.Database(conn)
        for step in SQLITE_STEPS[before:]:
            step(db)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    for name in _REMADE_TRIGGERS:
        row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", (name,)).fetchone()
        if row is not None and "meeting_deletions" not in row[0]:
            conn.execute(f"DROP TRIGGER {name}")
    for statement in (*SCHEMA_TRIGGERS, *_SPEAKER_NAME_TRIGGERS):
        conn.execute(statement)
    return before, SCHEMA_VERSION


#: The meeting's metadata (title, start with its time zone, participants as a JSON list), added in place to
#: a database made before they existed: `ALTER TABLE ... ADD COLUMN` keeps every stored row.
METADATA_COLUMNS = (("title", "TEXT"), ("started_at", "TEXT"), ("participants", "TEXT"))


def _migrate_meeting_metadata(db: sqlite_utils.Database) -> None:
    have = {row[1] for row in db.execute("PRAGMA table_info(meetings)").fetchall()}
    for name, kind in METADATA_COLUMNS:
        if name not in have:
            db.execute(f"ALTER TABLE meetings ADD COLUMN {name} {kind}")


#: Bumped whenever the derived tables (summaries, ledger) change shape: older ones are dropped and remade from
#: the log when next asked for (derived rows are not migrated).
DERIVED_VERSION = 2


def _derived_tables(db: sqlite_utils.Database) -> None:
    """The tables of store/derived.py: L1 sections, the meeting's digest (L2, how far it reaches), the ledger."""
    db.execute("CREATE TABLE IF NOT EXISTS derived_schema (name TEXT PRIMARY KEY, version INTEGER)")
    row = db.execute("SELECT version FROM derived_schema WHERE name = 'digests'").fetchone()
    if row is None or row[0] != DERIVED_VERSION:
        for table in ("summary_sections", "meeting_digests", "ledger_items"):
            db.execute(f"DROP TABLE IF EXISTS {table}")
        db.execute("INSERT OR REPLACE INTO derived_schema VALUES ('digests', ?)", (DERIVED_VERSION,))
    db.execute(
        "CREATE TABLE IF NOT EXISTS summary_sections (tenant TEXT NOT NULL, meeting_id TEXT NOT NULL, "
        "section_key TEXT NOT NULL, idx INTEGER NOT NULL, start REAL NOT NULL, end REAL NOT NULL, "
        "closed_by TEXT NOT NULL, segment_ids TEXT NOT NULL, backend TEXT NOT NULL, lines TEXT NOT NULL, "
        "note TEXT, PRIMARY KEY (tenant, meeting_id, section_key))")
    db.execute(
        "CREATE TABLE IF NOT EXISTS meeting_digests (tenant TEXT NOT NULL, meeting_id TEXT NOT NULL, "
        "through_pos INTEGER NOT NULL, final INTEGER NOT NULL, open_from REAL, l2 TEXT NOT NULL, "
        "l2_backend TEXT NOT NULL, l2_note TEXT, made_at TEXT NOT NULL, "
        "ledger_notes TEXT NOT NULL DEFAULT '[]', PRIMARY KEY (tenant, meeting_id))")
    db.execute(
        "CREATE TABLE IF NOT EXISTS ledger_items (tenant TEXT NOT NULL, meeting_id TEXT NOT NULL, "
        "ord INTEGER NOT NULL, item_id TEXT NOT NULL, kind TEXT NOT NULL, item TEXT NOT NULL, "
        "PRIMARY KEY (tenant, meeting_id, ord))")
