"""Ingest and reads over HTTP: all or nothing, idempotent, ordered, and a clear 4xx for every bad input."""

from __future__ import annotations

import json
from typing import Any

import pytest

from meetmem.store.backends import open_log

#: Every test here runs on the SQLite file and on PostgreSQL (tests/cloud/conftest.py).
BACKENDS = ("sqlite", "postgres")

Api = Any  # tests/cloud/conftest.py: a TestClient on a fresh app, with token helpers

MEETING = "standup"


def seg(seq: int, text: str, start: float | None = None, **extra: Any) -> dict[str, Any]:
    start = float(seq * 3) if start is None else start
    return {"seq": seq, "start": start, "end": start + 2.5, "text": text, **extra}


def post(api: Api, token: str, body: Any, meeting: str = MEETING, **kwargs: Any):
    if isinstance(body, bytes | str):
        return api.client.post(f"/v1/meetings/{meeting}/segments", content=body,
                               headers={**api.headers(token), "Content-Type": "application/json"}, **kwargs)
    return api.client.post(f"/v1/meetings/{meeting}/segments", json=body, headers=api.headers(token), **kwargs)


@pytest.fixture
def token(api: Api) -> str:
    return api.token("acme")


def test_a_batch_is_stored_and_listed_in_contract_order(api: Api, token: str) -> None:
    body = {"device_id": "glasses-1", "segments": [
        seg(0, "we ship on March 3rd", speaker="Dana", lang="en"),
        seg(1, "the tooling quote is $4,250", speaker="Lee", raw_text="um the tooling quote is $4,250"),
    ]}
    r = post(api, token, body)
    assert r.status_code == 200, r.text
    assert r.json()["new"] == 2 and r.json()["duplicates"] == 0 and len(r.json()["segment_ids"]) == 2
    # A second device speaking in between: the listing interleaves by start time.
    r = post(api, token, {"device_id": "glasses-2", "segments": [seg(0, "noted", start=1.0)]})
    assert r.status_code == 200
    rows = api.client.get(f"/v1/meetings/{MEETING}/segments", headers=api.headers(token)).json()
    assert [r["text"] for r in rows] == ["we ship on March 3rd", "noted", "the tooling quote is $4,250"]
    for row in rows:
        assert {"segment_id", "device_id", "seq", "start", "end", "speaker", "text", "raw_text", "lang"} <= set(row)
    assert rows[2]["raw_text"] == "um the tooling quote is $4,250"


def test_a_replayed_batch_adds_nothing(api: Api, token: str) -> None:
    body = {"device_id": "glasses-1", "segments": [seg(i, f"line {i}") for i in range(5)]}
    first = post(api, token, body).json()
    again = post(api, token, body).json()
    assert (first["new"], first["duplicates"]) == (5, 0)
    assert (again["new"], again["duplicates"]) == (0, 5)
    assert again["segment_ids"] == first["segment_ids"]
    assert len(api.client.get(f"/v1/meetings/{MEETING}/segments", headers=api.headers(token)).json()) == 5


def test_segments_by_time_range(api: Api, token: str) -> None:
    post(api, token, {"device_id": "d", "segments": [seg(i, f"line {i}") for i in range(10)]})
    rows = api.client.get(f"/v1/meetings/{MEETING}/segments", params={"start": 6.0, "end": 12.0},
                          headers=api.headers(token)).json()
    assert [r["seq"] for r in rows] == [2, 3, 4]  # each [3i, 3i+2.5] overlapping [6, 12]
    bad = api.client.get(f"/v1/meetings/{MEETING}/segments", params={"start": 9, "end": 3},
                         headers=api.headers(token))
    assert bad.status_code == 422 and "before start" in bad.json()["detail"]


