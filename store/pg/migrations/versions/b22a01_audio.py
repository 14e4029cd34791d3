"""A meeting's kept audio in PostgreSQL (store/pg/audio.py): the chunks' bytes in the database, beside the log.

API processes on PostgreSQL hold nothing of their own and may run on other machines, so the audio cannot be
files beside one of them. The bytes go in `bytea` rows, not large objects:

- a chunk is a row like any other here: under the same row-level security on `app.tenant` (large objects
  live in `pg_largeobject`, which has no row security, only per-object grants), removed by the same DELETE
  that removes its row (a large object outlives the row naming it until someone unlinks it), and copied by
  `pg_dump`, replication and `meetmem migrate` as rows are;
- `STORAGE EXTERNAL` keeps the bytes out of line and uncompressed (Opus does not compress), so a byte
  range is read with `substring()`, which fetches only the TOAST slices it covers: an HTTP Range read of
  64 KiB reads 64 KiB, whatever the chunk's size;
- a chunk of the edge is a minute of Opus (about 120-240 KiB); a whole file attached by the CLI is some MiB an
  hour: far inside bytea's 1 GiB.

The database itself holds every stored chunk to its recorded sha256 and size (CHECK constraints), and the
audio never touches the log, so deleting it leaves every hash chain as it was.

- `meeting_audio`: one row per chunk, idempotent by `(device_id, chunk_seq)` within its meeting, as on SQLite.
- `audio_policy`: whether uploaded audio is kept, per meeting or (meeting_id '') per tenant.
- `meeting_audio_rendered`: a stretch of a meeting's audio made from its chunks for the player (derived,
  a cache shared by every process); it goes with the meeting's chunks, by a trigger on their DELETE.

`meetmem_delete_meeting` (0001) deletes `meeting_audio` and `audio_policy` rows of the meeting it deletes,
under its tombstone; so do retention's deletions, which go through it.

Revision ID: b22a01_audio
"""

from __future__ import annotations

from alembic import op

revision = "b22a01_audio"
down_revision = "b21k01_speaker_names"
branch_labels = None
depends_on = None

APP_ROLE = "meetmem_app"
_TENANT = "current_setting('app.tenant', true)"
TABLES = ("meeting_audio", "audio_policy", "meeting_audio_rendered")

UPGRADE = [
    """
    CREATE TABLE meeting_audio (
        tenant text NOT NULL,
        meeting_id text NOT NULL,
        device_id text NOT NULL,
        chunk_seq bigint NOT NULL CHECK (chunk_seq >= 0),
        start double precision NOT NULL CHECK (start >= 0),
        duration double precision NOT NULL,
        sha256 text NOT NULL,
        bytes bigint NOT NULL,
        codec text NOT NULL,
        added_at text NOT NULL,
        data bytea NOT NULL,
        PRIMARY KEY (tenant, meeting_id, device_id, chunk_seq),
        CHECK (octet_length(data) = bytes),
        CHECK (sha256 = encode(sha256(data), 'hex'))
    )
    """,
    "ALTER TABLE meeting_audio ALTER COLUMN data SET STORAGE EXTERNAL",
    "CREATE INDEX meeting_audio_by_start ON meeting_audio (tenant, meeting_id, start, device_id, chunk_seq)",
    """
    CREATE TABLE audio_policy (
        tenant text NOT NULL,
        meeting_id text NOT NULL,
        keep boolean NOT NULL,
        set_at text NOT NULL,
        PRIMARY KEY (tenant, meeting_id)
    )
    """,
    """
    CREATE TABLE meeting_audio_rendered (
        tenant text NOT NULL,
        meeting_id text NOT NULL,
        render_key text NOT NULL,
        bytes bigint NOT NULL,
        made_at text NOT NULL,
        data bytea NOT NULL,
        PRIMARY KEY (tenant, meeting_id, render_key),
        CHECK (octet_length(data) = bytes)
    )
    """,
    "ALTER TABLE meeting_audio_rendered ALTER COLUMN data SET STORAGE EXTERNAL",
    # What is made from a meeting's chunks goes with them: removing the audio alone, or the meeting.
    """CREATE FUNCTION meetmem_rendered_audio_follow() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          DELETE FROM meeting_audio_rendered r USING (SELECT DISTINCT tenant, meeting_id FROM gone) g
            WHERE r.tenant = g.tenant AND r.meeting_id = g.meeting_id;
          RETURN NULL;
        END $$""",
    "CREATE TRIGGER meeting_audio_take_rendered AFTER DELETE ON meeting_audio REFERENCING OLD TABLE AS gone "
    "FOR EACH STATEMENT EXECUTE FUNCTION meetmem_rendered_audio_follow()",
    # A stored chunk is its bytes: never rewritten (a device's chunk numbers are not reused).
    """CREATE TRIGGER meeting_audio_refuse_update BEFORE UPDATE ON meeting_audio FOR EACH ROW
        EXECUTE FUNCTION meetmem_refuse('a stored audio chunk never changes: UPDATE refused')""",
    # The service keeps and deletes audio on its own (a privacy request): it may DELETE chunks, never UPDATE.
    f"GRANT SELECT, INSERT, DELETE ON meeting_audio TO {APP_ROLE}",
    f"GRANT SELECT, INSERT, UPDATE, DELETE ON audio_policy TO {APP_ROLE}",
    f"GRANT SELECT, INSERT, DELETE ON meeting_audio_rendered TO {APP_ROLE}",
    *[stmt for t in TABLES for stmt in (
        f"ALTER TABLE {t} ENABLE ROW LEVEL SECURITY",
        f"ALTER TABLE {t} FORCE ROW LEVEL SECURITY",
        f"CREATE POLICY {t}_tenant_read ON {t} FOR SELECT USING (tenant = {_TENANT} OR {_TENANT} = '*')",
        f"CREATE POLICY {t}_tenant_insert ON {t} FOR INSERT WITH CHECK (tenant = {_TENANT})",
        f"CREATE POLICY {t}_tenant_update ON {t} FOR UPDATE USING (tenant = {_TENANT}) "
        f"WITH CHECK (tenant = {_TENANT})",
        # `meetmem_delete_meeting` runs as the owner, whom FORCE holds to these policies too: without a DELETE
        # policy its DELETE would see no rows and silently leave the audio.
        f"CREATE POLICY {t}_tenant_delete ON {t} FOR DELETE USING (tenant = {_TENANT})",
    )],
]

DOWNGRADE = [
    "DROP TRIGGER IF EXISTS meeting_audio_take_rendered ON meeting_audio",
    "DROP TABLE IF EXISTS meeting_audio_rendered, audio_policy, meeting_audio",
    "DROP FUNCTION IF EXISTS meetmem_rendered_audio_follow()",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
