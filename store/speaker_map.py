"""A meeting's speaker map: the names people gave the transcript's speaker labels, every version kept.

The segments keep the labels the edge gave them (`S1`, `wearer`, ...): the log is never rewritten. A name
is a row in `speaker_names`, appended with the next version number for its label; the newest version of a
label is its name now, and a correction never removes the one before (the database refuses UPDATE, and
DELETE except when the meeting itself is deleted under its tombstone). A row with no name withdraws one
(the label is shown as itself again, and a suggested name is not applied).

The table and its refusals come with each engine's schema (store/schema.py; PostgreSQL's
migrations/versions/b21k01_speaker_names); `SpeakerMap` reads and writes it on either.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .errors import InvalidSegment, MeetingNotFound, StoreError
from .interchange import has_control_characters, is_valid_unicode
from .log import DEFAULT_TENANT, Log

TABLE = "speaker_names"
MAX_LABEL_CHARS = 100
MAX_NAME_CHARS = 200
MAX_LABELS = 200

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
    """The speaker names of every meeting in the log's database, on either engine (the table and its
    refusals come with the schema: store/schema.py, and PostgreSQL's b21k01_speaker_names).

    A new version is written under the meeting's lock, the one appends and deletion take, so two users
    renaming the same label at once get versions n+1 and n+2 (never a clash), and no name is added to a
    meeting being deleted.
    """

    def __init__(self, log: Log) -> None:
        self.log = log
        self._order = f"ORDER BY label{log.dialect.byte_order}, version"  # labels in byte order on both

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
        with self._writing(meeting_id, tenant) as conn:
            current = {e.label: e for e in map(_entry, conn.execute(
                f"SELECT label, name, version, source, set_at FROM {TABLE} WHERE tenant = ? AND meeting_id = ? "
                f"{self._order}", (tenant, meeting_id)).fetchall())}
            for label, name in clean.items():
                before = current.get(label)
                if before is not None and before.name == name:
                    continue
                version = before.version + 1 if before is not None else 1
                added.append(SpeakerName(label, name, version, source, now))
            self._insert(conn, tenant, meeting_id, added)
        return added

    def load(self, meeting_id: str, entries: list[SpeakerName], *, tenant: str = DEFAULT_TENANT) -> int:
        """Keep versions brought from another database as they were (`meetmem migrate`); returns how many
        were new here (a version held already with the same content is skipped).

        Raises:
            MeetingNotFound: the meeting is not here.
            StoreError: this database holds another content under one of the versions (nothing is stored).
        """
        with self._writing(meeting_id, tenant) as conn:
            held = {(e.label, e.version): e for e in map(_entry, conn.execute(
                f"SELECT label, name, version, source, set_at FROM {TABLE} WHERE tenant = ? AND meeting_id = ?",
                (tenant, meeting_id)).fetchall())}
            fresh = new_versions(meeting_id, held, entries)
            self._insert(conn, tenant, meeting_id, fresh)
        return len(fresh)

    @contextmanager
    def _writing(self, meeting_id: str, tenant: str) -> Iterator[Any]:
        """A session under the meeting's lock, for a meeting that is here; the database's refusal named."""
        try:
            with self.log.database.session(tenant, lock=meeting_id) as conn:
                key = (tenant, meeting_id)
                if conn.execute("SELECT 1 FROM meetings WHERE tenant = ? AND meeting_id = ?", key).fetchone() is None:
                    gone = conn.execute("SELECT deleted_at FROM meeting_deletions WHERE tenant = ? AND "
                                        "meeting_id = ?", key).fetchone()
                    raise MeetingNotFound(tenant, meeting_id, deleted_at=gone[0] if gone else None)
                yield conn
        except (MeetingNotFound, InvalidSegment):
            raise
        except StoreError as exc:
            raise StoreError(f"storing the speaker names of {meeting_id!r} failed, nothing was stored: {exc}") from exc

    @staticmethod
    def _insert(conn: Any, tenant: str, meeting_id: str, entries: list[SpeakerName]) -> None:
        if entries:
            conn.executemany(f"INSERT INTO {TABLE} (tenant, meeting_id, label, version, name, source, set_at) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?)",
                             [(tenant, meeting_id, e.label, e.version, e.name, e.source, e.set_at) for e in entries])

    def history(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> list[SpeakerName]:
        """Every version, by label then version."""
        rows = self.log.database.rows(f"SELECT label, name, version, source, set_at FROM {TABLE} WHERE tenant = ? "
                                      f"AND meeting_id = ? {self._order}", (tenant, meeting_id), tenant=tenant)
        return [_entry(r) for r in rows]

    def current(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> dict[str, SpeakerName]:
        """Each label's newest version."""
        return {entry.label: entry for entry in self.history(meeting_id, tenant=tenant)}


def _entry(row: Any) -> SpeakerName:
    return SpeakerName(str(row[0]), row[1], int(row[2]), str(row[3]), str(row[4]))


def now_stamp() -> str:
    """When a version is set: UTC, milliseconds, `Z` (the same text on both stores)."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def speaker_map_for(log: Log) -> SpeakerMap:
    """The speaker map of the log's database."""
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


def read_history(log: Log, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> list[SpeakerName]:
    """Every version, by label then version."""
    return SpeakerMap(log).history(meeting_id, tenant=tenant)


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
