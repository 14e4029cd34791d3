"""The speaker map on PostgreSQL (store/speaker_map.py): the names people gave a meeting's speaker labels,
every version kept, with the guarantees SQLite's triggers give and the ones the log has here.

- append-only by the database: UPDATE and TRUNCATE are refused whoever asks, and a DELETE unless the meeting
  has a tombstone (0001's trigger functions); the service's role may only SELECT and INSERT;
- removed with its meeting: `meetmem_delete_meeting` deletes the meeting's row last, under its tombstone,
  and a trigger on that DELETE takes the meeting's names with it (as the function's owner, so the service
  needs no DELETE right of its own);
- row-level security per tenant (FORCE, so the owner obeys it too), as on every tenant-keyed table.

Revision ID: b21k01_speaker_names
"""

from __future__ import annotations

from alembic import op

revision = "b21k01_speaker_names"
down_revision = "b20s02_jobs"
branch_labels = None
depends_on = None

APP_ROLE = "meetmem_app"
_TENANT = "current_setting('app.tenant', true)"

UPGRADE = [
    """
    CREATE TABLE speaker_names (
        tenant text NOT NULL,
        meeting_id text NOT NULL,
        label text NOT NULL,
        version integer NOT NULL CHECK (version >= 1),
        name text,
        source text NOT NULL,
        set_at text NOT NULL,
        PRIMARY KEY (tenant, meeting_id, label, version)
    )
    """,
    """CREATE TRIGGER speaker_names_refuse_update BEFORE UPDATE ON speaker_names FOR EACH ROW
        EXECUTE FUNCTION meetmem_refuse('speaker names are append-only: UPDATE refused')""",
    """CREATE TRIGGER speaker_names_refuse_delete BEFORE DELETE ON speaker_names FOR EACH ROW
        EXECUTE FUNCTION meetmem_refuse_untombstoned('speaker names are append-only: DELETE refused')""",
    """CREATE TRIGGER speaker_names_refuse_truncate BEFORE TRUNCATE ON speaker_names FOR EACH STATEMENT
        EXECUTE FUNCTION meetmem_refuse('speaker names are never truncated: TRUNCATE refused')""",
    # Names go with their meeting (not a foreign key: see b20s01_search on TRUNCATE). The meeting's row is
    # the last thing `meetmem_delete_meeting` deletes, after its tombstone, so the refusal above lets these go.
    """CREATE FUNCTION meetmem_speaker_names_follow() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          DELETE FROM speaker_names n USING gone g WHERE n.tenant = g.tenant AND n.meeting_id = g.meeting_id;
          RETURN NULL;
        END $$""",
    "CREATE TRIGGER meetings_take_speaker_names AFTER DELETE ON meetings REFERENCING OLD TABLE AS gone "
    "FOR EACH STATEMENT EXECUTE FUNCTION meetmem_speaker_names_follow()",
    f"GRANT SELECT, INSERT ON speaker_names TO {APP_ROLE}",
    "ALTER TABLE speaker_names ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE speaker_names FORCE ROW LEVEL SECURITY",
    f"CREATE POLICY speaker_names_tenant_read ON speaker_names FOR SELECT "
    f"USING (tenant = {_TENANT} OR {_TENANT} = '*')",
    f"CREATE POLICY speaker_names_tenant_insert ON speaker_names FOR INSERT WITH CHECK (tenant = {_TENANT})",
    # Only the deletion above uses it (the service's role has no DELETE right); without a policy the rows
    # would be invisible to that DELETE and silently stay.
    f"CREATE POLICY speaker_names_tenant_delete ON speaker_names FOR DELETE USING (tenant = {_TENANT})",
]

DOWNGRADE = [
    "DROP TRIGGER IF EXISTS meetings_take_speaker_names ON meetings",
    "DROP FUNCTION IF EXISTS meetmem_speaker_names_follow()",
    "DROP TABLE IF EXISTS speaker_names",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
