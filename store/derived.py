"""Where summaries and the ledger are kept: derived tables beside the log, rebuilt from it at will.

Unlike the log these rows may be replaced: a meeting's digest is written whole, in one transaction, each
time it is remade, and `clear` forgets them all before a rebuild. The log stays the truth.
"""

from __future__ import annotations

import json
from typing import Any

from .database import ALL_TENANTS
from .log import Log
from .records import LedgerItem, MeetingDigest, Section, SectionSummary, Source, SummaryLine


def _source(data: dict[str, Any]) -> Source:
    return Source(float(data["start"]), float(data["end"]), tuple(data["segment_ids"]))


def line_from_row(data: dict[str, Any]) -> SummaryLine:
    """A summary line from its stored JSON (the shape `line_row` writes; both stores use it)."""
    made = data.get("made_by")
    return SummaryLine(data["text"], _source(data), (made["kind"], made["version"]) if made else None)


def line_row(line: SummaryLine) -> dict[str, Any]:
    """A summary line as stored JSON: its text and its source's public fields."""
    row = {"text": line.text, **line.source.public()}
    if line.made_by is not None:
        row["made_by"] = {"kind": line.made_by[0], "version": line.made_by[1]}
    return row


_TABLES = ("summary_sections", "meeting_digests", "ledger_items")


