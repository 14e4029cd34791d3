"""Webhooks end to end: a real `meetmem serve` posting to a real receiver on loopback.

A closed meeting is delivered once, signed per Standard Webhooks and verified with the `standardwebhooks`
package; a receiver that is down gets the delivery once it is back, across a restart of the service; a
receiver that hangs does not hold up ingest; one tenant's endpoints never hear of another's meetings.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook

ServeProcess = Any  # tests/conftest.py: `meetmem serve` started and stopped at will


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])

SEGMENTS = [
    {"seq": 0, "start": 0.0, "end": 4.0, "speaker": "Ana", "text": "Let's settle the casing before the tooling order."},
    {"seq": 1, "start": 4.5, "end": 9.0, "speaker": "Bo", "text": "We decided to go with the matte grey casing."},
    {"seq": 2, "start": 9.5, "end": 14.0, "speaker": "Ana",
     "text": "Priya will send the revised casing drawings to the factory by Friday."},
    {"seq": 3, "start": 14.5, "end": 18.0, "speaker": "Bo", "text": "The tooling quote came in at $18,400."},
]


class Receiver:
    """An HTTP endpoint on loopback that records what it is sent; `mode` makes it answer 204, fail with 500,
    or hang for `hang_s` seconds before answering."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/hooks/meetmem"
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.mode = "ok"
        self.hang_s = 30.0
        self.arrived = threading.Event()
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                if receiver.mode == "hang":
                    time.sleep(receiver.hang_s)
                receiver.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
                receiver.arrived.set()
                self.send_response(500 if receiver.mode == "fail" else 204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def events(self, event: str) -> list[tuple[dict[str, str], dict[str, Any]]]:
        return [(h, json.loads(b)) for h, b in self.received if json.loads(b)["type"] == event]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver().start()
    yield made
    made.stop()


@pytest.fixture
def serve(serve_factory: Callable[..., ServeProcess]) -> ServeProcess:
    started = serve_factory(env={"MEETMEM_WEBHOOK_TIMEOUT": "2", "MEETMEM_PUBLIC_URL": "https://meetmem.example"})
    started.start()
    return started


def client(serve: ServeProcess, token_maker: Callable[..., str], tenant: str = "acme") -> httpx.Client:
    token = token_maker(serve.db, tenant)
    return httpx.Client(base_url=serve.url, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def close_a_meeting(http: httpx.Client, meeting_id: str = "casing") -> None:
    r = http.post(f"/v1/meetings/{meeting_id}/segments", json={"device_id": "glasses", "segments": SEGMENTS,
                                                              "title": "Casing review"})
    assert r.status_code == 200, r.text
    assert http.post(f"/v1/meetings/{meeting_id}/close").status_code == 200


def wait_for(check: Callable[[], Any], timeout: float = 30.0, what: str = "the condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"{what} did not happen within {timeout} s")


def test_a_closed_meeting_is_delivered_once_signed_and_verifiable(serve: ServeProcess, receiver: Receiver,
                                                                  token_maker: Callable[..., str]) -> None:
    with client(serve, token_maker) as http:
        made = http.post("/v1/webhooks", json={"url": receiver.url, "events": ["meeting.closed", "ledger.updated"]})
        assert made.status_code == 201, made.text
        secret = made.json()["secret"]
        assert secret.startswith("whsec_")
        assert http.get("/v1/webhooks").json()[0]["secret"] is None  # shown once, when it was made
        close_a_meeting(http)
        closed = wait_for(lambda: receiver.events("meeting.closed"), what="the meeting.closed delivery")
        time.sleep(2.5)  # long enough for a second send to show up, were there one
        assert len(receiver.events("meeting.closed")) == 1
        headers, body = closed[0]
        raw = next(b for h, b in receiver.received if h["webhook-id"] == headers["webhook-id"])
        # The receiver's side of Standard Webhooks: the signature over id, timestamp and body verifies.
        assert Webhook(secret).verify(raw, headers) == body
        with pytest.raises(Exception, match="signature"):
            Webhook("whsec_" + "A" * 43 + "=").verify(raw, headers)
        assert headers["webhook-id"].startswith("msg_") and abs(int(headers["webhook-timestamp"]) - time.time()) < 60
        data = body["data"]
        assert data["meeting"]["meeting_id"] == "casing" and data["meeting"]["title"] == "Casing review"
        assert data["meeting"]["status"] == "closed"
        assert data["meeting"]["url"] == "https://meetmem.example/#/m/casing"
        todos = data["ledger"]["todos"]
        assert any("Priya" in (t["owner"] or "") and "drawings" in t["task"] for t in todos), todos
        assert data["summary"] and all(line["segment_ids"] for line in data["summary"])
        deliveries = http.get("/v1/webhook-deliveries").json()
        mine = [d for d in deliveries if d["id"] == headers["webhook-id"]]
        assert mine and mine[0]["status"] == "delivered" and mine[0]["attempts"] == 1
        assert receiver.events("ledger.updated")  # the ledger's first version too


def test_a_receiver_down_gets_the_delivery_after_it_returns_even_across_a_restart(
        serve_factory: Callable[..., ServeProcess], token_maker: Callable[..., str], tmp_path) -> None:
    down = Receiver()  # its port is free: nothing listens there yet
    env = {"MEETMEM_WEBHOOK_TIMEOUT": "2"}
    serve = serve_factory(env=env)
    serve.start()
    with client(serve, token_maker) as http:
        assert http.post("/v1/webhooks", json={"url": down.url, "events": ["meeting.closed"]}).status_code == 201
        close_a_meeting(http)
        failed = wait_for(lambda: [d for d in http.get("/v1/webhook-deliveries").json() if d["attempts"] >= 1],
                          what="a first, failed attempt")
        assert failed[0]["status"] == "pending" and failed[0]["last_status"] is None and failed[0]["last_error"]
        message_id = failed[0]["id"]
    serve.stop()  # the queue is in the database: nothing is lost with the process
    down.start()
    try:
        again = serve_factory(db=serve.db, env=env)
        again.start()
        wait_for(lambda: down.events("meeting.closed"), timeout=40, what="the delivery after the restart")
        assert [h["webhook-id"] for h, _ in down.events("meeting.closed")] == [message_id]  # the same id, once
        with client(again, token_maker) as http:
            done = [d for d in http.get("/v1/webhook-deliveries").json() if d["id"] == message_id]
            assert done[0]["status"] == "delivered" and done[0]["attempts"] >= 2
    finally:
        down.stop()


def test_a_hanging_receiver_does_not_hold_up_ingest(serve: ServeProcess, receiver: Receiver,
                                                    token_maker: Callable[..., str]) -> None:
    receiver.mode = "hang"
    receiver.hang_s = 20.0
    with client(serve, token_maker) as http:
        assert http.post("/v1/webhooks", json={"url": receiver.url, "events": ["meeting.closed"]}).status_code == 201
        for n in range(3):  # three deliveries waiting on an endpoint that does not answer
            close_a_meeting(http, f"hung-{n}")
        wait_for(lambda: len(http.get("/v1/webhook-deliveries").json()) == 3, what="three queued deliveries")
        wait_for(lambda: [d for d in http.get("/v1/webhook-deliveries").json() if d["attempts"] >= 1],
                 what="attempts that timed out")
        took = []
        for i in range(20):
            began = time.monotonic()
            r = http.post("/v1/meetings/live/segments", json={"device_id": "g", "segments": [
                {"seq": i, "start": 2.0 * i, "end": 2.0 * i + 1.5, "text": f"line {i} about the casing"}]})
            took.append(time.monotonic() - began)
            assert r.status_code == 200
        assert max(took) < 1.0, took  # each batch acknowledged as without webhooks
        pending = http.get("/v1/webhook-deliveries").json()
        assert len(pending) == 3 and all(d["status"] == "pending" for d in pending)
        tried = [d for d in pending if d["attempts"]]
        assert tried and all(d["last_error"] == "no answer within 2 s" for d in tried), pending


def test_endpoints_and_deliveries_belong_to_their_tenant(serve: ServeProcess, receiver: Receiver,
                                                         token_maker: Callable[..., str]) -> None:
    other = Receiver().start()
    try:
        with client(serve, token_maker, "acme") as acme, client(serve, token_maker, "globex") as globex:
            for http, url in ((globex, other.url), (acme, receiver.url)):
                assert http.post("/v1/webhooks", json={"url": url, "events": ["meeting.closed"]}).status_code == 201
            close_a_meeting(acme, "acme-only")
            wait_for(lambda: receiver.events("meeting.closed"), what="acme's delivery")
            time.sleep(2.0)
            assert other.received == []  # globex heard nothing of acme's meeting
            assert globex.get("/v1/webhook-deliveries").json() == []
            assert [w["url"] for w in globex.get("/v1/webhooks").json()] == [other.url]
            acme_hook = acme.get("/v1/webhooks").json()[0]["id"]
            assert globex.delete(f"/v1/webhooks/{acme_hook}").status_code == 404
            assert acme.delete(f"/v1/webhooks/{acme_hook}").status_code == 200
            assert acme.get("/v1/webhooks").json() == []
    finally:
        other.stop()


@pytest.mark.parametrize(("body", "says"), [
    ({"url": "ftp://example.com/x", "events": ["meeting.closed"]}, "not an http(s) URL"),
    ({"url": "http://", "events": ["meeting.closed"]}, "not an http(s) URL"),
    ({"url": "https://example.com/x", "events": ["meeting.opened"]}, "unknown webhook events"),
    ({"url": "https://example.com/x", "events": ["meeting.closed"], "secret": "whsec_c2hvcnQ="}, "5 bytes"),
    ({"url": "https://example.com/x", "events": ["meeting.closed"], "secret": "whsec_!!!"}, "not base64"),
])
def test_bad_endpoints_get_a_clear_422(serve: ServeProcess, token_maker: Callable[..., str], body: dict,
                                       says: str) -> None:
    with client(serve, token_maker) as http:
        r = http.post("/v1/webhooks", json=body)
        assert r.status_code == 422 and says in r.text, r.text
        assert http.get("/v1/webhooks").json() == []


def test_an_invite_over_http_describes_the_meeting_and_a_bad_one_is_a_422(serve: ServeProcess,
                                                                        token_maker: Callable[..., str]) -> None:
    from pathlib import Path

    invite = (Path(__file__).parent.parent / "store" / "data" / "google-invite.ics").read_text(encoding="utf-8")
    with client(serve, token_maker) as http:
        bad = http.post("/v1/meetings/review/segments", json={"device_id": "g", "segments": SEGMENTS[:1],
                                                              "ics": "BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n"})
        assert bad.status_code == 422 and "holds no event" in bad.text, bad.text
        assert http.get("/v1/meetings/review").status_code == 404  # nothing stored
        good = http.post("/v1/meetings/review/segments", json={"device_id": "g", "segments": SEGMENTS,
                                                               "ics": invite, "participants": ["Ana", "Bo"]})
        assert good.status_code == 200, good.text
        meeting = http.get("/v1/meetings/review").json()
        assert meeting["title"] == "Casing review: tooling and pilot run"
        assert meeting["started_at"] == "2027-03-01T10:00:00+01:00" and meeting["participants"] == ["Ana", "Bo"]
        todos = http.get("/v1/meetings/review/export", params={"format": "ics"})
        assert todos.status_code == 200 and todos.headers["content-type"].startswith("text/calendar")
        assert "https://meetmem.example/#/m/review?t=9.5" in todos.text.replace("\r\n ", "")
