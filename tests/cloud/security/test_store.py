"""Issue 30, the store's findings, replayed on both stores through the API, the CLI and raw database sessions:

- 4: retention trusted the device's `started_at`: a meeting posted a second earlier with a start in 1970
  was deleted by `retention apply` (its device's next batch got 409), and one of 9999 was never deleted;
- 11: a lone surrogate in a speaker label or name answered 500; a NUL in a meeting id passed the id check
  and reached PostgreSQL (a retryable 503);
- 12: a tombstone row inserted by hand, unsigned, opened its meeting's rows to DELETE without dropping a
  trigger (only `verify` noticed, afterwards).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from meetmem.store.backends import open_log
from meetmem.store.meeting_meta import MeetingMeta
from meetmem.store.receipts import ReceiptKey
from meetmem.store.records import GENESIS_HASH, SegmentInput
from meetmem.store.tombstones import sign_tombstone

BACKENDS = ("sqlite", "postgres")

MEETING = "standup"


def _batch(first_seq: int = 0, n: int = 3, **meta: Any) -> dict[str, Any]:
    return {"device_id": "glasses", "segments": [
        {"seq": first_seq + i, "start": float(first_seq + i), "end": first_seq + i + 0.9, "speaker": "S1",
         "text": f"the budget is {first_seq + i + 1} thousand euros"} for i in range(n)], **meta}


def _segments(n: int = 3) -> list[SegmentInput]:
    return [SegmentInput(seq=i, start=float(i), end=i + 0.9, speaker="S1", text=f"point {i}") for i in range(n)]


@pytest.fixture
def cli_store(make_api: Callable[..., Any]) -> tuple[Any, tuple[str, ...], Path | str]:
    """An app on the test's store; the CLI's options naming that store (`--db`, and `--database` on
    PostgreSQL); and the store as `open_log` takes it."""
    api = make_api(embedders=None)
    url = api.settings.database_url
    where = ("--db", str(api.settings.db), *(("--database", url) if url else ()))
    return api, where, url or api.settings.db


# -- 4: retention on the server's clock ---------------------------------------------------------------------
def test_a_device_start_of_1970_does_not_age_a_meeting_just_posted(cli_store: tuple[Any, ...],
                                                                   meetmem_cli: Callable[..., Any]) -> None:
    api, where, _ = cli_store
    headers = api.headers(api.token("local"))
    r = api.client.post(f"/v1/meetings/{MEETING}/segments", headers=headers,
                        json=_batch(started_at="1970-01-01T00:00:00+00:00"))
    assert r.status_code == 200, r.text
    assert api.client.post(f"/v1/meetings/{MEETING}/close", headers=headers).status_code == 200
    result = meetmem_cli("retention", "apply", "--days", "1", "--json", *where, db=None)
    assert result.returncode == 0, result.stderr
    assert result.json()["expired"] == [] and result.json()["deleted"] == []
    # The device goes on: its next batch is stored, not refused as a deleted meeting's.
    r = api.client.post(f"/v1/meetings/{MEETING}/segments", headers=headers, json=_batch(first_seq=3))
    assert r.status_code == 200, r.text
    assert len(api.client.get(f"/v1/meetings/{MEETING}/segments", headers=headers).json()) == 6


def test_a_device_start_of_9999_does_not_keep_an_old_meeting(cli_store: tuple[Any, ...],
                                                             meetmem_cli: Callable[..., Any]) -> None:
    api, where, target = cli_store
    first_stored = (datetime.now(UTC) - timedelta(days=40)).isoformat()
    with open_log(target, clock=lambda: first_stored) as log:  # the server's clock, 40 days ago
        for meeting_id in ("forever", "still-open"):
            log.append(meeting_id, "glasses", _segments(), meta=MeetingMeta(started_at="9999-12-31T23:59:59+00:00"))
        log.close_meeting("forever")
    result = meetmem_cli("retention", "apply", "--days", "30", "--json", *where, db=None)
    assert result.returncode == 0, result.stderr
    done = result.json()
    # Deleted by the server's first arrival; the open meeting (a device may still be sending) is kept.
    assert [(e["meeting_id"], e["basis"], e["since"]) for e in done["expired"]] == [
        ("forever", "first_received", first_stored)]
    assert [t["meeting_id"] for t in done["deleted"]] == ["forever"]
    headers = api.headers(api.token("local"))
    assert api.client.get("/v1/meetings/forever", headers=headers).status_code == 404
    assert api.client.get("/v1/meetings/still-open", headers=headers).status_code == 200


# -- 11: text a database cannot store, and control characters in ids ----------------------------------------
def test_a_lone_surrogate_in_a_speaker_label_or_name_is_a_422(api_both: tuple[Any, dict[str, str]]) -> None:
    api, headers = api_both
    for body, field in ((b'{"speakers": {"\\ud800": "Maria"}}', "speaker label"),
                        (b'{"speakers": {"S1": "Ma\\udfffria"}}', "name of 'S1'"),
                        (b'{"speakers": {"S\\u0001": "Maria"}}', "speaker label")):
        r = api.client.put(f"/v1/meetings/{MEETING}/speakers", content=body,
                           headers={**headers, "Content-Type": "application/json"})
        assert r.status_code == 422 and field in r.json()["detail"], (body, r.text)
    assert api.client.get(f"/v1/meetings/{MEETING}/speakers/history", headers=headers).json() == []
    # Segment text, titles and device ids holding one are refused alike, nothing stored.
    for body in (b'{"device_id": "g", "segments": [{"seq": 9, "start": 0, "end": 1, "text": "a\\ud800"}]}',
                 b'{"device_id": "g\\ud800", "segments": [{"seq": 9, "start": 0, "end": 1, "text": "a"}]}',
                 b'{"device_id": "g", "title": "\\udc00", "segments": [{"seq": 9, "start": 0, "end": 1, '
                 b'"text": "a"}]}'):
        r = api.client.post(f"/v1/meetings/{MEETING}/segments", content=body,
                            headers={**headers, "Content-Type": "application/json"})
        assert r.status_code == 422, (body, r.text)
    assert len(api.client.get(f"/v1/meetings/{MEETING}/segments", headers=headers).json()) == 3


@pytest.mark.parametrize("meeting_id", ["a%00b", "%00", "a%01b", "a%1Fb", "a%7Fb"])
def test_a_control_character_in_a_meeting_id_is_a_422(api_both: tuple[Any, dict[str, str]], meeting_id: str) -> None:
    api, headers = api_both
    for method, path in (("GET", ""), ("GET", "/segments"), ("GET", "/speakers"), ("GET", "/export"),
                         ("GET", "/audio"), ("POST", "/close")):
        r = api.client.request(method, f"/v1/meetings/{meeting_id}{path}", headers=headers)
        assert r.status_code == 422 and "meeting_id" in r.text, (method, path, r.status_code, r.text)
    r = api.client.post(f"/v1/meetings/{meeting_id}/segments", headers=headers, json=_batch())
    assert r.status_code == 422, r.text


def test_a_control_character_in_an_asking_device_id_is_a_422(api_both: tuple[Any, dict[str, str]]) -> None:
    api, headers = api_both
    for device_id in ("\x00", "g\x00", "\x01", " \x7f "):
        r = api.client.post(f"/v1/meetings/{MEETING}/ask", headers=headers,
                            json={"question": "what is the budget?", "device_id": device_id})
        assert r.status_code == 422 and "device_id" in r.text, (device_id, r.text)


@pytest.fixture
def api_both(make_api: Callable[..., Any]) -> tuple[Any, dict[str, str]]:
    """An app with one meeting of three segments, and the headers of its tenant."""
    api = make_api(embedders=None)
    headers = api.headers(api.token("local"))
    assert api.client.post(f"/v1/meetings/{MEETING}/segments", headers=headers, json=_batch()).status_code == 200
    return api, headers


# -- 12: tombstones the database refuses --------------------------------------------------------------------
def _forged(meeting_id: str, *, segments: int, head: tuple[int, str], signed: bool = True) -> tuple[Any, ...]:
    """A tombstone as someone without the server's key writes it: well formed, describing the rows exactly,
    signed with a key of their own (or not at all)."""
    t = sign_tombstone(ReceiptKey(b"not the server's key"), tenant="local", meeting_id=meeting_id,
                       deleted_at=datetime.now(UTC).isoformat(), reason="forged", segments=segments,
                       head_pos=head[0], head_hash=head[1])
    return (t.tenant, t.meeting_id, t.deleted_at, t.reason, t.segments, t.head_pos, t.head_hash, t.key_id,
            t.sig if signed else "", t.version)


_INSERT = ("INSERT INTO meeting_deletions (tenant, meeting_id, deleted_at, reason, segments, head_pos, head_hash, "
           "key_id, sig, version) VALUES ({m})")


def test_a_tombstone_written_by_hand_does_not_open_a_meeting(cloud_backend: str | None, tmp_path: Path) -> None:
    target = cloud_backend or tmp_path / "log.db"
    key = ReceiptKey(b"the server's key")
    with open_log(target) as log:
        for meeting_id in ("kept", "deleted"):
            log.append(meeting_id, "glasses", _segments())
        head = log.head("kept")
        assert head is not None
    forged = [_forged("kept", segments=3, head=head, signed=False), _forged("kept", segments=3, head=head)]
    if cloud_backend is None:
        _forge_on_sqlite(target, forged)
    else:
        _forge_on_postgres(cloud_backend, forged, head)
    with open_log(target) as log:
        assert log.tombstone("kept") is None
        assert len(list(log.chain("kept"))) == 3 and log.verify("kept").ok
        # The one door still opens: a deletion signed by the server's key.
        tombstone, _ = log.delete_meeting("deleted", key=key)
        assert log.tombstone("deleted") == tombstone and not log.has_meeting("deleted")
        log.check_tombstone(tombstone, key)


def _forge_on_sqlite(path: Path, forged: list[tuple[Any, ...]]) -> None:
    # Anyone holding the file (the sqlite3 shell, a script): no tombstone goes in, so no row comes out.
    with closing(sqlite3.connect(path)) as conn:
        for row in forged:
            with pytest.raises(sqlite3.DatabaseError):
                conn.execute(_INSERT.format(m=", ".join("?" * 10)), row)
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                conn.execute("DELETE FROM segments WHERE meeting_id = 'kept'")
    # A meetmem log's own connection, outside `delete_meeting` (no key in hand): refused by the trigger.
    with open_log(path) as log:
        for row in forged:
            with pytest.raises(sqlite3.IntegrityError, match="tombstone must"):
                log.database.conn.execute(_INSERT.format(m=", ".join("?" * 10)), row)
        # Nor does one that misstates the rows pass, whatever function a program registers.
        log.database.conn.create_function("meetmem_tombstone_signed", 10, lambda *_: 1)
        head = log.head("kept")
        assert head is not None
        with pytest.raises(sqlite3.IntegrityError, match="rows and head as stored"):
            log.database.conn.execute(_INSERT.format(m=", ".join("?" * 10)), _forged("kept", segments=2, head=head))


def _forge_on_postgres(url: str, forged: list[tuple[Any, ...]], head: tuple[int, str]) -> None:
    import psycopg

    # The database's owner, serving the tenant (row security holds the owner too): refused by the trigger.
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT set_config('app.tenant', 'local', false)")
        for row in forged:
            with pytest.raises(psycopg.errors.RestrictViolation, match="tombstone"):
                conn.execute(_INSERT.format(m=", ".join(["%s"] * 10)), row)
            with pytest.raises(psycopg.errors.RestrictViolation, match="append-only"):
                conn.execute("DELETE FROM segments WHERE meeting_id = 'kept'")
    # The service's role through the deletion function, with no signature or one misstating the rows.
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET ROLE meetmem_app")
        conn.execute("SELECT set_config('app.tenant', 'local', false)")
        for row in (forged[0], _forged("kept", segments=2, head=head), _forged("kept", segments=3,
                                                                              head=(-1, GENESIS_HASH))):
            with pytest.raises(psycopg.errors.RestrictViolation, match="tombstone"):
                conn.execute("SELECT meetmem_delete_meeting(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", row)
