"""Meeting metadata, the meetings listing, and search and questions across a tenant's meetings over HTTP."""

from __future__ import annotations

from typing import Any

import pytest

#: Every test here runs on the SQLite file and on PostgreSQL (tests/cloud/conftest.py).
BACKENDS = ("sqlite", "postgres")

Api = Any  # tests/cloud/conftest.py

LINES = [
    {"seq": 0, "start": 1.0, "end": 4.0, "speaker": "Ana", "text": "Farida will send the status note by Friday."},
    {"seq": 1, "start": 5.0, "end": 9.0, "speaker": "Bo", "text": "We decided to go with the aluminium casing."},
]
PRICING = [
    {"seq": 0, "start": 2.0, "end": 6.0, "speaker": "Cy", "text": "The pricing stays at 349 dollars for launch."},
]


@pytest.fixture
def loaded(make_api: Any) -> tuple[Api, dict[str, str]]:
    api = make_api(embedders=None)
    headers = api.headers(api.token("acme"))
    r = api.client.post("/v1/meetings/hw/segments", headers=headers, json={
        "device_id": "glasses-1", "segments": LINES, "title": "Hardware review",
        "started_at": "2027-03-01T10:00:00+01:00", "participants": ["Ana", "Bo"]})
    assert r.status_code == 200, r.text
    r = api.client.post("/v1/meetings/price/segments", headers=headers,
                        json={"device_id": "glasses-1", "segments": PRICING})
    assert r.status_code == 200, r.text
    api.client.post("/v1/meetings/hw/close", headers=headers)
    return api, headers


def test_the_listing_names_each_meeting_as_users_know_it(loaded: tuple[Api, dict[str, str]]) -> None:
    api, headers = loaded
    listing = {m["meeting_id"]: m for m in api.client.get("/v1/meetings", headers=headers).json()}
    hw = listing["hw"]
    assert {k: hw[k] for k in ("title", "started_at", "participants", "status")} == {
        "title": "Hardware review", "started_at": "2027-03-01T10:00:00+01:00", "participants": ["Ana", "Bo"],
        "status": "closed"}
    assert hw["duration"] == 9.0
    price = listing["price"]
    assert (price["title"], price["started_at"], price["participants"], price["status"]) == (None, None, [], "live")


def test_the_ledger_resolves_due_dates_against_started_at(loaded: tuple[Api, dict[str, str]]) -> None:
    api, headers = loaded
    todos = api.client.get("/v1/meetings/hw/ledger", headers=headers).json()["todos"]
    assert [(t["due"], t["due_date"]) for t in todos] == [("Friday", "2027-03-05")]


@pytest.mark.parametrize(("field", "value", "says"), [
    ("started_at", "2027-03-01T10:00:00", "no UTC offset"),
    ("started_at", "tomorrow", "not an ISO 8601"),
    ("participants", ["Ana", ""], "participants"),
    ("title", "   ", "title"),
    ("participants", "Ana,Bo", "participants"),
])
def test_bad_metadata_is_refused_and_nothing_is_stored(loaded: tuple[Api, dict[str, str]], field: str,
                                                       value: Any, says: str) -> None:
    api, headers = loaded
    body = {"device_id": "d2", "segments": [{"seq": 0, "start": 0.0, "end": 1.0, "text": "hello"}], field: value}
    r = api.client.post("/v1/meetings/new-one/segments", headers=headers, json=body)
    assert r.status_code == 422, r.text
    assert says in r.text
    assert api.client.get("/v1/meetings/new-one", headers=headers).status_code == 404


def test_search_and_ask_across_meetings(loaded: tuple[Api, dict[str, str]]) -> None:
    api, headers = loaded
    hits = api.client.get("/v1/search", params={"q": "pricing launch", "k": 5}, headers=headers).json()
    assert hits[0]["meeting_id"] == "price" and "349" in hits[0]["text"]
    r = api.client.post("/v1/ask", json={"question": "what did we decide about the casing?", "explain": True},
                        headers=headers)
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["meeting_id"] == "hw" and "aluminium" in answer["answer"]
    assert all(c["meeting_id"] in ("hw", "price") for c in answer["citations"])
    assert answer["route"]["name"] == "across"
    # Another tenant sees none of it.
    other = api.headers(api.token("other"))
    assert api.client.get("/v1/search", params={"q": "pricing"}, headers=other).json() == []
    assert api.client.get("/v1/search", params={"q": ""}, headers=headers).status_code == 422
    assert api.client.get("/v1/search", params={"q": "x"}).status_code == 401


def test_since_i_joined_starts_at_the_asking_devices_first_segment(make_api: Any) -> None:
    api = make_api(embedders=None)
    headers = api.headers(api.token("acme"))
    early = [{"seq": i, "start": 60.0 * i, "end": 60.0 * i + 5, "speaker": "Ana",
              "text": f"early point number {i} about the budget and the venue"} for i in range(5)]
    late = [{"seq": 0, "start": 400.0, "end": 405.0, "speaker": "Bo", "text": "sorry I'm late, go on"},
            {"seq": 1, "start": 420.0, "end": 428.0, "speaker": "Bo", "text": "we agreed the venue is Bilbao"}]
    for device, rows in (("room-mic", early), ("bo-glasses", late)):
        r = api.client.post("/v1/meetings/m/segments", headers=headers, json={"device_id": device, "segments": rows})
        assert r.status_code == 200, r.text
    ask = {"question": "what was said since I joined?", "explain": True, "device_id": "bo-glasses"}
    answer = api.client.post("/v1/meetings/m/ask", headers=headers, json=ask).json()
    assert answer["route"]["name"] == "time" and "asking device" in answer["route"]["reason"]
    assert answer["citations"] and all(c["start"] >= 400.0 for c in answer["citations"])
    unknown = api.client.post("/v1/meetings/m/ask", headers=headers,
                              json={"question": "what was said since I joined?", "explain": True}).json()
    assert "join time is unknown" in unknown["route"]["reason"]
