"""Calendars in and out (store/calendar.py): an invite in the shape a calendar exports gives the meeting's
title, start with its timezone and attendees; the open todos go out as VTODOs and CSV rows that a calendar's
parser (the `icalendar` package) and the csv module read back."""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
from pathlib import Path

import icalendar
import pytest

from meetmem.store.calendar import CSV_COLUMNS, CalendarError, read_invite, todos_csv, todos_ics, with_invite
from meetmem.store.export import header_for, render
from meetmem.store.records import LedgerItem, MeetingDigest, Source

INVITE = Path(__file__).parent / "data" / "google-invite.ics"


def test_an_invite_gives_title_start_with_its_timezone_and_attendees() -> None:
    invite = read_invite(INVITE.read_bytes(), name=INVITE.name)
    assert invite.title == "Casing review: tooling and pilot run"
    assert invite.started_at == "2027-03-01T10:00:00+01:00"  # Europe/Berlin in winter
    assert invite.participants == ("Ana Lima", "Bo Chen", "priya@example.org")  # organizer first, then by CN
    assert invite.problems == ()
    assert with_invite(invite, "Given title", None, None) == ("Given title", invite.started_at,
                                                              list(invite.participants))


def test_a_floating_or_whole_day_start_is_said_not_guessed() -> None:
    floating = read_invite("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:a\r\nDTSTART:20270301T100000\r\n"
                           "SUMMARY:Standup\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")
    assert floating.started_at is None and "no timezone" in floating.problems[0]
    day = read_invite("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:b\r\nDTSTART;VALUE=DATE:20270301\r\n"
                      "END:VEVENT\r\nEND:VCALENDAR\r\n")
    assert day.started_at is None and "whole day" in day.problems[0] and day.title is None


@pytest.mark.parametrize(("data", "says"), [
    (b"not a calendar at all", "not an iCalendar file"),
    (b"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VTODO\r\nUID:x\r\nEND:VTODO\r\nEND:VCALENDAR\r\n", "holds no event"),
    (b"BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDTSTART:garbage", "not valid iCalendar"),
    (b"BEGIN:VCALENDAR\r\n" + b"X" * 1_100_000, "more than an invite"),
])
def test_a_bad_file_is_named_with_what_is_wrong(data: bytes, says: str) -> None:
    with pytest.raises(CalendarError, match=says) as raised:
        read_invite(data, name="invite.ics")
    assert "invite.ics" in str(raised.value)


def _digest() -> MeetingDigest:
    todo = LedgerItem("t1", "todo", "Priya will send the revised drawings to the factory by Friday.",
                      Source(63.2, 67.9, ("seg-a",)), owner="S2", task="send the revised drawings to the factory",
                      due="Friday", due_date="2027-03-05")
    old = LedgerItem("t0", "todo", "Bo will order the samples.", Source(10.0, 12.0, ("seg-0",)), status="superseded",
                     superseded_by="t2", owner="Bo", task="order the samples")
    loose = LedgerItem("t2", "todo", "=HYPERLINK(\"x\") Dev books the lab sometime.", Source(90.0, 92.5, ("seg-b",)),
                       owner="Dev", task="=HYPERLINK(\"x\") book the lab", due="sometime")
    decision = LedgerItem("d1", "decision", "We go with matte grey.", Source(20.0, 22.0, ("seg-c",)))
    return MeetingDigest(meeting_id="casing", sections=(), l2=(), ledger=(old, todo, loose, decision), through_pos=9,
                         final=True)


