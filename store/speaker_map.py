"""A meeting's speaker map: the names people gave the transcript's speaker labels, every version kept.

The segments keep the labels the edge gave them (`S1`, `wearer`, ...): the log is never rewritten. A name
is a row in `speaker_names`, appended with the next version number for its label; the newest version of a
label is its name now, and a correction never removes the one before (the database refuses UPDATE, and
DELETE except when the meeting itself is deleted under its tombstone). A row with no name withdraws one
(the label is shown as itself again, and a suggested name is not applied).

On PostgreSQL the table comes with the schema (migrations/versions/b21k01_speaker_names) and
`store/pg/speaker_map.py` reads and writes it; `speaker_map_for(log)` picks the one for a log.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from dataclasses import dataclass
from typing import Any

from .errors import InvalidSegment, StoreError
from .interchange import has_control_characters, is_valid_unicode
from .log import DEFAULT_TENANT, TranscriptLog

TABLE = "speaker_names"
MAX_LABEL_CHARS = 100
MAX_NAME_CHARS = 200
MAX_LABELS = 200

_NO_TOMBSTONE = ("NOT EXISTS (SELECT 1 FROM meeting_deletions d WHERE d.tenant = OLD.tenant "
                 "AND d.meeting_id = OLD.meeting_id)")


@dataclass(frozen=True, slots=True)
class SpeakerName:
    """One version of a label's name: who set it (`user` or `suggestion` accepted by a user) and when."""

    label: str
    name: str | None
    version: int
    source: str
    set_at: str

    def public(self) -> dict[str, Any]:
        return {"label": self.label, "name": self.name, "version": self.version, "source": self.source,
                "set_at": self.set_at}


