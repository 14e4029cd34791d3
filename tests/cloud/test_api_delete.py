"""DELETE /v1/meetings/{id}: the meeting leaves every route, list, search and cache; a tombstone stays."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from meetmem.store.log import TranscriptLog
from meetmem.store.meeting_meta import MeetingMeta
from meetmem.store.receipts import ReceiptKey
from meetmem.store.records import SegmentInput
from meetmem.store.tombstones import Tombstone, check_tombstone

DEMO_AUDIO = Path(__file__).resolve().parents[2] / "meetmem" / "demo_data" / "sample_meeting.ogg"

HW = [{"seq": 0, "start": 0.0, "end": 4.0, "speaker": "Ana", "text": "we decided the casing is aluminium"},
      {"seq": 1, "start": 4.0, "end": 9.0, "speaker": "Bo", "text": "Bo will send the casing quote by Friday"}]
PRICE = [{"seq": 0, "start": 0.0, "end": 5.0, "speaker": "Cy", "text": "the launch price is 349 euros"}]

BACKENDS = ("sqlite", "postgres")


def _post(api: Any, headers: dict[str, str], meeting_id: str, rows: list[dict[str, Any]], **meta: Any) -> None:
    r = api.client.post(f"/v1/meetings/{meeting_id}/segments", headers=headers,
                        json={"device_id": "glasses", "segments": rows, **meta})
    assert r.status_code == 200, r.text


# SQLite's: it looks into the audio folder beside the file and into the service's in-process caches. The same
# deletion on both stores, audio included, is test_api_delete_backends.py.
@pytest.mark.backends("sqlite")
def test_delete_a_meeting_everywhere(make_api: Any) -> None:
    api = make_api()
    headers = api.headers(api.token("acme"))
    other = api.headers(api.token("rival"))
    _post(api, headers, "hw", HW, title="Hardware review")
    _post(api, headers, "price", PRICE)
    _post(api, other, "hw", PRICE)  # the same id under another tenant
    r = api.client.put("/v1/meetings/hw/audio/policy", headers=headers, json={"keep": True})
    assert r.status_code == 200, r.text
    r = api.client.put("/v1/meetings/hw/audio/chunks/glasses/0?start=0", content=DEMO_AUDIO.read_bytes(),
                       headers={**headers, "Content-Type": "audio/ogg"})
    assert r.status_code == 200, r.text
    audio_file = api.service.log.path.with_name(api.service.log.path.name + ".audio")
    assert any(audio_file.rglob("*.ogg"))
    assert api.client.post("/v1/meetings/hw/close", headers=headers).status_code == 200
    assert api.client.get("/v1/meetings/hw/ledger", headers=headers).status_code == 200  # a digest is stored
    hits = api.client.get("/v1/search", params={"q": "casing aluminium"}, headers=headers).json()
    assert hits and hits[0]["meeting_id"] == "hw"
    r = api.client.post("/v1/meetings/hw/ask", headers=headers, json={"question": "what about the casing?",
                                                                      "session_id": "s1"})
    assert r.status_code == 200
    assert ("acme", "hw") in api.service.search._meetings

    # Another tenant cannot see it, so cannot delete it; an unknown meeting is 404 too.
    assert api.client.delete("/v1/meetings/hw", headers=api.headers(api.token("third"))).status_code == 404
    assert api.client.delete("/v1/meetings/nope", headers=headers).status_code == 404
    assert api.client.delete("/v1/meetings/hw").status_code == 401

    r = api.client.delete("/v1/meetings/hw", headers=headers)
    assert r.status_code == 200, r.text
    tomb = r.json()
    assert (tomb["tenant"], tomb["meeting_id"], tomb["segments"], tomb["head_pos"]) == ("acme", "hw", 2, 1)
    check_tombstone(ReceiptKey.load(api.settings.receipt_key_path()), Tombstone(**tomb))

    for method, path in [("GET", "/v1/meetings/hw"), ("GET", "/v1/meetings/hw/segments"),
                         ("GET", "/v1/meetings/hw/summary"), ("GET", "/v1/meetings/hw/ledger"),
                         ("GET", "/v1/meetings/hw/search?q=casing"), ("GET", "/v1/meetings/hw/audio"),
                         ("GET", "/v1/meetings/hw/audio/chunks"), ("GET", "/v1/meetings/hw/export"),
                         ("POST", "/v1/meetings/hw/close"), ("DELETE", "/v1/meetings/hw")]:
        r = api.client.request(method, path, headers=headers)
        assert r.status_code == 404, (method, path, r.status_code, r.text)
    r = api.client.post("/v1/meetings/hw/ask", headers=headers, json={"question": "what about the casing?"})
    assert r.status_code == 404 and "deleted at" in r.json()["detail"]
    assert [m["meeting_id"] for m in api.client.get("/v1/meetings", headers=headers).json()] == ["price"]
    hits = api.client.get("/v1/search", params={"q": "casing aluminium"}, headers=headers).json()
    assert all(h["meeting_id"] == "price" for h in hits)
    answer = api.client.post("/v1/ask", headers=headers, json={"question": "what did we decide about the casing?"})
    assert answer.status_code == 200 and "aluminium" not in answer.text
    assert not any(audio_file.rglob("*.ogg"))

    # Caches hold nothing of it.
    service = api.service
    assert ("acme", "hw") not in service.search._meetings
    assert ("acme", "hw") not in service.digester._live
    # (Ask sessions are rows of the database, removed with the meeting: see the language-model test below.)

    # Its id stays taken: a device catching up is told, not silently given a new meeting.
    r = api.client.post("/v1/meetings/hw/segments", headers=headers,
                        json={"device_id": "glasses", "segments": [{**HW[0], "seq": 7}]})
    assert r.status_code == 409 and "deleted" in r.json()["detail"]
    assert api.client.get("/v1/meetings/hw", headers=headers).status_code == 404

    # The other tenant's meeting of the same id, and the tenant's other meeting, are untouched.
    assert api.client.get("/v1/meetings/hw/segments", headers=other).json()[0]["text"] == PRICE[0]["text"]
    assert service.log.verify("price", tenant="acme").ok and service.log.verify("hw", tenant="rival").ok

    listed = api.client.get("/v1/tombstones", headers=headers).json()
    assert listed == [tomb]
    assert api.client.get("/v1/tombstones", headers=other).json() == []


@pytest.mark.backends("sqlite")  # on both stores: test_api_delete_backends.py
def test_the_reaper_applies_retention(make_api: Any, tmp_path: Path) -> None:
    db = tmp_path / "retained.db"
    # Stored before the server starts (its reaper's first round finds it), first received in 2020.
    with TranscriptLog(db, clock=lambda: "2020-01-01T09:00:00+00:00") as log:
        log.append("old", "glasses", [SegmentInput(**row) for row in PRICE], tenant="acme",
                   meta=MeetingMeta(started_at="2020-01-01T09:00:00+00:00"))
        log.close_meeting("old", tenant="acme")
    api = make_api(embedders=None, retention_days=30, db=db)
    headers = api.headers(api.token("acme"))
    _post(api, headers, "new", HW)
    deadline = time.monotonic() + 30
    while api.client.get("/v1/meetings/old", headers=headers).status_code != 404:
        assert time.monotonic() < deadline, "the reaper did not delete the expired meeting"
        time.sleep(0.05)  # the reaper is a background thread; the deadline bounds the wait
    tombs = api.client.get("/v1/tombstones", headers=headers).json()
    assert [t["meeting_id"] for t in tombs] == ["old"] and tombs[0]["reason"].startswith("retention: older than 30")
    assert api.client.get("/v1/meetings/new", headers=headers).status_code == 200


def test_an_open_stream_ends_when_its_meeting_is_deleted(serve_factory: Any, meetmem_cli: Any,
                                                         cloud_backend: str | None) -> None:
    serve = serve_factory(database_url=cloud_backend)
    serve.start()
    made = meetmem_cli("token", "create", "--tenant", "acme", *serve.store_args, db=serve.db)
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=serve.url, headers=headers, timeout=30) as client:
        r = client.post("/v1/meetings/live/segments", json={"device_id": "glasses", "segments": HW})
        assert r.status_code == 200, r.text
        events: list[tuple[str, str]] = []
        opened = threading.Event()

        def follow() -> None:
            with client.stream("GET", "/v1/meetings/live/events") as stream:
                name = "message"
                for line in stream.iter_lines():
                    if line.startswith("event:"):
                        name = line.split(":", 1)[1].strip()
                    elif line.startswith("data:"):
                        events.append((name, line.split(":", 1)[1].strip()))
                        name = "message"
                        if len(events) == len(HW):
                            opened.set()

        reader = threading.Thread(target=follow)
        reader.start()
        assert opened.wait(30)
        assert client.delete("/v1/meetings/live").status_code == 200
        reader.join(30)
        assert not reader.is_alive(), "the stream did not end"
    assert events[-1][0] == "deleted" and json.loads(events[-1][1]) == {"meeting_id": "live"}


def test_a_language_models_cached_context_and_sessions_go_too(make_api: Any) -> None:
    from fakes.chat_server import ScriptedChatServer

    with ScriptedChatServer(lambda request: "Nothing to cite.") as server:
        api = make_api(embedders=None, answerer="llm", llm_url=server.url, llm_model="scripted")
        headers = api.headers(api.token("acme"))
        _post(api, headers, "hw", HW)
        assert api.client.post("/v1/meetings/hw/close", headers=headers).status_code == 200
        assert api.service.scheduler.summaries.wait_idle(60)
        r = api.client.post("/v1/meetings/hw/ask", headers=headers,
                            json={"question": "what about the casing?", "session_id": "s1"})
        assert r.status_code == 200, r.text
        sources = api.service.answerer.sources
        assert ("acme", "hw") in sources._cached and len(api.service.sessions) == 1
        assert api.client.delete("/v1/meetings/hw", headers=headers).status_code == 200
        assert ("acme", "hw") not in sources._cached and len(api.service.sessions) == 0
