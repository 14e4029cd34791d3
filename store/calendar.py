"""Calendars in and out: a meeting's title, start and attendees from an iCalendar invite, and its open todos
as iCalendar VTODOs or CSV rows for a tracker.

Read and written with the `icalendar` package (RFC 5545), imported when a calendar is first read or
written. Each todo links back to the moment it was said: the meeting page at the cited segment and time.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

from .errors import StoreError
from .timecode import format_time

if TYPE_CHECKING:
    from .records import LedgerItem, MeetingDigest


class MeetingHeader(Protocol):
    """What the todos say of their meeting (export.py's `MeetingHeader` has it)."""

    meeting_id: str
    title: str
    started_at: str | None

#: The largest invite read (a real one is a few kilobytes; a calendar of years is not an invite).
MAX_INVITE_BYTES = 1_000_000
#: The columns of `--format csv`, in order.
CSV_COLUMNS = ("meeting_id", "meeting_title", "todo_id", "owner", "task", "due", "due_date", "said_at", "start",
               "end", "text", "link")


class CalendarError(StoreError):
    """An iCalendar file that cannot be used: not iCalendar, no event in it, or a start that names no time."""


@dataclass(frozen=True, slots=True)
class Invite:
    """What a calendar invite says of a meeting: each field None (or empty) when the invite does not say it."""

    title: str | None = None
    started_at: str | None = None  # ISO 8601 with its offset, as the meeting's metadata keeps it
    participants: tuple[str, ...] = field(default_factory=tuple)
    problems: tuple[str, ...] = field(default_factory=tuple)  # what was there but could not be used


def read_invite(data: bytes | str, *, name: str = "the invite") -> Invite:
    """The first event of an iCalendar file: its SUMMARY as the title, DTSTART with its timezone as the start,
    and the organizer and attendees (their common names, else their addresses) as the participants.

    A start with no timezone (a "floating" time) or a whole day is left out and said in `problems`: the meeting's
    date needs an offset, and the caller's `--date` gives it.

    Raises:
        CalendarError: not iCalendar, too large, or no VEVENT in it (the message names `name`).
    """
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if len(raw) > MAX_INVITE_BYTES:
        raise CalendarError(f"{name} is {len(raw):,} bytes, more than an invite ({MAX_INVITE_BYTES:,} at most)")
    if not raw.lstrip().upper().startswith(b"BEGIN:VCALENDAR"):
        raise CalendarError(f"{name} is not an iCalendar file: it should start with BEGIN:VCALENDAR")
    import icalendar

    try:
        calendar = icalendar.Calendar.from_ical(raw)
    except (ValueError, IndexError, KeyError) as exc:
        raise CalendarError(f"{name} is not valid iCalendar: {exc}") from None
    events = calendar.walk("VEVENT")
    if not events:
        raise CalendarError(f"{name} holds no event (VEVENT): export the meeting's invite, not a task list")
    event = events[0]
    problems: list[str] = []
    title = str(event.get("SUMMARY") or "").strip() or None
    started_at = None
    start = event.get("DTSTART")
    if start is not None:
        try:
            value = start.dt
        except (AttributeError, ValueError) as exc:
            value = None
            problems.append(f"its DTSTART could not be read ({exc})")
        if isinstance(value, dt.datetime):
            if value.tzinfo is None or value.utcoffset() is None:
                problems.append("its start has no timezone (a floating time): give --date with an offset")
            else:
                started_at = value.isoformat()
        elif isinstance(value, dt.date):
            problems.append("its start is a whole day, not a time: give --date with a time and an offset")
    people: list[str] = []
    for prop in [event.get("ORGANIZER"), *_as_list(event.get("ATTENDEE"))]:
        if prop is None:
            continue
        who = _person(prop)
        if who and who not in people:
            people.append(who)
    return Invite(title, started_at, tuple(people), tuple(problems))


def with_invite(invite: Invite | None, title: str | None, started_at: str | None,
                participants: Any) -> tuple[str | None, str | None, Any]:
    """The meeting's title, start and participants: each as given, else the invite's."""
    if invite is None:
        return title, started_at, participants
    return (title or invite.title, started_at or invite.started_at,
            participants if participants else (list(invite.participants) or None))


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _person(prop: Any) -> str | None:
    """An attendee's or organizer's common name, else the address without `mailto:`."""
    params = getattr(prop, "params", {}) or {}
    name = str(params.get("CN") or "").strip().strip('"')
    if name:
        return name
    address = str(prop).strip()
    if address.lower().startswith("mailto:"):
        address = address[len("mailto:"):]
    return address or None


# -- todos out ----------------------------------------------------------------------------------------------
def open_todos(digest: MeetingDigest | None) -> list[LedgerItem]:
    """The meeting's todos that still stand (not superseded by a later statement), in time order."""
    if digest is None:
        return []
    return [item for item in digest.ledger if item.kind == "todo" and item.status == "current"]


def todo_link(base_url: str, meeting_id: str, item: LedgerItem) -> str:
    """The meeting page at the todo's first cited segment and time."""
    start = item.source.start
    seg = item.source.segment_ids[0] if item.source.segment_ids else ""
    return (f"{base_url.rstrip('/')}/#/m/{quote(meeting_id, safe='')}?t={start:.1f}"
            + (f"&seg={quote(seg, safe='')}" if seg else ""))


def _owner(item: LedgerItem, owner_names: Mapping[str, str] | None) -> str | None:
    if item.owner and owner_names and item.owner in owner_names:
        return f"{owner_names[item.owner]} ({item.owner})"
    return item.owner


def todos_ics(header: MeetingHeader, digest: MeetingDigest | None, *, base_url: str,
              owner_names: Mapping[str, str] | None = None, now: dt.datetime | None = None) -> str:
    """The open todos as an iCalendar file of VTODOs: SUMMARY the task, DUE the resolved date, CONTACT the
    owner, DESCRIPTION what was said and when, URL the page at that moment. Each todo's UID is its ledger id,
    so importing a later export updates the same tasks rather than adding them again."""
    import icalendar

    calendar = icalendar.Calendar()
    calendar.add("PRODID", "-//meetmem//meeting todos//EN")
    calendar.add("VERSION", "2.0")
    calendar.add("X-WR-CALNAME", f"Todos: {header.title}")
    stamp = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC).replace(microsecond=0)
    for item in open_todos(digest):
        todo = icalendar.Todo()
        todo.add("UID", f"{item.id}.{header.meeting_id}@meetmem")
        todo.add("DTSTAMP", stamp)
        todo.add("SUMMARY", item.task or item.text)
        owner = _owner(item, owner_names)
        if owner:
            todo.add("CONTACT", owner)
            todo.add("X-MEETMEM-OWNER", item.owner)
        if item.due_date:
            try:
                todo.add("DUE", dt.date.fromisoformat(item.due_date))
            except ValueError:
                pass
        link = todo_link(base_url, header.meeting_id, item)
        said = format_time(item.source.start)
        lines = [f"{item.text}", "", f"Said at {said} in {header.title}" + (f" ({header.started_at})"
                                                                             if header.started_at else "")]
        if item.due and not item.due_date:
            lines.append(f"Due: {item.due}")
        lines.append(link)
        todo.add("DESCRIPTION", "\n".join(lines))
        todo.add("URL", link)
        todo.add("STATUS", "NEEDS-ACTION")
        todo.add("CATEGORIES", ["meetmem"])
        calendar.add_component(todo)
    return calendar.to_ical().decode("utf-8")


def todos_csv(header: MeetingHeader, digest: MeetingDigest | None, *, base_url: str,
              owner_names: Mapping[str, str] | None = None) -> str:
    """The open todos as CSV (`CSV_COLUMNS`, a header row first), for trackers that import CSV."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for item in open_todos(digest):
        writer.writerow([_cell(v) for v in (
            header.meeting_id, header.title, item.id, _owner(item, owner_names) or "", item.task or item.text,
            item.due or "", item.due_date or "", format_time(item.source.start), f"{item.source.start:.2f}",
            f"{item.source.end:.2f}", item.text, todo_link(base_url, header.meeting_id, item))])
    return out.getvalue()


def _cell(value: str) -> str:
    """A CSV cell a spreadsheet will not run as a formula (`=`, `+`, `-`, `@` at the start are quoted)."""
    text = " ".join(str(value).split())
    return "'" + text if text[:1] in ("=", "+", "-", "@") and not _number(text) else text


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
