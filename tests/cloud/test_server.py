"""End to end against `meetmem serve`: a real uvicorn server on a loopback port, real clients, with its log
in a SQLite file and in a PostgreSQL database."""

from __future__ import annotations

import json
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from meetmem.store.backends import open_log

Server = Any  # tests/conftest.py: a running `meetmem serve`
#: One server per store (tests/conftest.py `server`).
BACKENDS = ("sqlite", "postgres")


def _segment(device: int, seq: int) -> dict[str, Any]:
    start = seq * 4.0 + device * 0.1
    return {"seq": seq, "start": start, "end": start + 3.0, "speaker": f"S{device}",
            "text": f"device {device} line {seq}: order {device * 100 + seq} units by March {seq % 28 + 1}"}


def test_concurrent_devices_each_segment_stored_once(server: Server, meetmem_cli: Any) -> None:
    token = server.token("acme")
    devices, per_device, batch = 6, 30, 3

    def run_device(device: int) -> list[int]:
        statuses = []
        with server.client(token, timeout=60) as client:
            for first in range(0, per_device, batch):
                body = {"device_id": f"glasses-{device}",
                        "segments": [_segment(device, s) for s in range(first, first + batch)]}
                for _ in range(2):  # every batch twice, as after a lost acknowledgement
                    r = client.post("/v1/meetings/all-hands/segments", json=body)
                    statuses.append(r.status_code)
        return statuses

    with ThreadPoolExecutor(devices) as pool:
        statuses = [s for result in pool.map(run_device, range(devices)) for s in result]
    assert set(statuses) == {200}
    with server.client(token) as client:
        rows = client.get("/v1/meetings/all-hands/segments").json()
    assert len(rows) == devices * per_device
    assert len({(r["device_id"], r["seq"]) for r in rows}) == len(rows)
    assert [(r["start"], r["device_id"], r["seq"]) for r in rows] == sorted(
        (r["start"], r["device_id"], r["seq"]) for r in rows)
    with open_log(server.store, upgrade=False) as log:
        assert log.verify("all-hands", tenant="acme").ok


def _follow(url: str, token: str, meeting: str, wanted: int, out: queue.Queue, *,
            last_event_id: str | None = None) -> None:
    """Read the live stream until `wanted` segment events arrived; put (id, segment) pairs on `out`."""
    headers = {"Authorization": f"Bearer {token}"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    got = 0
    event: dict[str, str] = {}
    with httpx.stream("GET", f"{url}/v1/meetings/{meeting}/events", headers=headers,
                      timeout=httpx.Timeout(30.0)) as response:
        out.put(("status", response.status_code))
        for line in response.iter_lines():
            if line == "":
                if "data" in event and event.get("event", "message") == "message":
                    out.put((event.get("id"), json.loads(event["data"])))
                    got += 1
                    if got == wanted:
                        return
                event = {}
            elif not line.startswith(":") and ":" in line:
                name, _, value = line.partition(":")
                event[name] = value.removeprefix(" ")


def test_live_captions_follow_and_resume(server: Server) -> None:
    token = server.token("acme")
    meeting = "live-captions"
    with server.client(token) as client:
        first = {"device_id": "g", "segments": [_segment(1, 0)]}
        assert client.post(f"/v1/meetings/{meeting}/segments", json=first).status_code == 200
        events: queue.Queue = queue.Queue()
        follower = threading.Thread(target=_follow, args=(server.url, token, meeting, 6, events), daemon=True)
        follower.start()
        assert events.get(timeout=30) == ("status", 200)
        for seq in range(1, 6):
            body = {"device_id": "g", "segments": [_segment(1, seq)]}
            assert client.post(f"/v1/meetings/{meeting}/segments", json=body).status_code == 200
        follower.join(timeout=30)
        received = [events.get(timeout=1) for _ in range(6)]
    assert [seg["seq"] for _, seg in received] == [0, 1, 2, 3, 4, 5]
    assert [event_id for event_id, _ in received] == ["0", "1", "2", "3", "4", "5"]
    assert received[3][1]["text"] == _segment(1, 3)["text"]

    # A display that dropped after event 2 reconnects with Last-Event-ID and gets exactly 3, 4, 5.
    resumed: queue.Queue = queue.Queue()
    _follow(server.url, token, meeting, 3, resumed, last_event_id="2")
    assert resumed.get(timeout=1) == ("status", 200)
    assert [resumed.get(timeout=1)[1]["seq"] for _ in range(3)] == [3, 4, 5]


def test_live_captions_of_another_tenant_are_404(server: Server) -> None:
    acme, globex = server.token("acme"), server.token("globex")
    with server.client(acme) as client:
        client.post("/v1/meetings/private/segments", json={"device_id": "g", "segments": [_segment(1, 0)]})
    with server.client(globex) as client:
        assert client.get("/v1/meetings/private/events").status_code == 404
        assert client.get("/v1/meetings/private/events", headers={"Last-Event-ID": "x"}).status_code == 404


def test_posted_segment_is_answerable_over_the_wire(server: Server, meetmem_cli: Any) -> None:
    token = server.token("acme")
    with server.client(token, timeout=60) as client:
        body = {"device_id": "g", "segments": [
            {"seq": 0, "start": 0.0, "end": 4.0, "speaker": "Mia", "text": "The casing decision waits for Tuesday."},
            {"seq": 1, "start": 4.0, "end": 9.0, "speaker": "Raj",
             "text": "The supplier quoted 7,300 dollars for the tooling."},
        ]}
        assert client.post("/v1/meetings/quote/segments", json=body).status_code == 200
        answer = client.post("/v1/meetings/quote/ask", json={"question": "How much did the supplier quote?"}).json()
        assert "7,300 dollars" in answer["answer"] and answer["kind"] == "verbatim"
        assert answer["citations"][0]["speaker"] == "Raj" and answer["citations"][0]["start"] == 4.0
        # Revoking the token from the CLI, while the server runs, takes effect on the next request.
        store = ("--database", server.database_url) if server.database_url else ()
        result = meetmem_cli("token", "revoke", token, *store, db=server.db)
        assert result.returncode == 0, result.stderr
        assert client.get("/v1/meetings/quote").status_code == 401