class DerivedStore:
    """Reads and writes meetings' digests (L1 per section, L2, ledger) in the log's database, on either engine
    (the tables come with the schema: store/schema.py, and PostgreSQL's revision 0001)."""

    def __init__(self, log: Log) -> None:
        self.log = log

    def save(self, tenant: str, digest: MeetingDigest) -> None:
        """Replace the meeting's digest with this one, all or nothing.

        Several processes may make the same meeting's digest at once (two API processes, a worker, two CLI
        runs on one file): their saves take turns on a lock of the meeting's digest (not the meeting's own,
        so appends never wait for one), and a digest made from less of the log than the stored one is
        dropped, so the newest stays whoever finishes last. A digest made for a meeting deleted meanwhile is
        not kept.
        """
        key = (tenant, digest.meeting_id)
        with self.log.database.session(tenant, lock=f"{digest.meeting_id}\x1fdigest") as conn:
            if conn.execute("SELECT 1 FROM meetings WHERE tenant = ? AND meeting_id = ?", key).fetchone() is None:
                return  # deleted while its digest was being made: nothing derived from it may stay
            stored = conn.execute("SELECT through_pos FROM meeting_digests WHERE tenant = ? AND meeting_id = ?",
                                  key).fetchone()
            if stored is not None and int(stored[0]) > digest.through_pos:
                return
            for table in _TABLES:
                conn.execute(f"DELETE FROM {table} WHERE tenant = ? AND meeting_id = ?", key)
            conn.executemany(
                "INSERT INTO summary_sections VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(*key, s.section.key, s.section.index, s.section.start, s.section.end, s.section.closed_by,
                  json.dumps(list(s.section.segment_ids)), s.backend,
                  json.dumps([line_row(line) for line in s.lines], ensure_ascii=False), s.note)
                 for s in digest.sections])
            conn.execute(
                "INSERT INTO meeting_digests VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*key, digest.through_pos, int(digest.final), digest.open_from,
                 json.dumps([line_row(line) for line in digest.l2], ensure_ascii=False), digest.l2_backend,
                 digest.l2_note, digest.made_at, json.dumps(list(digest.ledger_notes), ensure_ascii=False)))
            conn.executemany(
                "INSERT INTO ledger_items VALUES (?, ?, ?, ?, ?, ?)",
                [(*key, n, item.id, item.kind, json.dumps(item_row(item), ensure_ascii=False))
                 for n, item in enumerate(digest.ledger)])

    def _rows(self, sql: str, tenant: str, meeting_id: str) -> list[tuple[Any, ...]]:
        return self.log.database.rows(sql, (tenant, meeting_id), tenant=tenant)

    def sections(self, tenant: str, meeting_id: str) -> dict[str, SectionSummary]:
        """The stored L1s of a meeting by section key (so an unchanged section is not summarized again)."""
        rows = self._rows('SELECT section_key, idx, start, "end", closed_by, segment_ids, backend, lines, note '
                          "FROM summary_sections WHERE tenant = ? AND meeting_id = ? ORDER BY idx", tenant, meeting_id)
        out: dict[str, SectionSummary] = {}
        for key, idx, start, end, closed_by, ids, backend, lines, note in rows:
            section = Section(idx, start, end, tuple(json.loads(ids)), closed_by)
            out[key] = SectionSummary(section, tuple(line_from_row(d) for d in json.loads(lines)), backend, note)
        return out

    def load(self, tenant: str, meeting_id: str) -> MeetingDigest | None:
        """The meeting's stored digest, or None when none has been made."""
        rows = self._rows("SELECT through_pos, final, open_from, l2, l2_backend, l2_note, made_at, ledger_notes "
                          "FROM meeting_digests WHERE tenant = ? AND meeting_id = ?", tenant, meeting_id)
        if not rows:
            return None
        through_pos, final, open_from, l2, l2_backend, l2_note, made_at, ledger_notes = rows[0]
        items = self._rows("SELECT item FROM ledger_items WHERE tenant = ? AND meeting_id = ? ORDER BY ord",
                           tenant, meeting_id)
        return MeetingDigest(
            meeting_id=meeting_id,
            sections=tuple(self.sections(tenant, meeting_id).values()),
            l2=tuple(line_from_row(d) for d in json.loads(l2)),
            ledger=tuple(item_from_row(json.loads(row[0])) for row in items),
            through_pos=int(through_pos),
            final=bool(final),
            open_from=open_from,
            l2_backend=l2_backend,
            l2_note=l2_note,
            made_at=made_at,
            ledger_notes=tuple(json.loads(ledger_notes)),
        )

    def through_pos(self, tenant: str, meeting_id: str) -> tuple[int, bool] | None:
        """How far the stored digest reaches (chain position, final), without reading it whole."""
        rows = self._rows("SELECT through_pos, final FROM meeting_digests WHERE tenant = ? AND meeting_id = ?",
                          tenant, meeting_id)
        return (int(rows[0][0]), bool(rows[0][1])) if rows else None

    def stamp(self, tenant: str, meeting_id: str) -> tuple[int, bool, str] | None:
        """(through_pos, final, made_at) of the stored digest: changes whenever the digest is remade."""
        rows = self._rows("SELECT through_pos, final, made_at FROM meeting_digests WHERE tenant = ? AND "
                          "meeting_id = ?", tenant, meeting_id)
        return (int(rows[0][0]), bool(rows[0][1]), rows[0][2]) if rows else None

    def clear(self) -> None:
        """Forget every digest (before a rebuild from the log), tenant by tenant as row security asks."""
        tenants: set[Any] = {t for t, _ in self.log.meetings()}
        tenants |= {r[0] for r in self.log.database.rows("SELECT DISTINCT tenant FROM meeting_digests",
                                                         tenant=ALL_TENANTS)}
        for tenant in sorted(tenants):
            with self.log.database.session(tenant) as conn:
                for table in _TABLES:
                    conn.execute(f"DELETE FROM {table} WHERE tenant = ?", (tenant,))


_ITEM_FIELDS = ("id", "kind", "text", "status", "superseded_by", "owner", "task", "due", "due_date", "what", "value",
                "origin", "version")


def item_row(item: LedgerItem) -> dict[str, Any]:
    """A ledger item as stored JSON (both stores keep this shape)."""
    row = {name: getattr(item, name) for name in _ITEM_FIELDS}
    row["source"] = item.source.public()
    return row


def item_from_row(row: dict[str, Any]) -> LedgerItem:
    """A ledger item from its stored JSON (a field an older row lacks takes its default)."""
    return LedgerItem(source=_source(row["source"]), **{name: row[name] for name in _ITEM_FIELDS if name in row})


def derived_store_for(log: Log) -> DerivedStore:
    """The digest store of the log's database."""
    return DerivedStore(log)
