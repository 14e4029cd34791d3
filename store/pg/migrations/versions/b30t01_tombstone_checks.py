"""Tombstones the database checks before they open a meeting's rows to DELETE (issue 30).

A tombstone in `meeting_deletions` is what lets the DELETE triggers of 0001 remove a meeting's rows, so a
row written there by hand (the owner's session, a superuser) removed a meeting without dropping any trigger;
only `meetmem verify` noticed, afterwards. The database cannot check the tombstone's HMAC (the receipt key
stays outside it, by design), so it checks everything else it can, whoever inserts:

- the tombstone's form: version 1, a 12-hex-digit key id and a 64-hex-digit HMAC-SHA256 signature (an
  unsigned tombstone is refused outright);
- for a meeting held here (a deletion): that it is written by `meetmem_delete_meeting` itself, which marks
  its transaction with the meeting it deletes (`meetmem.deleting`, transaction-local) right before the
  INSERT; and that it names the meeting's rows as stored (their count, the head's position and hash);
- for a meeting not held here (`meetmem migrate` bringing another database's deletions through
  `meetmem_import_tombstone`): its form alone, as it removes nothing.

The service's role could already write tombstones only through those two functions; their signatures are
still checked by `verify` with the key.

Revision ID: b30t01_tombstone_checks
"""

from __future__ import annotations

from alembic import op

revision = "b30t01_tombstone_checks"
down_revision = "b22a01_audio"
branch_labels = None
depends_on = None

_TENANT = "current_setting('app.tenant', true)"
_GENESIS = "0" * 64

#: `meetmem_delete_meeting` of 0001, with `{mark}` where this revision marks the transaction.
_DELETE_MEETING = f"""CREATE OR REPLACE FUNCTION meetmem_delete_meeting(
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
      END IF;{{mark}}
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
    END $$"""

_MARK = """
      -- What the tombstone check below accepts a deletion's tombstone from, for this meeting alone.
      PERFORM set_config('meetmem.deleting', p_tenant || chr(31) || p_meeting_id, true);"""

UPGRADE = [
    _DELETE_MEETING.replace("{mark}", _MARK),
    f"""CREATE FUNCTION meetmem_tombstone_check() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
          held_segments bigint;
          held_pos bigint;
          held_hash text;
        BEGIN
          IF NEW.version IS DISTINCT FROM 1 OR NEW.key_id !~ '^[0-9a-f]{{12}}$' OR NEW.sig !~ '^[0-9a-f]{{64}}$' THEN
            RAISE EXCEPTION 'a tombstone must carry its key id and HMAC-SHA256 signature: INSERT refused'
              USING ERRCODE = 'restrict_violation';
          END IF;
          IF NOT EXISTS (SELECT 1 FROM meetings WHERE tenant = NEW.tenant AND meeting_id = NEW.meeting_id) THEN
            RETURN NEW;  -- another database's deletion, brought by `meetmem migrate`: it removes nothing here
          END IF;
          IF current_setting('meetmem.deleting', true) IS DISTINCT FROM NEW.tenant || chr(31) || NEW.meeting_id THEN
            RAISE EXCEPTION 'a meeting''s tombstone is written by meetmem_delete_meeting alone: INSERT refused'
              USING ERRCODE = 'restrict_violation';
          END IF;
          SELECT COUNT(*) INTO held_segments FROM segments WHERE tenant = NEW.tenant AND meeting_id = NEW.meeting_id;
          SELECT head_pos, head_hash INTO held_pos, held_hash FROM meeting_heads
            WHERE tenant = NEW.tenant AND meeting_id = NEW.meeting_id;
          IF NEW.segments IS DISTINCT FROM held_segments OR NEW.head_pos IS DISTINCT FROM COALESCE(held_pos, -1)
             OR NEW.head_hash IS DISTINCT FROM COALESCE(held_hash, '{_GENESIS}') THEN
            RAISE EXCEPTION 'a tombstone must name its meeting''s rows and head as stored: INSERT refused'
              USING ERRCODE = 'restrict_violation';
          END IF;
          RETURN NEW;
        END $$""",
    """CREATE TRIGGER deletions_checked BEFORE INSERT ON meeting_deletions FOR EACH ROW
        EXECUTE FUNCTION meetmem_tombstone_check()""",
]

DOWNGRADE = [
    "DROP TRIGGER IF EXISTS deletions_checked ON meeting_deletions",
    "DROP FUNCTION IF EXISTS meetmem_tombstone_check()",
    _DELETE_MEETING.replace("{mark}", ""),
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
