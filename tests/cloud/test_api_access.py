"""Tokens, tenants, readiness, closing meetings and the OpenAPI document."""

from __future__ import annotations

from typing import Any

import pytest

#: Every test here runs on the SQLite file and on PostgreSQL (tests/cloud/conftest.py).
BACKENDS = ("sqlite", "postgres")

Api = Any  # tests/cloud/conftest.py: a TestClient on a fresh app, with token helpers

SEGMENTS = {"device_id": "g1", "segments": [
    {"seq": 0, "start": 0.0, "end": 3.0, "text": "the acme budget is 12,000 euros", "speaker": "Ana"},
    {"seq": 1, "start": 3.0, "end": 6.0, "text": "we launch on Friday", "speaker": "Ben"},
]}


def endpoints(meeting: str) -> list[tuple[str, str, dict[str, Any]]]:
    """Every endpoint that names a meeting, with a valid request for it."""
    return [
        ("GET", f"/v1/meetings/{meeting}", {}),
        ("GET", f"/v1/meetings/{meeting}/segments", {}),
        ("POST", f"/v1/meetings/{meeting}/ask", {"json": {"question": "what is the budget?"}}),
        ("GET", f"/v1/meetings/{meeting}/search", {"params": {"q": "budget"}}),
        ("GET", f"/v1/meetings/{meeting}/events", {}),
        ("POST", f"/v1/meetings/{meeting}/close", {}),
    ]


def test_no_token_or_a_bad_token_is_401(api: Api) -> None:
    for method, path, kwargs in endpoints("m") + [("GET", "/v1/meetings", {}),
                                                  ("POST", "/v1/meetings/m/segments", {"json": SEGMENTS})]:
        r = api.client.request(method, path, **kwargs)
        assert r.status_code == 401, (method, path, r.text)
        assert r.headers["www-authenticate"].startswith("Bearer") and "token" in r.json()["detail"]
        r = api.client.request(method, path, headers=api.headers("mm_000000000000_" + "x" * 43), **kwargs)
        assert r.status_code == 401, (method, path)
        r = api.client.request(method, path, headers={"Authorization": "Basic dXNlcjpwdw=="}, **kwargs)
        assert r.status_code == 401, (method, path)


def test_healthz_needs_no_token(api: Api) -> None:
    r = api.client.get("/healthz")
    assert r.status_code == 200 and r.json()["status"] == "ready"


def test_a_revoked_token_stops_working_at_once(api: Api) -> None:
    token = api.token("acme")
    assert api.client.post("/v1/meetings/m/segments", json=SEGMENTS, headers=api.headers(token)).status_code == 200
    info = api.tokens.revoke(token)
    assert info.revoked_at is not None and info.tenant == "acme"
    r = api.client.get("/v1/meetings/m/segments", headers=api.headers(token))
    assert r.status_code == 401 and "revoked" in r.json()["detail"]
    # Another token of the same tenant still sees the meeting: revocation is per token, not per tenant.
    assert api.client.get("/v1/meetings/m/segments", headers=api.headers(api.token("acme"))).status_code == 200


def test_tokens_are_stored_only_as_hashes(api: Api) -> None:
    token = api.token("acme")
    rows = api.tokens._read("SELECT * FROM api_tokens")
    secret = token.split("_", 2)[2]  # the whole secret: it may itself hold "_" (token_urlsafe)
    assert rows and not any(token in str(value) or secret in str(value) for row in rows for value in row)


def test_another_tenants_meeting_is_404_from_every_endpoint(api: Api) -> None:
    acme, globex = api.token("acme"), api.token("globex")
    assert api.client.post("/v1/meetings/acme-only/segments", json=SEGMENTS,
                           headers=api.headers(acme)).status_code == 200
    for method, path, kwargs in endpoints("acme-only"):
        r = api.client.request(method, path, headers=api.headers(globex), **kwargs)
        assert r.status_code == 404, (method, path, r.text)
        assert "acme-only" in r.json()["detail"] and "acme'" not in r.json()["detail"]
    assert api.client.get("/v1/meetings", headers=api.headers(globex)).json() == []


def test_the_same_meeting_id_in_two_tenants_are_two_meetings(api: Api) -> None:
    acme, globex = api.token("acme"), api.token("globex")
    other = {"device_id": "g1", "segments": [{"seq": 0, "start": 0.0, "end": 2.0, "text": "globex budget is zero"}]}
    api.client.post("/v1/meetings/weekly/segments", json=SEGMENTS, headers=api.headers(acme))
    r = api.client.post("/v1/meetings/weekly/segments", json=other, headers=api.headers(globex))
    assert r.json()["new"] == 1  # the same (device_id, seq) in another tenant is not a replay
    acme_rows = api.client.get("/v1/meetings/weekly/segments", headers=api.headers(acme)).json()
    globex_rows = api.client.get("/v1/meetings/weekly/segments", headers=api.headers(globex)).json()
    assert [r["text"] for r in acme_rows] == [s["text"] for s in SEGMENTS["segments"]]
    assert [r["text"] for r in globex_rows] == ["globex budget is zero"]
    for token, own, foreign in ((acme, "acme", "globex"), (globex, "globex", "acme")):
        hits = api.client.get("/v1/meetings/weekly/search", params={"q": "budget", "k": 10},
                              headers=api.headers(token)).json()
        assert hits and all(foreign not in h["text"] for h in hits) and any(own in h["text"] for h in hits)
        answer = api.client.post("/v1/meetings/weekly/ask", json={"question": "what is the budget?"},
                                 headers=api.headers(token)).json()
        assert all(foreign not in c["text"] for c in answer["citations"])


