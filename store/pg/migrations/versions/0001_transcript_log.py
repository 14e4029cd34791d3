"""The transcript log: meetings, segments, closures, heads, tombstones and retention, append-only by the database.

What the SQLite schema (store/schema.py) guarantees with triggers, PostgreSQL guarantees three times over:

- grants: the service's role `meetmem_app` may SELECT and INSERT the log, UPDATE only a meeting's metadata
  columns and its head (forward only), and DELETE nothing;
- triggers: UPDATE of a segment, closure or tombstone is refused whoever asks (the owner and a superuser
  too), and so is TRUNCATE; a DELETE of a meeting's rows is refused unless the meeting has a tombstone;
- the one way out is `meetmem_delete_meeting(...)`, a SECURITY DEFINER function that writes the tombstone
  (signed by the service, whose key stays outside the database) and then deletes, in one transaction;
- row-level security on every tenant-keyed table (FORCE, so the tables' owner obeys it too): a session
  sees the rows of the tenant named by `SET app.tenant = '...'`, and nothing when none is set. `'*'`
  reads every tenant (the reaper, the operator's listings) and writes none.

Revision ID: 0001
Revises:
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

APP_ROLE = "meetmem_app"
DERIVED_TABLES = ("summary_sections", "meeting_digests", "ledger_items", "ask_turns")
TENANT_TABLES = ("meetings", "segments", "meeting_closures", "meeting_heads", "meeting_deletions",
                 "retention_policy", *DERIVED_TABLES)

_TENANT = "current_setting('app.tenant', true)"

STATEMENTS = [
    f"""DO $$ BEGIN
          IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
            CREATE ROLE {APP_ROLE} LOGIN;
          END IF;
        END $$""",
    """CREATE TABLE meetings (
        ord bigint GENERATED ALWAYS AS IDENTITY,
        tenant text NOT NULL, meeting_id text NOT NULL, created_at text NOT NULL,
        title text, started_at text, participants text,
        PRIMARY KEY (tenant, meeting_id))""",
    """CREATE TABLE segments (
        segment_id text PRIMARY KEY,
        tenant text NOT NULL, meeting_id text NOT NULL, device_id text NOT NULL, seq bigint NOT NULL,
        start double precision NOT NULL, "end" double precision NOT NULL, text text NOT NULL,
        speaker text, lang text, raw_text text, confidence double precision, supersedes text,
        received_at text NOT NULL, chain_pos bigint NOT NULL, prev_hash text NOT NULL, hash text NOT NULL,
        UNIQUE (tenant, meeting_id, device_id, seq),
        UNIQUE (tenant, meeting_id, chain_pos))""",
    "CREATE INDEX segments_by_time ON segments (tenant, meeting_id, start, device_id, seq)",
    "CREATE INDEX segments_by_supersedes ON segments (tenant, meeting_id, supersedes) WHERE supersedes IS NOT NULL",
    """CREATE TABLE meeting_closures (
        ord bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        tenant text NOT NULL, meeting_id text NOT NULL, closed_at text NOT NULL, reason text NOT NULL,
        through_pos bigint NOT NULL)""",
    "CREATE INDEX closures_by_meeting ON meeting_closures (tenant, meeting_id, through_pos)",
    """CREATE TABLE meeting_heads (
        tenant text NOT NULL, meeting_id text NOT NULL, head_pos bigint NOT NULL, head_hash text NOT NULL,
        PRIMARY KEY (tenant, meeting_id))""",
    """CREATE TABLE meeting_deletions (
        ord bigint GENERATED ALWAYS AS IDENTITY,
        tenant text NOT NULL, meeting_id text NOT NULL, deleted_at text NOT NULL, reason text NOT NULL,
        segments bigint NOT NULL, head_pos bigint NOT NULL, head_hash text NOT NULL, key_id text NOT NULL,
        sig text NOT NULL, version integer NOT NULL,
        PRIMARY KEY (tenant, meeting_id))""",
    """CREATE TABLE retention_policy (
        tenant text PRIMARY KEY, days integer NOT NULL CHECK (days >= 0), set_at text NOT NULL)""",
    # -- beside the log: API tokens, and the derived digests (rebuilt from the log at will) ---------------
    # Tokens are found by their hash before the tenant is known, so they carry no row security: the hash is
    # the credential, and the service's role may add tokens and revoke them, never change or remove one.
    """CREATE TABLE api_tokens (
        token_id text PRIMARY KEY, token_hash text NOT NULL UNIQUE, tenant text NOT NULL, created_at text NOT NULL,
        revoked_at text, label text, expires_at text)""",
    """CREATE TABLE summary_sections (
        tenant text NOT NULL, meeting_id text NOT NULL, section_key text NOT NULL, idx integer NOT NULL,
        start double precision NOT NULL, "end" double precision NOT NULL, closed_by text NOT NULL,
        segment_ids text NOT NULL, backend text NOT NULL, lines text NOT NULL, note text,
        PRIMARY KEY (tenant, meeting_id, section_key))""",
    """CREATE TABLE meeting_digests (
        tenant text NOT NULL, meeting_id text NOT NULL, through_pos bigint NOT NULL, final integer NOT NULL,
        open_from double precision, l2 text NOT NULL, l2_backend text NOT NULL, l2_note text, made_at text NOT NULL,
        ledger_notes text NOT NULL DEFAULT '[]', PRIMARY KEY (tenant, meeting_id))""",
    """CREATE TABLE ledger_items (
        tenant text NOT NULL, meeting_id text NOT NULL, ord integer NOT NULL, item_id text NOT NULL,
        kind text NOT NULL, item text NOT NULL, PRIMARY KEY (tenant, meeting_id, ord))""",
    # The rounds of multi-turn ask sessions, so any API process continues a conversation another began. The
    # evidence is kept as segment ids and reasons: the segments themselves are read from the log.
    """CREATE TABLE ask_turns (
        tenant text NOT NULL, meeting_id text NOT NULL, session_id text NOT NULL, n integer NOT NULL,
        question text NOT NULL, answer text NOT NULL, evidence text NOT NULL, asked_at text NOT NULL,
        PRIMARY KEY (tenant, meeting_id, session_id, n))""",
    # -- triggers: the database refuses to change history, whoever asks ---------------------------------
    """CREATE FUNCTION meetmem_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'restrict_violation';
        END $$""",
    """CREATE FUNCTION meetmem_refuse_untombstoned() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NOT EXISTS (SELECT 1 FROM meeting_deletions d
                         WHERE d.tenant = OLD.tenant AND d.meeting_id = OLD.meeting_id) THEN
            RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'restrict_violation';
          END IF;
          RETURN OLD;
        END $$""",
    """CREATE FUNCTION meetmem_head_forward() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.head_pos <= OLD.head_pos OR NEW.tenant <> OLD.tenant OR NEW.meeting_id <> OLD.meeting_id THEN
            RAISE EXCEPTION 'a meeting head only moves forward: UPDATE refused' USING ERRCODE = 'restrict_violation';
          END IF;
          RETURN NEW;
        END $$""",
    """CREATE FUNCTION meetmem_meeting_keys_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.tenant <> OLD.tenant OR NEW.meeting_id <> OLD.meeting_id OR NEW.created_at <> OLD.created_at THEN
            RAISE EXCEPTION 'a meeting''s tenant, id and creation time never change: UPDATE refused'
              USING ERRCODE = 'restrict_violation';
          END IF;
          RETURN NEW;
        END $$""",
    """CREATE TRIGGER segments_refuse_update BEFORE UPDATE ON segments FOR EACH ROW
        EXECUTE FUNCTION meetmem_refuse('transcript log is append-only: UPDATE refused')""",
    """CREATE TRIGGER segments_refuse_delete BEFORE DELETE ON segments FOR EACH ROW
        EXECUTE FUNCTION meetmem_refuse_untombstoned('transcript log is append-only: DELETE refused')""",
    """CREATE TRIGGER meetings_keys_fixed BEFORE UPDATE ON meetings FOR EACH ROW
        EXECUTE FUNCTION meetmem_meeting_keys_fixed()""",
    """CREATE TRIGGER meetings_refuse_delete BEFORE DELETE ON meetings FOR EACH ROW
        EXECUTE FUNCTION meetmem_refuse_untombstoned('meetings are never deleted from the log')""",
    """CREATE TRIGGER closures_refuse_update BEFORE UPDATE ON meeting_closures FOR EACH ROW
        EXECUTE FUNCTION meetmem_refuse('meeting closures are append-only: UPDATE refused')""",
    """CREATE TRIGGER closures_refuse_delete BEFORE DELETE ON meeting_closures FOR EACH ROW
        EXECUTE FUNCTION meetmem_refuse_untombstoned('meeting closures are append-only: DELETE refused')""",
    """CREATE TRIGGER heads_refuse_going_back BEFORE UPDATE ON meeting_heads FOR EACH ROW
        EXECUTE FUNCTION meetmem_head_forward()""",
    """CREATE TRIGGER heads_refuse_delete BEFORE DELETE ON meeting_heads FOR EACH ROW
        EXECUTE FUNCTION meetmem_refuse_untombstoned('meeting heads are never deleted: DELETE refused')""",
    """CREATE TRIGGER deletions_refuse_update BEFORE UPDATE ON meeting_deletions FOR EACH ROW
        EXECUTE FUNCTION meetmem_refuse('tombstones are kept as signed: UPDATE refused')""",
    """CREATE TRIGGER deletions_refuse_delete BEFORE DELETE ON meeting_deletions FOR EACH ROW
        EXECUTE FUNCTION meetmem_refuse('tombstones are kept forever: DELETE refused')""",
    *[f"""CREATE TRIGGER {t}_refuse_truncate BEFORE TRUNCATE ON {t} FOR EACH STATEMENT
        EXECUTE FUNCTION meetmem_refuse('the transcript log is never truncated: TRUNCATE refused')"""
      for t in ("meetings", "segments", "meeting_closures", "meeting_heads", "meeting_deletions")],
    # -- the one door out: a tombstone first, then the rows, in the caller's transaction -----------------
    f"""CREATE FUNCTION meetmem_delete_meeting(
          p_tenant text, p_meeting_id text, p_deleted_at text, p_reason text, p_segments bigint,
          p_head_pos bigint, p_head_hash text, p_key_id text, p_sig text, p_version integer)
        RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
        DECLARE
          derived text;
        BEGIN
          IF p_tenant IS DISTINCT FROM {_TENANT} THEN
            RAISE EXCEPTION 'a meeting is deleted by its own tenant: set app.tenant to %', p_tenant
              USING ERRCODE = 'insufficient_privilege';
          END IF;
          IF NOT EXISTS (SELECT 1 FROM meetings WHERE tenant = p_tenant AND meeting_id = p_meeting_id) THEN
            RAISE EXCEPTION 'no meeting % for tenant %', p_meeting_id, p_tenant USING ERRCODE = 'no_data_found';
          END IF;
          INSERT INTO meeting_deletions (tenant, meeting_id, deleted_at, reason, segments, head_pos, head_hash,
                                         key_id, sig, version)
          VALUES (p_tenant, p_meeting_id, p_deleted_at, p_reason, p_segments, p_head_pos, p_head_hash,
                  p_key_id, p_sig, p_version);
          -- Derived tables keyed by segment or by meeting, made by later revisions (each may be absent).
          IF to_regclass('segment_vectors') IS NOT NULL THEN
            EXECUTE 'DELETE FROM segment_vectors WHERE segment_id IN (SELECT segment_id FROM segments '
                    'WHERE tenant = $1 AND meeting_id = $2)' USING p_tenant, p_meeting_id;
          END IF;
          FOREACH derived IN ARRAY ARRAY['summary_sections', 'meeting_digests', 'ledger_items', 'meeting_audio',
                                         'audio_policy', 'ask_turns'] LOOP
            IF to_regclass(derived) IS NOT NULL THEN
              EXECUTE format('DELETE FROM %I WHERE tenant = $1 AND meeting_id = $2', derived)
                USING p_tenant, p_meeting_id;
            END IF;
          END LOOP;
          DELETE FROM segments WHERE tenant = p_tenant AND meeting_id = p_meeting_id;
          DELETE FROM meeting_closures WHERE tenant = p_tenant AND meeting_id = p_meeting_id;
          DELETE FROM meeting_heads WHERE tenant = p_tenant AND meeting_id = p_meeting_id;
          DELETE FROM meetings WHERE tenant = p_tenant AND meeting_id = p_meeting_id;
        END $$""",
    # A tombstone brought from another database (`meetmem migrate`): kept as signed there, for a meeting
    # this database does not hold.
    f"""CREATE FUNCTION meetmem_import_tombstone(
          p_tenant text, p_meeting_id text, p_deleted_at text, p_reason text, p_segments bigint,
          p_head_pos bigint, p_head_hash text, p_key_id text, p_sig text, p_version integer)
        RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
        BEGIN
          IF p_tenant IS DISTINCT FROM {_TENANT} THEN
            RAISE EXCEPTION 'a tombstone is written for its own tenant: set app.tenant to %', p_tenant
              USING ERRCODE = 'insufficient_privilege';
          END IF;
          IF EXISTS (SELECT 1 FROM meetings WHERE tenant = p_tenant AND meeting_id = p_meeting_id) THEN
            RAISE EXCEPTION 'meeting % of tenant % is held here: a tombstone would hide it', p_meeting_id, p_tenant
              USING ERRCODE = 'restrict_violation';
          END IF;
          INSERT INTO meeting_deletions (tenant, meeting_id, deleted_at, reason, segments, head_pos, head_hash,
                                         key_id, sig, version)
          VALUES (p_tenant, p_meeting_id, p_deleted_at, p_reason, p_segments, p_head_pos, p_head_hash,
                  p_key_id, p_sig, p_version);
        END $$""",
    *[f"{verb} EXECUTE ON FUNCTION {name}(text, text, text, text, bigint, bigint, text, text, text, integer) "
      f"{whom}" for name in ("meetmem_delete_meeting", "meetmem_import_tombstone")
      for verb, whom in (("REVOKE", "FROM PUBLIC"), ("GRANT", f"TO {APP_ROLE}"))],
    # -- grants: what the service's role may do -----------------------------------------------------------
    f"GRANT USAGE ON SCHEMA public TO {APP_ROLE}",
    # The service checks the schema's revision before it serves (Alembic made this table before 0001 ran).
    f"GRANT SELECT ON alembic_version TO {APP_ROLE}",
    f"GRANT SELECT, INSERT ON meetings, segments, meeting_closures, meeting_heads TO {APP_ROLE}",
    f"GRANT UPDATE (title, started_at, participants) ON meetings TO {APP_ROLE}",
    f"GRANT UPDATE (head_pos, head_hash) ON meeting_heads TO {APP_ROLE}",
    f"GRANT SELECT ON meeting_deletions TO {APP_ROLE}",
    f"GRANT SELECT, INSERT, UPDATE, DELETE ON retention_policy TO {APP_ROLE}",
    f"GRANT SELECT, INSERT ON api_tokens TO {APP_ROLE}",
    f"GRANT UPDATE (revoked_at) ON api_tokens TO {APP_ROLE}",
    *[f"GRANT SELECT, INSERT, DELETE ON {t} TO {APP_ROLE}" for t in DERIVED_TABLES],
    # -- row-level security: a session reads and writes its own tenant's rows only -------------------------
    *[stmt for t in TENANT_TABLES for stmt in (
        f"ALTER TABLE {t} ENABLE ROW LEVEL SECURITY",
        f"ALTER TABLE {t} FORCE ROW LEVEL SECURITY",
        f"CREATE POLICY {t}_tenant_read ON {t} FOR SELECT USING (tenant = {_TENANT} OR {_TENANT} = '*')",
        f"CREATE POLICY {t}_tenant_insert ON {t} FOR INSERT WITH CHECK (tenant = {_TENANT})",
        f"CREATE POLICY {t}_tenant_update ON {t} FOR UPDATE USING (tenant = {_TENANT}) "
        f"WITH CHECK (tenant = {_TENANT})",
        f"CREATE POLICY {t}_tenant_delete ON {t} FOR DELETE USING (tenant = {_TENANT})",
    )],
]


def upgrade() -> None:
    for statement in STATEMENTS:
        op.execute(statement)


def downgrade() -> None:
    raise NotImplementedError("the transcript log's first revision is not downgraded: it would drop the log")