def test_acknowledged_segments_are_searchable_at_once_and_indexed_in_the_background(api: Api, token: str) -> None:
    texts = ["the casing will be anodised aluminium", "Priya owns the supplier contract", "lunch is at noon"]
    post(api, token, {"device_id": "d", "segments": [seg(i, t) for i, t in enumerate(texts)]})
    hits = api.client.get(f"/v1/meetings/{MEETING}/search", params={"q": "supplier contract", "k": 1},
                          headers=api.headers(token)).json()
    assert hits[0]["text"] == "Priya owns the supplier contract"
    post(api, token, {"device_id": "d", "segments": [seg(3, "the launch moved to Thursday")]})
    assert api.service.scheduler.indexer.wait_idle(timeout=60)
    index = api.service.search.meeting_index(MEETING, tenant="acme")
    assert len(index) == 4 and api.service.scheduler.indexer.failures == 0


def _stored(api: Api) -> int:
    """What a connection of its own sees committed (the SQLite file, or the PostgreSQL database)."""
    with open_log(api.settings.database_url or api.settings.db, upgrade=False) as log:
        return log.count()


BAD_BODIES: list[tuple[str, Any, int, str]] = [
    ("malformed JSON", b'{"device_id": "d", "segments": [', 422, "JSON"),
    ("not an object", b"[1, 2, 3]", 422, "body"),
    ("missing device_id", {"segments": [seg(0, "x")]}, 422, "device_id"),
    ("missing segments", {"device_id": "d"}, 422, "segments"),
    ("missing text", {"device_id": "d", "segments": [{"seq": 0, "start": 0, "end": 1}]}, 422, "text"),
    ("missing start", {"device_id": "d", "segments": [{"seq": 0, "end": 1, "text": "x"}]}, 422, "start"),
    ("start is a string", {"device_id": "d", "segments": [{**seg(0, "x"), "start": "soon"}]}, 422, "start"),
    ("seq is a float", {"device_id": "d", "segments": [{**seg(0, "x"), "seq": 1.5}]}, 422, "seq"),
    ("negative seq", {"device_id": "d", "segments": [{**seg(0, "x"), "seq": -1}]}, 422, "seq"),
    ("seq past 64 bits", {"device_id": "d", "segments": [{**seg(0, "x"), "seq": 2**64}]}, 422, "seq"),
    ("end before start", {"device_id": "d", "segments": [{**seg(0, "x"), "start": 5, "end": 4}]}, 422,
     "before start"),
    ("negative start", {"device_id": "d", "segments": [{**seg(0, "x"), "start": -1}]}, 422, "start"),
    ("a year-long meeting", {"device_id": "d", "segments": [{**seg(0, "x"), "end": 3.2e7}]}, 422, "end"),
    ("empty text", {"device_id": "d", "segments": [seg(0, "   ")]}, 422, "text"),
    ("lone surrogate", b'{"device_id": "d", "segments": [{"seq": 0, "start": 0, "end": 1, "text": "a\\ud800"}]}',
     422, "unicode"),
    ("NaN start", b'{"device_id": "d", "segments": [{"seq": 0, "start": NaN, "end": 1, "text": "x"}]}', 422,
     "start"),
    ("unknown field", {"device_id": "d", "segments": [{**seg(0, "x"), "colour": "red"}]}, 422, "colour"),
    ("bad language tag", {"device_id": "d", "segments": [seg(0, "x", lang="english please")]}, 422, "lang"),
    ("confidence above 1", {"device_id": "d", "segments": [seg(0, "x", confidence=3)]}, 422, "confidence"),
    ("blank device id", {"device_id": " ", "segments": [seg(0, "x")]}, 422, "device_id"),
    ("correction of nothing", {"device_id": "d", "segments": [seg(0, "x", supersedes="s_nope")]}, 422,
     "supersedes"),
]


