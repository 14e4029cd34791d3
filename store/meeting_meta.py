"""A meeting as users know it: its title, when it started (with the time zone) and who took part.

Kept beside the log rather than in it: metadata is not transcript and is not hash-chained, but it lives
in the same `meetings` row and is written in the same transaction as the batch that brings it, so a
refused batch leaves no metadata behind. Fields given later replace the stored ones (a corrected title);
fields not given are left as they are.

`started_at` anchors the meeting's wall clock: relative dates said in the meeting ("by Friday", "下周五")
resolve against its day, and "around 2:15 pm" becomes a position in the meeting.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from .errors import InvalidSegment

MAX_TITLE_CHARS = 300
MAX_PARTICIPANTS = 200
MAX_NAME_CHARS = 200


@dataclass(frozen=True, slots=True)
class MeetingMeta:
    """What a user says about a meeting; None (or an empty tuple) where nothing was said."""

    title: str | None = None
    started_at: str | None = None
    participants: tuple[str, ...] | None = None

    @property
    def empty(self) -> bool:
        return self.title is None and self.started_at is None and self.participants is None

    def start_datetime(self) -> dt.datetime | None:
        return None if self.started_at is None else dt.datetime.fromisoformat(self.started_at)

    def public(self) -> dict[str, Any]:
        return {"title": self.title, "started_at": self.started_at,
                "participants": list(self.participants) if self.participants is not None else []}


def parse_started_at(value: str) -> str:
    """An ISO 8601 date-time with its UTC offset, normalised (`2027-03-01T10:00:00+01:00`).

    A date alone or a time without an offset is refused: "10:00" means nothing without the zone, and a
    guess would shift every due date resolved from it.

    Raises:
        InvalidSegment: the value says what is wrong and shows the expected form.
    """
    text = value.strip() if isinstance(value, str) else value
    example = "e.g. 2027-03-01T10:00:00+01:00 or 2027-03-01T09:00:00Z"
    if not isinstance(text, str) or not text:
        raise InvalidSegment(f"started_at must be an ISO 8601 date-time with a UTC offset ({example})")
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise InvalidSegment(f"started_at {value!r} is not an ISO 8601 date-time ({example})") from None
    if "T" not in text.upper() and " " not in text:
        raise InvalidSegment(f"started_at {value!r} is a date without a time of day ({example})")
    if when.tzinfo is None or when.utcoffset() is None:
        raise InvalidSegment(f"started_at {value!r} has no UTC offset; add one such as +01:00 or Z ({example})")
    return when.isoformat()


def parse_participants(value: Any) -> tuple[str, ...]:
    """A list of names (or one comma-separated string, as the CLI takes it), trimmed, in order, once each.

    Raises:
        InvalidSegment: not a list of non-empty strings, or too many or too long.
    """
    if isinstance(value, str):
        value = [part for part in value.split(",") if part.strip()] if value.strip() else []
    if not isinstance(value, list | tuple):
        raise InvalidSegment("participants must be a list of names")
    if len(value) > MAX_PARTICIPANTS:
        raise InvalidSegment(f"participants holds {len(value)} names; at most {MAX_PARTICIPANTS}")
    names: list[str] = []
    for i, name in enumerate(value):
        if not isinstance(name, str) or not name.strip():
            raise InvalidSegment(f"participants[{i}] must be a non-empty name")
        name = " ".join(name.split())
        if len(name) > MAX_NAME_CHARS or any(ord(ch) < 32 for ch in name):
            raise InvalidSegment(f"participants[{i}] is longer than {MAX_NAME_CHARS} characters or holds "
                                 "control characters")
        if name not in names:
            names.append(name)
    return tuple(names)


def parse_title(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidSegment("title must be a non-empty string")
    title = " ".join(value.split())
    if len(title) > MAX_TITLE_CHARS:
        raise InvalidSegment(f"title is longer than {MAX_TITLE_CHARS} characters")
    return title


def meeting_meta(title: Any = None, started_at: Any = None, participants: Any = None) -> MeetingMeta:
    """Validated metadata from loose input (CLI flags, an HTTP body); None leaves a field unsaid."""
    return MeetingMeta(
        title=None if title is None else parse_title(title),
        started_at=None if started_at is None else parse_started_at(started_at),
        participants=None if participants is None else parse_participants(participants),
    )


def write_meta(conn: sqlite3.Connection | Any, tenant: str, meeting_id: str, meta: MeetingMeta, *,
               mark: str = "?") -> None:
    """Store the fields `meta` gives on the meeting's row (inside the caller's write transaction), on either
    backend: `mark` is the driver's parameter marker (sqlite3 `?`, psycopg `%s`)."""
    sets: list[str] = []
    args: list[Any] = []
    if meta.title is not None:
        sets.append(f"title = {mark}")
        args.append(meta.title)
    if meta.started_at is not None:
        sets.append(f"started_at = {mark}")
        args.append(meta.started_at)
    if meta.participants is not None:
        sets.append(f"participants = {mark}")
        args.append(json.dumps(list(meta.participants), ensure_ascii=False))
    if not sets:
        return
    conn.execute(f"UPDATE meetings SET {', '.join(sets)} WHERE tenant = {mark} AND meeting_id = {mark}",
                 (*args, tenant, meeting_id))


def meta_from_row(title: str | None, started_at: str | None, participants: str | None) -> MeetingMeta:
    names: tuple[str, ...] | None = None
    if participants:
        try:
            loaded = json.loads(participants)
            names = tuple(str(n) for n in loaded) if isinstance(loaded, list) else None
        except ValueError:
            names = None
    return MeetingMeta(title=title, started_at=started_at, participants=names)
