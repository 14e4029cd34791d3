"""Webhook endpoints and the durable queue of their deliveries (store/webhooks.py, issue 35).

The same tables as SQLite's (store/schema.py, `WEBHOOK_TABLES`), under row-level security on `app.tenant`:
a tenant reads and writes its own endpoints and deliveries only; the sender reads every tenant's due
deliveries (`app.tenant` '*', read only) and records each attempt in that delivery's tenant.

Revision ID: b35w01_webhooks
"""

from __future__ import annotations

from alembic import op

from meetmem.store.schema import WEBHOOK_TABLES

revision = "b35w01_webhooks"
down_revision = "b30t01_tombstone_checks"
branch_labels = None
depends_on = None

APP_ROLE = "meetmem_app"
_TENANT = "current_setting('app.tenant', true)"
TABLES = ("webhooks", "webhook_deliveries")

UPGRADE = [
    *(statement.replace("CREATE TABLE IF NOT EXISTS", "CREATE TABLE").replace("INTEGER", "bigint")
      for statement in WEBHOOK_TABLES),
    f"GRANT SELECT, INSERT, UPDATE, DELETE ON webhooks, webhook_deliveries TO {APP_ROLE}",
    *[stmt for t in TABLES for stmt in (
        f"ALTER TABLE {t} ENABLE ROW LEVEL SECURITY",
        f"ALTER TABLE {t} FORCE ROW LEVEL SECURITY",
        f"CREATE POLICY {t}_tenant_read ON {t} FOR SELECT USING (tenant = {_TENANT} OR {_TENANT} = '*')",
        f"CREATE POLICY {t}_tenant_insert ON {t} FOR INSERT WITH CHECK (tenant = {_TENANT})",
        f"CREATE POLICY {t}_tenant_update ON {t} FOR UPDATE USING (tenant = {_TENANT}) "
        f"WITH CHECK (tenant = {_TENANT})",
        f"CREATE POLICY {t}_tenant_delete ON {t} FOR DELETE USING (tenant = {_TENANT})",
    )],
]
DOWNGRADE = ["DROP TABLE IF EXISTS webhook_deliveries", "DROP TABLE IF EXISTS webhooks"]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