def test_questions_wait_for_the_models_but_ingest_does_not(api: Api) -> None:
    token = api.token("acme")
    api.service.state = "loading"
    r = api.client.post("/v1/meetings/m/segments", json=SEGMENTS, headers=api.headers(token))
    assert r.status_code == 200
    assert api.client.get("/healthz").status_code == 503
    r = api.client.post("/v1/meetings/m/ask", json={"question": "budget?"}, headers=api.headers(token))
    assert r.status_code == 503 and r.headers["retry-after"] and "loading" in r.json()["detail"]
    api.service.state = "ready"
    assert api.client.post("/v1/meetings/m/ask", json={"question": "budget?"},
                           headers=api.headers(token)).status_code == 200


def test_closing_explicitly_and_reopening_with_late_segments(api: Api) -> None:
    token = api.token("acme")
    h = api.headers(token)
    api.client.post("/v1/meetings/m/segments", json=SEGMENTS, headers=h)
    assert api.client.get("/v1/meetings/m", headers=h).json()["closed"] is False
    closed = api.client.post("/v1/meetings/m/close", headers=h).json()
    assert closed["closed"] is True and closed["closure"]["reason"] == "closed"
    again = api.client.post("/v1/meetings/m/close", headers=h).json()
    assert again["closure"] == closed["closure"]  # closing twice records one closure
    late = {"device_id": "g2", "segments": [{"seq": 0, "start": 7.0, "end": 8.0, "text": "one more thing"}]}
    assert api.client.post("/v1/meetings/m/segments", json=late, headers=h).json()["new"] == 1
    info = api.client.get("/v1/meetings/m", headers=h).json()
    assert info["closed"] is False and info["segments"] == 3 and info["duration"] == 8.0


def test_a_silent_meeting_closes_by_itself(make_api: Any) -> None:
    now = [1000.0]
    api = make_api(embedders=None, close_after_silence=60)
    api.service.clock = lambda: now[0]
    token = api.token("acme")
    h = api.headers(token)
    api.client.post("/v1/meetings/quiet/segments", json=SEGMENTS, headers=h)
    api.client.post("/v1/meetings/busy/segments", json=SEGMENTS, headers=h)
    now[0] += 45
    busy = {"device_id": "g1", "segments": [{"seq": 5, "start": 9.0, "end": 10.0, "text": "still talking"}]}
    api.client.post("/v1/meetings/busy/segments", json=busy, headers=h)
    now[0] += 20
    assert api.service.reaper.close_silent() == [("acme", "quiet")]
    quiet = api.client.get("/v1/meetings/quiet", headers=h).json()
    assert quiet["closed"] is True and quiet["closure"]["reason"] == "silence"
    assert api.client.get("/v1/meetings/busy", headers=h).json()["closed"] is False
    assert api.service.reaper.close_silent() == []


def test_openapi_documents_every_endpoint_and_its_errors(api: Api) -> None:
    spec = api.client.get("/openapi.json").json()
    expected = {
        ("get", "/healthz"), ("get", "/v1/meetings"), ("get", "/v1/meetings/{meeting_id}"),
        ("post", "/v1/meetings/{meeting_id}/segments"), ("get", "/v1/meetings/{meeting_id}/segments"),
        ("post", "/v1/meetings/{meeting_id}/ask"), ("get", "/v1/meetings/{meeting_id}/search"),
        ("get", "/v1/meetings/{meeting_id}/events"), ("post", "/v1/meetings/{meeting_id}/close"),
    }
    found = {(method, path) for path, ops in spec["paths"].items() for method in ops}
    assert expected <= found
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            assert op.get("summary") or op.get("description"), (method, path)
            if path.startswith("/v1/"):
                assert "401" in op["responses"], (method, path)
                assert op.get("security"), (method, path)
            if "{meeting_id}" in path and not path.endswith("/segments") or method == "get" and "{" in path:
                assert "404" in op["responses"] or method == "post", (method, path)
            for status, response in op["responses"].items():
                assert response.get("description"), (method, path, status)


@pytest.mark.parametrize("meeting", ["a" * 201, "bad%01id", "%20%20"])
def test_impossible_meeting_ids_are_422(api: Api, meeting: str) -> None:
    token = api.token("acme")
    r = api.client.post(f"/v1/meetings/{meeting}/segments", json=SEGMENTS, headers=api.headers(token))
    assert r.status_code == 422 and r.json()["detail"]


@pytest.mark.parametrize("last_event_id", ["seven", "-5", "1.5", "99999999999999999999999999", str(2**62 + 1)])
def test_a_bad_last_event_id_is_422_before_the_stream_starts(api: Api, last_event_id: str) -> None:
    token = api.token("acme")
    api.client.post("/v1/meetings/m/segments", json=SEGMENTS, headers=api.headers(token))
    r = api.client.get("/v1/meetings/m/events", headers={**api.headers(token), "Last-Event-ID": last_event_id})
    assert r.status_code == 422 and "Last-Event-ID" in r.json()["detail"]
