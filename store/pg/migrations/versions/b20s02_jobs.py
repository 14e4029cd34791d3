"""The job queue: procrastinate's tables and functions (`meetmem worker` runs the jobs; cloud/jobs.py).

The schema is the one the installed procrastinate ships (`SchemaManager.get_schema()`), so this revision
pins nothing of its own; a later procrastinate that changes its schema ships migration files, applied by a
revision after this one.

Revision ID: b20s02_jobs
"""

from __future__ import annotations

from alembic import op

revision = "b20s02_jobs"
down_revision = "b20s01_search"
branch_labels = None
depends_on = None

DOWNGRADE = [
    "DROP TABLE IF EXISTS procrastinate_events, procrastinate_periodic_defers, procrastinate_jobs, "
    "procrastinate_workers CASCADE",
    "DROP TYPE IF EXISTS procrastinate_job_status, procrastinate_job_event_type CASCADE",
]


def schema_sql() -> str:
    from procrastinate.schema import SchemaManager

    return SchemaManager.get_schema()


def upgrade() -> None:
    op.execute(schema_sql())


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
