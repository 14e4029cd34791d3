"""The speaker map in PostgreSQL beside the log: `store.speaker_map.SpeakerMap`'s methods, the same rows.

The table, its refusals (UPDATE, TRUNCATE, an untombstoned DELETE), its row security and its removal with
the meeting come with the schema (migrations/versions/b21k01_speaker_names). A new version is written under
the meeting's advisory lock, the one appends and deletion take, so two users renaming the same label at
once get versions n+1 and n+2 (never a clash), and no name is added to a meeting being deleted.
"""

from __future__ import annotations

from typing import Any

from ..errors import MeetingNotFound
from ..log import DEFAULT_TENANT
from ..speaker_map import TABLE, SpeakerName, checked_names, new_versions, now_stamp
from .log import PgTranscriptLog

#: Labels in byte order, as SQLite sorts them, whatever the database's collation.
_ORDER = 'ORDER BY label COLLATE "C", version'


class PgSpeakerMap:
    """The speaker names of every meeting in the log's PostgreSQL database."""

    def __init__(self, log: PgTranscriptLog) -> None:
        self.log = log

    def set(self, meeting_id: str, names: dict[str, str | None], *, tenant: str = DEFAULT_TENANT,
            source: str = "user") -> list[SpeakerName]:
        """Append a new version for each label whose name changes (all in one transaction).

        Raises:
            InvalidSegment: a label or name is empty, too long or not text (nothing is stored).
            MeetingNotFound: no such meeting (or it was deleted meanwhile).
            StoreError: the database refused (nothing is stored).
        """
        clean = checked_names(names)
        now = now_stamp()
        added: list[SpeakerName] = []
        with self.log._session(tenant) as conn:
            self.log._lock_meeting(conn, tenant, meeting_id)
            key = (tenant, meeting_id)
            if conn.execute("SELECT 1 FROM meetings WHERE tenant = %s AND meeting_id = %s", key).fetchone() is None:
                gone = conn.execute("SELECT deleted_at FROM meeting_deletions WHERE tenant = %s AND meeting_id = %s",
                                    key).fetchone()
                raise MeetingNotFound(tenant, meeting_id, deleted_at=gone[0] if gone else None)
            current = {entry.label: entry for entry in map(_entry, conn.execute(
                f"SELECT label, name, version, source, set_at FROM {TABLE} WHERE tenant = %s AND meeting_id = %s "
                f"{_ORDER}", key).fetchall())}
            rows: list[tuple[Any, ...]] = []
            for label, name in clean.items():
                before = current.get(label)
                if before is not None and before.name == name:
                    continue
                version = before.version + 1 if before is not None else 1
                rows.append((*key, label, version, name, source, now))
                added.append(SpeakerName(label, name, version, source, now))
            if rows:
                with conn.cursor() as cur:
                    cur.executemany(f"INSERT INTO {TABLE} (tenant, meeting_id, label, version, name, source, "
                                    "set_at) VALUES (%s, %s, %s, %s, %s, %s, %s)", rows)
        return added

    def load(self, meeting_id: str, entries: list[SpeakerName], *, tenant: str = DEFAULT_TENANT) -> int:
        """Keep versions brought from another database as they were (`meetmem migrate`); returns how many
        were new here (a version held already with the same content is skipped).

        Raises:
            MeetingNotFound: the meeting is not here.
            StoreError: this database holds another content under one of the versions (nothing is stored).
        """
        key = (tenant, meeting_id)
        with self.log._session(tenant) as conn:
            self.log._lock_meeting(conn, tenant, meeting_id)
            if conn.execute("SELECT 1 FROM meetings WHERE tenant = %s AND meeting_id = %s", key).fetchone() is None:
                raise MeetingNotFound(tenant, meeting_id)
            held = {(e.label, e.version): e for e in map(_entry, conn.execute(
                f"SELECT label, name, version, source, set_at FROM {TABLE} WHERE tenant = %s AND meeting_id = %s",
                key).fetchall())}
            fresh = new_versions(meeting_id, held, entries)
            if fresh:
                with conn.cursor() as cur:
                    cur.executemany(f"INSERT INTO {TABLE} (tenant, meeting_id, label, version, name, source, "
                                    "set_at) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                                    [(*key, e.label, e.version, e.name, e.source, e.set_at) for e in fresh])
        return len(fresh)

    def history(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> list[SpeakerName]:
        """Every version, by label then version."""
        rows = self.log._rows(f"SELECT label, name, version, source, set_at FROM {TABLE} WHERE tenant = %s AND "
                              f"meeting_id = %s {_ORDER}", (tenant, meeting_id), tenant=tenant)
        return [_entry(r) for r in rows]

    def current(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> dict[str, SpeakerName]:
        """Each label's newest version."""
        return {entry.label: entry for entry in self.history(meeting_id, tenant=tenant)}


def _entry(row: Any) -> SpeakerName:
    return SpeakerName(str(row[0]), row[1], int(row[2]), str(row[3]), str(row[4]))