class SpeakerMap:
    """The speaker names of every meeting in one SQLite log (the table is created on first use)."""

    def __init__(self, log: TranscriptLog) -> None:
        self.log = log
        with log.transaction():
            log.db.execute(
                f"CREATE TABLE IF NOT EXISTS {TABLE} (tenant TEXT NOT NULL, meeting_id TEXT NOT NULL, "
                "label TEXT NOT NULL, version INTEGER NOT NULL, name TEXT, source TEXT NOT NULL, "
                "set_at TEXT NOT NULL, PRIMARY KEY (tenant, meeting_id, label, version))")
            log.db.execute(f"CREATE TRIGGER IF NOT EXISTS {TABLE}_refuse_update BEFORE UPDATE ON {TABLE} "
                           "BEGIN SELECT RAISE(ABORT, 'speaker names are append-only: UPDATE refused'); END")
            log.db.execute(f"CREATE TRIGGER IF NOT EXISTS {TABLE}_refuse_delete BEFORE DELETE ON {TABLE} "
                           f"WHEN {_NO_TOMBSTONE} "
                           "BEGIN SELECT RAISE(ABORT, 'speaker names are append-only: DELETE refused'); END")

    def set(self, meeting_id: str, names: dict[str, str | None], *, tenant: str = DEFAULT_TENANT,
            source: str = "user") -> list[SpeakerName]:
        """Append a new version for each label whose name changes (all in one transaction).

        Raises:
            InvalidSegment: a label or name is empty, too long or not text (nothing is stored).
            MeetingNotFound: no such meeting.
        """
        clean = checked_names(names)
        now = now_stamp()
        added: list[SpeakerName] = []
        try:
            with self.log.transaction():
                self.log.require_meeting(meeting_id, tenant=tenant)
                current = self.current(meeting_id, tenant=tenant)
                for label, name in clean.items():
                    before = current.get(label)
                    if before is not None and before.name == name:
                        continue
                    version = before.version + 1 if before is not None else 1
                    self.log.db.execute(f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?, ?, ?, ?)",
                                        (tenant, meeting_id, label, version, name, source, now))
                    added.append(SpeakerName(label, name, version, source, now))
        except sqlite3.Error as exc:
            raise StoreError(f"storing the speaker names of {meeting_id!r} failed, nothing was stored: {exc}") from exc
        return added

    def load(self, meeting_id: str, entries: list[SpeakerName], *, tenant: str = DEFAULT_TENANT) -> int:
        """Keep versions brought from another database as they were (`meetmem migrate`); returns how many
        were new here (a version held already with the same content is skipped).

        Raises:
            StoreError: this database holds another content under one of the versions (nothing is stored).
        """
        try:
            with self.log.transaction():
                self.log.require_meeting(meeting_id, tenant=tenant)
                held = {(e.label, e.version): e for e in self.history(meeting_id, tenant=tenant)}
                fresh = new_versions(meeting_id, held, entries)
                for e in fresh:
                    self.log.db.execute(f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?, ?, ?, ?)",
                                        (tenant, meeting_id, e.label, e.version, e.name, e.source, e.set_at))
        except sqlite3.Error as exc:
            raise StoreError(f"storing the speaker names of {meeting_id!r} failed, nothing was stored: {exc}") from exc
        return len(fresh)

    def history(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> list[SpeakerName]:
        """Every version, by label then version."""
        rows = self.log.read(f"SELECT label, name, version, source, set_at FROM {TABLE} WHERE tenant = ? AND "
                             "meeting_id = ? ORDER BY label, version", (tenant, meeting_id))
        return [SpeakerName(str(r[0]), r[1], int(r[2]), str(r[3]), str(r[4])) for r in rows]

    def current(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> dict[str, SpeakerName]:
        """Each label's newest version."""
        return {entry.label: entry for entry in self.history(meeting_id, tenant=tenant)}


def now_stamp() -> str:
    """When a version is set: UTC, milliseconds, `Z` (the same text on both stores)."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def speaker_map_for(log: Any) -> Any:
    """The speaker map of the log's database: `SpeakerMap` for SQLite, `PgSpeakerMap` for PostgreSQL."""
    if getattr(log, "backend", "sqlite") == "postgres":
        from .pg.speaker_map import PgSpeakerMap

        return PgSpeakerMap(log)
    return SpeakerMap(log)


def new_versions(meeting_id: str, held: dict[tuple[str, int], SpeakerName],
                 entries: list[SpeakerName]) -> list[SpeakerName]:
    """The entries not held yet; one held with other content is refused (a copy never rewrites a version)."""
    fresh = []
    for entry in entries:
        before = held.get((entry.label, entry.version))
        if before is None:
            fresh.append(entry)
        elif before != entry:
            raise StoreError(f"the target holds another version {entry.version} of speaker {entry.label!r} in "
                             f"meeting {meeting_id!r}; no name of it was copied")
    return fresh


def read_history(log: Any, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> list[SpeakerName]:
    """Every version, by label then version, read without creating the table (a SQLite log no name was ever
    set in has none; PostgreSQL's schema always has it)."""
    if getattr(log, "backend", "sqlite") == "postgres":
        return speaker_map_for(log).history(meeting_id, tenant=tenant)
    if not log.read("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (TABLE,)):
        return []
    rows = log.read(f"SELECT label, name, version, source, set_at FROM {TABLE} WHERE tenant = ? AND meeting_id = ? "
                    "ORDER BY label, version", (tenant, meeting_id))
    return [SpeakerName(str(r[0]), r[1], int(r[2]), str(r[3]), str(r[4])) for r in rows]


def checked_names(names: Any) -> dict[str, str | None]:
    """The labels and names to set, trimmed (a name's inner whitespace to one space).

    Raises:
        InvalidSegment: not an object of labels to names, or a label or name empty, too long, not text or
            holding a NUL character (which PostgreSQL cannot store; refused on both stores alike).
    """
    if not isinstance(names, dict) or not names:
        raise InvalidSegment('speakers must be an object of labels to names, e.g. {"S2": "Priya"}')
    if len(names) > MAX_LABELS:
        raise InvalidSegment(f"at most {MAX_LABELS} labels at once, not {len(names)}")
    clean: dict[str, str | None] = {}
    for label, name in names.items():
        if not isinstance(label, str) or not label.strip() or len(label) > MAX_LABEL_CHARS:
            raise InvalidSegment(f"speaker label {label!r} must be 1 to {MAX_LABEL_CHARS} characters")
        # A label is an id: no control character (NUL included, which PostgreSQL cannot store), and valid
        # Unicode (a JSON `\\ud800` decodes to a lone surrogate, which no UTF-8 database can store).
        if "\x00" in label:
            raise InvalidSegment(f"speaker label {label!r} contains a NUL character")
        if has_control_characters(label):
            raise InvalidSegment(f"speaker label {label!r} contains a control character")
        if not is_valid_unicode(label):
            raise InvalidSegment(f"speaker label {label!r} contains a lone surrogate; it must be valid Unicode")
        if name is not None:
            if not isinstance(name, str):
                raise InvalidSegment(f"the name of {label!r} must be text or null (null withdraws it)")
            if "\x00" in name:
                raise InvalidSegment(f"the name of {label!r} contains a NUL character")
            if not is_valid_unicode(name):
                raise InvalidSegment(f"the name of {label!r} contains a lone surrogate; it must be valid Unicode")
            name = " ".join(name.split())
            if not name or len(name) > MAX_NAME_CHARS:
                raise InvalidSegment(f"the name of {label!r} must be 1 to {MAX_NAME_CHARS} characters, "
                                     "or null to withdraw it")
        clean[label.strip()] = name
    return clean


def read_current(log: Any, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> dict[str, SpeakerName]:
    """Each label's newest name (`read_history`'s last version of each)."""
    return {entry.label: entry for entry in read_history(log, meeting_id, tenant=tenant)}