@pytest.mark.parametrize(("name", "body", "status", "needle"), BAD_BODIES, ids=[b[0] for b in BAD_BODIES])
def test_bad_input_gets_a_clear_4xx_and_stores_nothing(api: Api, token: str, name: str, body: Any, status: int,
                                                       needle: str) -> None:
    good = {"device_id": "d0", "segments": [seg(0, "already stored")]}
    assert post(api, token, good).status_code == 200
    if isinstance(body, dict) and "segments" in body:
        # The bad segment comes after a good one: the whole batch must be refused.
        body = {**body, "segments": [seg(50, "good line before the bad one"), *body["segments"]]}
        for item in body["segments"][1:]:
            if isinstance(item, dict) and isinstance(item.get("seq"), int) and 0 <= item["seq"] <= 50:
                item["seq"] = 60
    r = post(api, token, body)
    assert r.status_code == status, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, str) and needle.lower() in detail.lower(), detail
    assert _stored(api) == 1


def test_a_batch_with_one_bad_segment_stores_none_of_it(api: Api, token: str) -> None:
    body = {"device_id": "d", "segments": [seg(0, "fine"), seg(1, "fine too"), {**seg(2, "bad"), "end": -1}]}
    r = post(api, token, body)
    assert r.status_code == 422 and "segments.2" in r.json()["detail"]
    assert api.client.get(f"/v1/meetings/{MEETING}", headers=api.headers(token)).status_code == 404


def test_seq_going_backwards_or_changing_content_is_a_conflict(api: Api, token: str) -> None:
    post(api, token, {"device_id": "d", "segments": [seg(5, "five")]})
    r = post(api, token, {"device_id": "d", "segments": [seg(6, "six"), seg(3, "three")]})
    assert r.status_code == 409 and "backwards" in r.json()["detail"]
    r = post(api, token, {"device_id": "d", "segments": [seg(5, "FIVE, edited")]})
    assert r.status_code == 409 and "different content" in r.json()["detail"]
    assert _stored(api) == 1


def test_oversized_bodies_and_batches_are_refused(make_api: Any) -> None:
    api = make_api(embedders=None, max_body_bytes=4096, max_batch=3)
    token = api.token("acme")
    big = {"device_id": "d", "segments": [seg(0, "x" * 5000)]}
    r = post(api, token, big)
    assert r.status_code == 413 and "at most 4096" in r.json()["detail"]
    # A streamed body (no Content-Length) is cut off once it passes the limit.
    payload = json.dumps(big).encode()
    chunks = (payload[i : i + 1000] for i in range(0, len(payload), 1000))
    r = api.client.post(f"/v1/meetings/{MEETING}/segments", content=chunks,
                        headers={**api.headers(token), "Content-Type": "application/json"})
    assert r.status_code == 413 and "at most 4096" in r.json()["detail"]
    r = post(api, token, {"device_id": "d", "segments": [seg(i, "x") for i in range(4)]})
    assert r.status_code == 422 and "at most 3" in r.json()["detail"]
    assert _stored(api) == 0


def test_a_correction_replaces_the_segment_in_listings(api: Api, token: str) -> None:
    first = post(api, token, {"device_id": "d", "segments": [seg(0, "we ship on March 13th")]}).json()
    fix = seg(1, "we ship on March 3rd", start=0.0, supersedes=first["segment_ids"][0])
    assert post(api, token, {"device_id": "d", "segments": [fix]}).status_code == 200
    rows = api.client.get(f"/v1/meetings/{MEETING}/segments", headers=api.headers(token)).json()
    assert [r["text"] for r in rows] == ["we ship on March 3rd"]
    assert rows[0]["supersedes"] == first["segment_ids"][0]


def test_error_bodies_are_json_with_a_detail_string(api: Api, token: str) -> None:
    r = post(api, token, b"\xff\xfe not json")
    assert r.status_code == 400
    assert "UTF-8 encoded JSON" in json.loads(r.text)["detail"]
    r = post(api, token, b'{"device_id": 5}')
    body = json.loads(r.text)
    assert r.status_code == 422 and isinstance(body["detail"], str) and body["errors"]
