"""Ask sessions in the database: the earlier rounds of a conversation about a meeting, shared by every API
process (cloud/sessions.py `PgSessionStore`), and removed with their meeting.

Revision ID: b20s03_ask_sessions
"""

from __future__ import annotations

from alembic import op

revision = "b20s03_ask_sessions"
down_revision = "b20s02_jobs"
branch_labels = None
depends_on = None

APP_ROLE = "meetmem_app"
_TENANT = "current_setting('app.tenant', true)"

UPGRADE = [
    """
    CREATE TABLE ask_turns (
        tenant text NOT NULL,
        meeting_id text NOT NULL,
        session_id text NOT NULL,
        round integer NOT NULL,
        question text NOT NULL,
        answer text NOT NULL,
        evidence jsonb NOT NULL DEFAULT '[]',
        asked_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant, meeting_id, session_id, round)
    )
    """,
    # Rounds go with their meeting (not a foreign key: see b20s01_search on TRUNCATE).
    """CREATE FUNCTION meetmem_ask_turns_follow() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          DELETE FROM ask_turns a USING gone g WHERE a.tenant = g.tenant AND a.meeting_id = g.meeting_id;
          RETURN NULL;
        END $$""",
    "CREATE TRIGGER meetings_take_ask_turns AFTER DELETE ON meetings REFERENCING OLD TABLE AS gone "
    "FOR EACH STATEMENT EXECUTE FUNCTION meetmem_ask_turns_follow()",
    f"GRANT SELECT, INSERT, DELETE ON ask_turns TO {APP_ROLE}",
    "ALTER TABLE ask_turns ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE ask_turns FORCE ROW LEVEL SECURITY",
    f"CREATE POLICY ask_turns_tenant ON ask_turns USING (tenant = {_TENANT} OR {_TENANT} = '*') "
    f"WITH CHECK (tenant = {_TENANT})",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS meetings_take_ask_turns ON meetings")
    op.execute("DROP FUNCTION IF EXISTS meetmem_ask_turns_follow()")
    op.execute("DROP TABLE IF EXISTS ask_turns")
