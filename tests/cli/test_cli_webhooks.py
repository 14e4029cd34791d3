"""The CLI's side of issue 35 on a real SQLite file: `webhook add|list|deliveries|remove`, `ingest --ics`
taking a calendar invite's title, start and attendees, and `export --format ics|csv` of the open todos."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import icalendar

INVITE = Path(__file__).parent.parent / "store" / "data" / "google-invite.ics"


def _transcript(path: Path) -> Path:
    rows = [{"start": 0.0, "end": 4.0, "speaker": "Ana", "text": "Let's settle the casing."},
            {"start": 4.5, "end": 9.0, "speaker": "Bo",
             "text": "Priya will send the revised drawings to the factory by Friday."},
            {"start": 9.5, "end": 12.0, "speaker": "Ana", "text": "We decided to go with matte grey."}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_webhooks_invite_and_todos_from_the_command_line(meetmem_cli: Callable[..., Any], tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    added = meetmem_cli("webhook", "add", "https://hooks.example.com/meetmem", "--events", "meeting.closed",
                        "--json", db=db)
    assert added.returncode == 0, added.stderr
    endpoint = json.loads(added.stdout)
    assert endpoint["secret"].startswith("whsec_") and endpoint["events"] == ["meeting.closed"]
    listed = json.loads(meetmem_cli("webhook", "list", "--json", db=db).stdout)
    assert [e["id"] for e in listed] == [endpoint["id"]] and "secret" not in listed[0]

    ingested = meetmem_cli("ingest", "casing", str(_transcript(tmp_path / "t.jsonl")), "--ics", str(INVITE),
                           "--title", "Casing, as we call it", "--json", db=db)
    assert ingested.returncode == 0, ingested.stderr
    meta = json.loads(ingested.stdout)
    assert meta["title"] == "Casing, as we call it"  # the flag wins
    assert meta["started_at"] == "2027-03-01T10:00:00+01:00"  # the invite's, with its timezone
    assert meta["participants"] == ["Ana Lima", "Bo Chen", "priya@example.org"]

    # The closed meeting's event waits in the database for `meetmem serve` to send it.
    deliveries = json.loads(meetmem_cli("webhook", "deliveries", "--json", db=db).stdout)
    assert [(d["event"], d["meeting_id"], d["status"]) for d in deliveries] == [("meeting.closed", "casing", "pending")]

    ics = meetmem_cli("export", "casing", "--format", "ics", db=db)
    assert ics.returncode == 0, ics.stderr
    todos = icalendar.Calendar.from_ical(ics.stdout).walk("VTODO")
    assert len(todos) == 1 and "drawings" in str(todos[0]["SUMMARY"])
    assert todos[0]["DUE"].dt.isoformat() == "2027-03-05"  # "by Friday", from the invite's Monday
    assert str(todos[0]["URL"]).startswith("http://127.0.0.1:8000/#/m/casing?t=4.5")
    rows = list(csv.DictReader(io.StringIO(meetmem_cli("export", "casing", "--format", "csv", db=db).stdout)))
    assert [r["due_date"] for r in rows] == ["2027-03-05"] and rows[0]["said_at"] == "00:04"

    removed = meetmem_cli("webhook", "remove", endpoint["id"], db=db)
    assert removed.returncode == 0 and endpoint["id"] in removed.stdout
    assert json.loads(meetmem_cli("webhook", "list", "--json", db=db).stdout) == []


def test_bad_input_is_named_and_nothing_is_stored(meetmem_cli: Callable[..., Any], tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    for args, says in ((["webhook", "add", "ftp://x/y", "--events", "meeting.closed"], "not an http(s) URL"),
                       (["webhook", "add", "https://x/y", "--events", "meeting.closed", "--secret", "whsec_c2hvcnQ="],
                        "5 bytes"),
                       (["webhook", "remove", "wh_0000000000000000"], "no webhook")):
        result = meetmem_cli(*args, db=db)
        assert result.returncode == 1 and says in result.stderr, result.stderr
    bad = tmp_path / "broken.ics"
    bad.write_text("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VTODO\r\nUID:x\r\nEND:VTODO\r\nEND:VCALENDAR\r\n")
    result = meetmem_cli("ingest", "m", str(_transcript(tmp_path / "t.jsonl")), "--ics", str(bad), db=db)
    assert result.returncode == 1 and "broken.ics holds no event" in result.stderr, result.stderr
    listed = meetmem_cli("segments", "m", "--json", db=db)
    assert listed.returncode == 1 and "m" in listed.stderr and listed.stdout == ""  # nothing half-stored
