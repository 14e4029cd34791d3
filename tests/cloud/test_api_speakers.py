"""The speaker map over HTTP: names suggested from introductions and from being addressed (evidence cited),
corrected by a user as new versions (segments never rewritten), used by asks and the ledger's owners, and
gone with its meeting. On both stores: a SQLite file and a PostgreSQL database (whose own guarantees for the
map are tests/store/pg/test_pg_speaker_map.py's)."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from typing import Any

import pytest

from meetmem.answers.speaker_names import suggest
from meetmem.store.records import Segment

Api = Any
MEETING = "casing-review"

#: Every test here that builds the app runs on the SQLite file and on PostgreSQL (tests/cloud/conftest.py).
BACKENDS = ("sqlite", "postgres")

LINES = [
    ("S1", "Good morning everyone, let's start with the casing."),
    ("S2", "Hi, I'm Priya from finance."),
    ("S2", "The budget for the casing is forty thousand euros and we are not using titanium."),
    ("S1", "Thanks. Tom, what do you think about the hinge?"),
    ("S3", "The hinge needs a second supplier, and I will send the quote by Friday."),
    ("S1", "Okay, over to you, Priya."),
    ("S2", "The aluminium price went up by twelve percent since March."),
    ("S3", "I think the titanium option is too heavy anyway."),
]


def _post(api: Api, headers: dict[str, str], lines: list[tuple[str, str]] = LINES) -> None:
    rows = [{"seq": i, "start": 6.0 * i, "end": 6.0 * i + 5.0, "speaker": speaker, "text": text}
            for i, (speaker, text) in enumerate(lines)]
    r = api.client.post(f"/v1/meetings/{MEETING}/segments", json={"device_id": "glasses", "segments": rows},
                        headers=headers)
    assert r.status_code == 200, r.text


@pytest.fixture
def loaded(api: Api) -> tuple[Api, dict[str, str]]:
    headers = api.headers(api.token("local"))
    _post(api, headers)
    assert api.service.scheduler.indexer.wait_idle(60)
    return api, headers


def _raw(api: Api, sql: str, *, tenant: str = "local") -> list[tuple[Any, ...]]:
    """One statement behind the service's back, as the database's owner (PostgreSQL: serving `tenant`)."""
    if api.settings.database_url is None:
        with closing(sqlite3.connect(api.settings.db)) as conn:
            rows = conn.execute(sql).fetchall()
            conn.commit()
            return rows
    import psycopg

    with psycopg.connect(api.settings.database_url) as conn:
        conn.execute("SELECT set_config('app.tenant', %s, false)", (tenant,))
        cur = conn.execute(sql)
        return cur.fetchall() if cur.description else []


def _refused(api: Api) -> tuple[type[BaseException], ...]:
    if api.settings.database_url is None:
        return (sqlite3.DatabaseError,)
    import psycopg

    return (psycopg.Error,)


def _seg(i: int, speaker: str, text: str, start: float) -> Segment:
    return Segment(segment_id=f"s{i}", tenant="t", meeting_id="m", device_id="d", seq=i, start=start,
                   end=start + 4, text=text, speaker=speaker, lang=None, raw_text=None, confidence=None,
                   supersedes=None, received_at="", chain_pos=i, prev_hash="", hash="")


def test_suggestions_cite_introductions_and_addresses() -> None:
    segments = [_seg(i, s, t, 6.0 * i) for i, (s, t) in enumerate(LINES)]
    found = suggest(segments)
    assert found["S2"].name == "Priya" and found["S3"].name == "Tom"
    assert "S1" not in found  # nobody named the chair
    assert found["S2"].weight == 3 + 1  # introduced (3), then addressed before speaking (1)
    hows = [e["how"] for e in found["S3"].evidence]
    assert hows == ["addressed by name", "spoke next"]
    assert [e["segment_id"] for e in found["S3"].evidence] == ["s3", "s4"]


def test_an_address_without_a_different_next_speaker_or_too_late_names_no_one() -> None:
    segments = [_seg(0, "S1", "Tom, what do you think?", 0), _seg(1, "S1", "Never mind.", 4),
                _seg(2, "S1", "Anna, can you check it?", 10), _seg(3, "S2", "Sure.", 30),
                _seg(4, "S1", "Thanks, Friday then.", 40), _seg(5, "S2", "Yes.", 44)]
    assert suggest(segments) == {}


def test_the_map_is_read_corrected_and_versioned(loaded: tuple[Api, dict[str, str]]) -> None:
    api, headers = loaded
    r = api.client.get(f"/v1/meetings/{MEETING}/speakers", headers=headers)
    assert r.status_code == 200, r.text
    by_label = {s["label"]: s for s in r.json()["speakers"]}
    assert list(by_label) == ["S1", "S2", "S3"]
    assert (by_label["S2"]["name"], by_label["S2"]["source"]) == ("Priya", "suggested")
    assert by_label["S2"]["suggestion"]["evidence"][0]["text"] == "Hi, I'm Priya from finance."
    assert by_label["S1"]["name"] is None and by_label["S1"]["segments"] == 3

    r = api.client.put(f"/v1/meetings/{MEETING}/speakers", json={"speakers": {"S1": "Maria", "S3": "Thomas"}},
                       headers=headers)
    assert r.status_code == 200, r.text
    by_label = {s["label"]: s for s in r.json()["speakers"]}
    assert (by_label["S1"]["name"], by_label["S1"]["source"], by_label["S1"]["version"]) == ("Maria", "user", 1)
    assert by_label["S3"]["name"] == "Thomas" and by_label["S3"]["suggestion"]["name"] == "Tom"
    # A correction and a withdrawal: new versions, the old ones kept.
    api.client.put(f"/v1/meetings/{MEETING}/speakers", json={"speakers": {"S1": "Marie", "S2": None}},
                   headers=headers)
    history = api.client.get(f"/v1/meetings/{MEETING}/speakers/history", headers=headers).json()
    assert [(h["label"], h["name"], h["version"]) for h in history] == [
        ("S1", "Maria", 1), ("S1", "Marie", 2), ("S2", None, 1), ("S3", "Thomas", 1)]
    by_label = {s["label"]: s for s in api.client.get(f"/v1/meetings/{MEETING}/speakers",
                                                      headers=headers).json()["speakers"]}
    assert by_label["S2"]["name"] is None and by_label["S2"]["source"] == "user"
    # The segments still carry the edge's labels.
    segments = api.client.get(f"/v1/meetings/{MEETING}/segments", headers=headers).json()
    assert {s["speaker"] for s in segments} == {"S1", "S2", "S3"}
    # The database refuses to rewrite or remove a version, even to its owner.
    for sql in ("UPDATE speaker_names SET name = 'x'", "DELETE FROM speaker_names"):
        with pytest.raises(_refused(api), match="append-only"):
            _raw(api, sql)
    assert len(api.client.get(f"/v1/meetings/{MEETING}/speakers/history", headers=headers).json()) == 4


@pytest.mark.parametrize(("body", "status"), [
    ({"speakers": {}}, 422),
    ({"speakers": {"S1": ""}}, 422),
    ({"speakers": {"S1": 5}}, 422),
    ({"speakers": {"": "Priya"}}, 422),
    ({"names": {"S1": "Priya"}}, 422),
    ({"speakers": {"S1": "x" * 201}}, 422),
])
def test_bad_names_are_refused_and_nothing_is_stored(loaded: tuple[Api, dict[str, str]], body: dict[str, Any],
                                                     status: int) -> None:
    api, headers = loaded
    r = api.client.put(f"/v1/meetings/{MEETING}/speakers", json=body, headers=headers)
    assert r.status_code == status, r.text
    assert api.client.get(f"/v1/meetings/{MEETING}/speakers/history", headers=headers).json() == []


def test_an_unknown_meeting_is_404(api: Api) -> None:
    headers = api.headers(api.token("local"))
    for method in ("get", "put"):
        r = getattr(api.client, method)("/v1/meetings/nope/speakers", headers=headers,
                                        **({"json": {"speakers": {"S1": "A"}}} if method == "put" else {}))
        assert r.status_code == 404, r.text


def test_asks_and_ledger_owners_use_the_map(loaded: tuple[Api, dict[str, str]]) -> None:
    api, headers = loaded
    r = api.client.post(f"/v1/meetings/{MEETING}/ask", json={"question": "What did Priya say about titanium?"},
                        headers=headers)
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["citations"] and {c["speaker"] for c in got["citations"]} == {"S2"}, got
    assert "not using titanium" in got["answer"]
    assert got["answer"].startswith("Priya (S2) said:"), got["answer"]
    # Renamed by a user: the new name finds S3, and the suggestion's name no longer does.
    api.client.put(f"/v1/meetings/{MEETING}/speakers", json={"speakers": {"S3": "Thomas"}}, headers=headers)
    got = api.client.post(f"/v1/meetings/{MEETING}/ask", json={"question": "What did Thomas say about the hinge?"},
                          headers=headers).json()
    assert got["citations"] and {c["speaker"] for c in got["citations"]} == {"S3"}, got
    api.client.post(f"/v1/meetings/{MEETING}/close", headers=headers)
    ledger = api.client.get(f"/v1/meetings/{MEETING}/ledger", headers=headers).json()
    owned = [t for t in ledger["todos"] if t.get("owner") == "S3"]
    assert owned and all(t["owner_name"] == "Thomas" for t in owned), ledger["todos"]
    # The export names them as the ledger does.
    doc = api.client.get(f"/v1/meetings/{MEETING}/export?format=json", headers=headers).json()
    def filled(items: list[dict[str, Any]]) -> list[dict[str, Any]]:  # the route's model adds nulls
        return [{k: v for k, v in item.items() if v is not None} for item in items]

    assert filled(doc["ledger"]["todos"]) == filled(ledger["todos"])
    minutes = api.client.get(f"/v1/meetings/{MEETING}/export?format=md", headers=headers).text
    assert "| Thomas (S3) |" in minutes, minutes


def test_names_with_a_nul_character_are_refused(loaded: tuple[Api, dict[str, str]]) -> None:
    api, headers = loaded
    for names in ({"S1": "Ma\x00ria"}, {"S\x001": "Maria"}):
        r = api.client.put(f"/v1/meetings/{MEETING}/speakers", json={"speakers": names}, headers=headers)
        assert r.status_code == 422 and "NUL" in r.json()["detail"], r.text
    assert api.client.get(f"/v1/meetings/{MEETING}/speakers/history", headers=headers).json() == []


def test_another_tenant_neither_reads_nor_names_the_map(loaded: tuple[Api, dict[str, str]]) -> None:
    api, headers = loaded
    api.client.put(f"/v1/meetings/{MEETING}/speakers", json={"speakers": {"S1": "Maria"}}, headers=headers)
    rival = api.headers(api.token("rival"))
    for method, path in (("get", "speakers"), ("get", "speakers/history"), ("put", "speakers")):
        r = getattr(api.client, method)(f"/v1/meetings/{MEETING}/{path}", headers=rival,
                                        **({"json": {"speakers": {"S1": "Eve"}}} if method == "put" else {}))
        assert r.status_code == 404, r.text
    history = api.client.get(f"/v1/meetings/{MEETING}/speakers/history", headers=headers).json()
    assert [(h["label"], h["name"]) for h in history] == [("S1", "Maria")]


def test_deleting_the_meeting_removes_its_names(loaded: tuple[Api, dict[str, str]]) -> None:
    api, headers = loaded
    api.client.put(f"/v1/meetings/{MEETING}/speakers", json={"speakers": {"S1": "Maria"}}, headers=headers)
    assert api.client.delete(f"/v1/meetings/{MEETING}", headers=headers).status_code == 200
    assert _raw(api, "SELECT COUNT(*) FROM speaker_names", tenant="*") == [(0,)]
    for method in ("get", "put"):
        r = getattr(api.client, method)(f"/v1/meetings/{MEETING}/speakers", headers=headers,
                                        **({"json": {"speakers": {"S1": "A"}}} if method == "put" else {}))
        assert r.status_code == 404 and "deleted at" in r.json()["detail"], r.text
