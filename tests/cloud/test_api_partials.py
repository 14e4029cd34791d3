"""Partial captions over a real `meetmem serve`: a posted partial reaches the meeting's live stream as an
`event: partial` without an id, is never stored, and one older than a segment already sent is skipped."""

from __future__ import annotations

import json
import queue
import threading
from typing import Any

import httpx

Server = Any  # tests/conftest.py: a running `meetmem serve`
#: One server per store (tests/conftest.py `server`): on PostgreSQL a partial crosses by LISTEN/NOTIFY.
BACKENDS = ("sqlite", "postgres")


def _read(url: str, token: str, meeting: str, out: queue.Queue, stop: threading.Event) -> None:
    """Put every comment and event of the stream on `out` as (kind, id, data) until `stop` is set."""
    try:
        _lines(url, token, meeting, out, stop)
    except httpx.HTTPError:
        if not stop.is_set():  # the server went away while the test still read: a failure
            raise


def _lines(url: str, token: str, meeting: str, out: queue.Queue, stop: threading.Event) -> None:
    event: dict[str, str] = {}
    with httpx.stream("GET", f"{url}/v1/meetings/{meeting}/events", headers={"Authorization": f"Bearer {token}"},
                      timeout=httpx.Timeout(30.0)) as response:
        for line in response.iter_lines():
            if stop.is_set():
                return
            if line.startswith(":"):
                out.put(("comment", None, line[1:].strip()))
            elif line == "":
                if "data" in event:
                    out.put((event.get("event", "message"), event.get("id"), json.loads(event["data"])))
                event = {}
            elif ":" in line:
                name, _, value = line.partition(":")
                event[name] = value.removeprefix(" ")


def _next(events: queue.Queue, kind: str) -> tuple[str, Any, Any]:
    while True:
        item = events.get(timeout=30)
        if item[0] == kind:
            return item


def test_a_partial_reaches_the_stream_and_is_never_stored(server: Server) -> None:
    token = server.token("acme")
    meeting = "partials"
    first = {"seq": 0, "start": 0.0, "end": 2.0, "text": "we start with the budget"}
    second = {"seq": 1, "start": 2.5, "end": 5.0, "text": "the casing stays aluminium"}
    with server.client(token) as client:
        assert client.post(f"/v1/meetings/{meeting}/segments",
                           json={"device_id": "g", "segments": [first]}).status_code == 200
        events: queue.Queue = queue.Queue()
        stop = threading.Event()
        reader = threading.Thread(target=_read, args=(server.url, token, meeting, events, stop), daemon=True)
        reader.start()
        _next(events, "comment")  # subscribed
        assert _next(events, "message")[2]["text"] == first["text"]
        partial = {"device_id": "g", "start": 2.5, "heard_until": 3.6, "text": "the casing"}
        answer = client.post(f"/v1/meetings/{meeting}/partials", json=partial)
        assert answer.status_code == 202 and answer.json()["followers"] == 1
        kind, event_id, data = _next(events, "partial")
        assert event_id is None and data["text"] == "the casing" and data["start"] == 2.5
        assert client.post(f"/v1/meetings/{meeting}/segments",
                           json={"device_id": "g", "segments": [second]}).status_code == 200
        assert _next(events, "message")[2]["text"] == second["text"]
        # A late partial of the utterance just sent as a segment is not shown; a newer one is.
        client.post(f"/v1/meetings/{meeting}/partials", json={**partial, "text": "the casing stays"})
        client.post(f"/v1/meetings/{meeting}/partials",
                    json={"device_id": "g", "start": 5.5, "heard_until": 6.0, "text": "next"})
        assert _next(events, "partial")[2]["text"] == "next"
        stop.set()
        client.post(f"/v1/meetings/{meeting}/partials",  # one more line, so the reader sees `stop`
                    json={"device_id": "g", "start": 6.5, "heard_until": 7.0, "text": "bye"})
        reader.join(timeout=30)
        assert not reader.is_alive()
        stored = client.get(f"/v1/meetings/{meeting}/segments").json()
        assert [s["text"] for s in stored] == [first["text"], second["text"]]


def test_a_bad_partial_is_refused_with_a_reason(server: Server) -> None:
    token = server.token("acme")
    with server.client(token) as client:
        bad = client.post("/v1/meetings/m/partials",
                          json={"device_id": "g", "start": 3.0, "heard_until": 1.0, "text": "x"})
        assert bad.status_code == 422 and "heard_until" in bad.text
        assert client.post("/v1/meetings/m/partials", json={"device_id": "g", "start": 0.0}).status_code == 422
    assert httpx.post(f"{server.url}/v1/meetings/m/partials",
                      json={"device_id": "g", "start": 0.0, "heard_until": 1.0, "text": "x"}).status_code == 401