def test_open_todos_round_trip_through_a_calendar_parser() -> None:
    header = header_for("casing", [], title="Casing review", started_at="2027-03-01T10:00:00+01:00")
    text = todos_ics(header, _digest(), base_url="https://meetmem.example/", owner_names={"S2": "Priya"})
    calendar = icalendar.Calendar.from_ical(text)
    todos = calendar.walk("VTODO")
    assert [str(t["SUMMARY"]) for t in todos] == ["send the revised drawings to the factory",
                                                 "=HYPERLINK(\"x\") book the lab"]  # the superseded one is out
    first = todos[0]
    assert str(first["CONTACT"]) == "Priya (S2)" and str(first["X-MEETMEM-OWNER"]) == "S2"
    assert first["DUE"].dt.isoformat() == "2027-03-05"
    assert str(first["URL"]) == "https://meetmem.example/#/m/casing?t=63.2&seg=seg-a"
    assert "Said at 01:03" in str(first["DESCRIPTION"]) and str(first["UID"]) == "t1.casing@meetmem"
    assert "DUE" not in todos[1] and "Due: sometime" in str(todos[1]["DESCRIPTION"])
    # The same export twice is the same tasks: a calendar importing it again updates rather than adds.
    again = icalendar.Calendar.from_ical(todos_ics(header, _digest(), base_url="https://meetmem.example"))
    assert [str(t["UID"]) for t in again.walk("VTODO")] == [str(t["UID"]) for t in todos]


def test_open_todos_as_csv_for_a_tracker() -> None:
    header = header_for("casing", [], title="Casing review")
    rows = list(csv.reader(io.StringIO(todos_csv(header, _digest(), base_url="http://127.0.0.1:8000"))))
    assert tuple(rows[0]) == CSV_COLUMNS and len(rows) == 3
    first = dict(zip(CSV_COLUMNS, rows[1], strict=True))
    assert first["task"] == "send the revised drawings to the factory" and first["due_date"] == "2027-03-05"
    assert first["said_at"] == "01:03" and first["link"].endswith("#/m/casing?t=63.2&seg=seg-a")
    second = dict(zip(CSV_COLUMNS, rows[2], strict=True))
    assert second["task"].startswith("'=HYPERLINK")  # a spreadsheet shows it; it does not run it


def test_export_renders_both_formats() -> None:
    header = header_for("casing", [])
    assert render("ics", header, [], _digest()).startswith("BEGIN:VCALENDAR")
    assert render("csv", header, [], None).splitlines() == [",".join(CSV_COLUMNS)]  # no digest: no todos


CALCURSE_EXPORT = Path(__file__).parent / "data" / "calcurse-export.ics"


def test_a_real_calendars_export_is_read() -> None:
    """calcurse's own export (tests/store/data/README.md says how it was made): its first event is a whole
    day, its meeting a floating time; both are read, and what cannot be used is said."""
    calendar = icalendar.Calendar.from_ical(CALCURSE_EXPORT.read_bytes())
    assert [str(e["SUMMARY"]) for e in calendar.walk("VEVENT")] == ["Ship the pilot run",
                                                                   "Casing review: tooling and pilot run"]
    invite = read_invite(CALCURSE_EXPORT.read_bytes(), name=CALCURSE_EXPORT.name)
    assert invite.title == "Ship the pilot run" and invite.started_at is None
    assert "whole day" in invite.problems[0]


@pytest.mark.skipif(shutil.which("calcurse") is None, reason="calcurse (Debian package) is not installed")
def test_exported_todos_import_into_a_real_calendar(tmp_path: Path) -> None:
    """The open todos, exported, imported by calcurse (a calendar program): each task is there by name."""
    header = header_for("casing", [], title="Casing review")
    exported = tmp_path / "todos.ics"
    exported.write_text(todos_ics(header, _digest(), base_url="https://meetmem.example"), encoding="utf-8")
    data = tmp_path / "calcurse"
    data.mkdir()
    imported = subprocess.run(["calcurse", "-D", str(data), "-q", "-i", str(exported)], capture_output=True,
                              text=True, timeout=60)
    assert imported.returncode == 0, imported.stderr
    listed = subprocess.run(["calcurse", "-D", str(data), "-t"], capture_output=True, text=True, timeout=60)
    assert "send the revised drawings to the factory" in listed.stdout
    assert "book the lab" in listed.stdout and "order the samples" not in listed.stdout  # superseded: not open
