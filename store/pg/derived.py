"""Summaries and the ledger kept in PostgreSQL beside the log: `store.derived.DerivedStore`'s methods.

The tables come with the schema (migrations/versions/0001) under the same row security as the log; a
meeting's digest is replaced whole in one transaction, and a digest made for a meeting deleted meanwhile is
not kept. The rows are derived: `clear` forgets them all, and they are made again from the log.
"""

from __future__ import annotations

import json
from typing import Any

from ..derived import item_from_row, item_row, line_from_row, line_row
from ..records import MeetingDigest, Section, SectionSummary
from .log import PgTranscriptLog

_TABLES = ("summary_sections", "meeting_digests", "ledger_items")


class PgDerivedStore:
    """Reads and writes meetings' digests (L1 per section, L2, ledger) in the log's PostgreSQL database."""

    def __init__(self, log: PgTranscriptLog) -> None:
        self.log = log

    def save(self, tenant: str, digest: MeetingDigest) -> None:
        """Replace the meeting's digest with this one, all or nothing.

        Several processes may make the same meeting's digest at once (two API processes, a worker): their saves
        take turns on a lock of the meeting's digest, and one made from less of the log than the stored one
        is dropped, so the newest stays whoever finishes last.
        """
        key = (tenant, digest.meeting_id)
        with self.log._session(tenant) as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 1))", (f"digest\x1f{tenant}\x1f"
                                                                                  f"{digest.meeting_id}",))
            if conn.execute("SELECT 1 FROM meetings WHERE tenant = %s AND meeting_id = %s", key).fetchone() is None:
                return  # deleted while its digest was being made: nothing derived from it may stay
            stored = conn.execute("SELECT through_pos FROM meeting_digests WHERE tenant = %s AND meeting_id = %s",
                                  key).fetchone()
            if stored is not None and int(stored[0]) > digest.through_pos:
                return
            for table in _TABLES:
                conn.execute(f"DELETE FROM {table} WHERE tenant = %s AND meeting_id = %s", key)
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO summary_sections VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    [(*key, s.section.key, s.section.index, s.section.start, s.section.end, s.section.closed_by,
                      json.dumps(list(s.section.segment_ids)), s.backend,
                      json.dumps([line_row(line) for line in s.lines], ensure_ascii=False), s.note)
                     for s in digest.sections])
                cur.execute(
                    "INSERT INTO meeting_digests VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (*key, digest.through_pos, int(digest.final), digest.open_from,
                     json.dumps([line_row(line) for line in digest.l2], ensure_ascii=False), digest.l2_backend,
                     digest.l2_note, digest.made_at, json.dumps(list(digest.ledger_notes), ensure_ascii=False)))
                cur.executemany(
                    "INSERT INTO ledger_items VALUES (%s, %s, %s, %s, %s, %s)",
                    [(*key, n, item.id, item.kind, json.dumps(item_row(item), ensure_ascii=False))
                     for n, item in enumerate(digest.ledger)])

    def sections(self, tenant: str, meeting_id: str) -> dict[str, SectionSummary]:
        rows = self.log._rows(
            'SELECT section_key, idx, start, "end", closed_by, segment_ids, backend, lines, note FROM summary_sections '
            "WHERE tenant = %s AND meeting_id = %s ORDER BY idx", (tenant, meeting_id), tenant=tenant)
        out: dict[str, SectionSummary] = {}
        for key, idx, start, end, closed_by, ids, backend, lines, note in rows:
            section = Section(idx, start, end, tuple(json.loads(ids)), closed_by)
            out[key] = SectionSummary(section, tuple(line_from_row(d) for d in json.loads(lines)), backend, note)
        return out

    def load(self, tenant: str, meeting_id: str) -> MeetingDigest | None:
        rows = self.log._rows(
            "SELECT through_pos, final, open_from, l2, l2_backend, l2_note, made_at, ledger_notes "
            "FROM meeting_digests WHERE tenant = %s AND meeting_id = %s", (tenant, meeting_id), tenant=tenant)
        if not rows:
            return None
        through_pos, final, open_from, l2, l2_backend, l2_note, made_at, ledger_notes = rows[0]
        items = self.log._rows("SELECT item FROM ledger_items WHERE tenant = %s AND meeting_id = %s ORDER BY ord",
                               (tenant, meeting_id), tenant=tenant)
        return MeetingDigest(
            meeting_id=meeting_id, sections=tuple(self.sections(tenant, meeting_id).values()),
            l2=tuple(line_from_row(d) for d in json.loads(l2)),
            ledger=tuple(item_from_row(json.loads(row[0])) for row in items),
            through_pos=int(through_pos), final=bool(final), open_from=open_from, l2_backend=l2_backend,
            l2_note=l2_note, made_at=made_at, ledger_notes=tuple(json.loads(ledger_notes)))

    def through_pos(self, tenant: str, meeting_id: str) -> tuple[int, bool] | None:
        rows = self.log._rows("SELECT through_pos, final FROM meeting_digests WHERE tenant = %s AND meeting_id = %s",
                              (tenant, meeting_id), tenant=tenant)
        return (int(rows[0][0]), bool(rows[0][1])) if rows else None

    def stamp(self, tenant: str, meeting_id: str) -> tuple[int, bool, str] | None:
        rows = self.log._rows("SELECT through_pos, final, made_at FROM meeting_digests WHERE tenant = %s AND "
                              "meeting_id = %s", (tenant, meeting_id), tenant=tenant)
        return (int(rows[0][0]), bool(rows[0][1]), rows[0][2]) if rows else None

    def clear(self) -> None:
        """Forget every digest (before a rebuild from the log), tenant by tenant as row security asks."""
        tenants: set[Any] = {t for t, _ in self.log.meetings()}
        tenants |= {r[0] for r in self.log._rows("SELECT DISTINCT tenant FROM meeting_digests", tenant="*")}
        for tenant in sorted(tenants):
            with self.log._session(tenant) as conn:
                for table in _TABLES:
                    conn.execute(f"DELETE FROM {table} WHERE tenant = %s", (tenant,))
