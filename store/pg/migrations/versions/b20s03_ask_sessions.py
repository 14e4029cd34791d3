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
        PRIMARY KEY (tenant, meeting_id, session_id, round),
        FOREIGN KEY (tenant, meeting_id) REFERENCES meetings (tenant, meeting_id) ON DELETE CASCADE
    )
    """,
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
    op.execute("DROP TABLE IF EXISTS ask_turns")
