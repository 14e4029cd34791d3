"""Deletion and retention through the API on both stores, the meeting's kept audio with it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from meetmem.store.backends import audio_store_for, open_log
from meetmem.store.meeting_meta import MeetingMeta
from meetmem.store.receipts import ReceiptKey
from meetmem.store.records import SegmentInput
from meetmem.store.tombstones import Tombstone, check_tombstone

#: Every test here runs on the SQLite file and on PostgreSQL (tests/cloud/conftest.py).
BACKENDS = ("sqlite", "postgres")

HW = [{"seq": 0, "start": 0.0, "end": 4.0, "speaker": "Ana", "text": "we decided the casing is aluminium"},
      {"seq": 1, "start": 4.0, "end": 9.0, "speaker": "Bo", "text": "Bo will send the casing quote by Friday"}]
DEMO_AUDIO = Path(__file__).resolve().parents[2] / "meetmem" / "demo_data" / "sample_meeting.ogg"
PRICE = [{"seq": 0, "start": 0.0, "end": 5.0, "speaker": "Cy", "text": "the launch price is 349 euros"}]


def _post(api: Any, headers: dict[str, str], meeting_id: str, rows: list[dict[str, Any]]) -> Any:
    return api.client.post(f"/v1/meetings/{meeting_id}/segments", headers=headers,
                           json={"device_id": "glasses", "segments": rows})


def _keep_audio(api: Any, headers: dict[str, str], meeting_id: str) -> None:
    r = api.client.put(f"/v1/meetings/{meeting_id}/audio/policy", headers=headers, json={"keep": True})
    assert r.status_code == 200, r.text
    r = api.client.put(f"/v1/meetings/{meeting_id}/audio/chunks/glasses/0?start=0", content=DEMO_AUDIO.read_bytes(),
                       headers={**headers, "Content-Type": "audio/ogg"})
    assert r.status_code == 200, r.text


def test_delete_leaves_a_signed_tombstone_and_nothing_else(make_api: Any, kept_audio_bytes: Any) -> None:
    api = make_api(embedders=None)
    acme, rival = api.headers(api.token("acme")), api.headers(api.token("rival"))
    assert _post(api, acme, "hw", HW).status_code == 200
    assert _post(api, acme, "price", PRICE).status_code == 200
    assert _post(api, rival, "hw", PRICE).status_code == 200  # the same id under another tenant
    assert api.client.post("/v1/meetings/hw/close", headers=acme).status_code == 200
    assert api.client.get("/v1/meetings/hw/ledger", headers=acme).status_code == 200  # a digest is stored
    _keep_audio(api, acme, "hw")
    assert api.client.get("/v1/meetings/hw/audio?start=1&end=3", headers=acme).status_code == 200  # rendered
    _keep_audio(api, rival, "hw")  # the same bytes, kept by the other tenant's meeting of the same id
    assert api.client.delete("/v1/meetings/hw", headers=api.headers(api.token("third"))).status_code == 404

    r = api.client.delete("/v1/meetings/hw", headers=acme)
    assert r.status_code == 200, r.text
    tombstone = Tombstone(**r.json())
    assert (tombstone.segments, tombstone.head_pos) == (2, 1)
    check_tombstone(ReceiptKey.load(api.settings.receipt_key_path()), tombstone)
    for path in ("/v1/meetings/hw", "/v1/meetings/hw/segments", "/v1/meetings/hw/ledger", "/v1/meetings/hw/summary",
                 "/v1/meetings/hw/audio", "/v1/meetings/hw/audio/chunks"):
        got = api.client.get(path, headers=acme)
        assert got.status_code == 404 and "deleted at" in got.json()["detail"], (path, got.text)
    assert [m["meeting_id"] for m in api.client.get("/v1/meetings", headers=acme).json()] == ["price"]
    again = _post(api, acme, "hw", HW)
    assert again.status_code == 409 and "tombstone keeps the id" in again.json()["detail"]
    assert [t["meeting_id"] for t in api.client.get("/v1/tombstones", headers=acme).json()] == ["hw"]
    assert api.client.get("/v1/tombstones", headers=rival).json() == []
    assert [s["text"] for s in api.client.get("/v1/meetings/hw/segments", headers=rival).json()] == \
        [PRICE[0]["text"]]
    assert api.client.get("/v1/meetings/hw/audio", headers=rival).content == DEMO_AUDIO.read_bytes()
    with open_log(api.settings.database_url or api.settings.db, upgrade=False) as log:
        assert log.verify("price", tenant="acme").ok and log.verify("hw", tenant="rival").ok
        assert log.count() == 2
        assert audio_store_for(log).chunks("hw", tenant="acme") == []
    # What is left is the other tenant's copy alone (on SQLite one file, which it still names).
    assert kept_audio_bytes(api) == len(DEMO_AUDIO.read_bytes())
    assert api.client.delete("/v1/meetings/hw", headers=rival).status_code == 200
    assert kept_audio_bytes(api) == 0


def test_the_reaper_applies_retention(make_api: Any, cloud_backend: str | None, tmp_path: Any,
                                      kept_audio_bytes: Any) -> None:
    db = tmp_path / "retained.db"
    with open_log(cloud_backend or db, upgrade=False,  # stored before the server starts, by its clock then
                  clock=lambda: "2020-01-01T09:00:00+00:00") as log:
        log.append("old", "glasses", [SegmentInput(**row) for row in PRICE], tenant="acme",
                   meta=MeetingMeta(started_at="9999-12-31T09:00:00+00:00"))  # a device's start is not its age
        log.close_meeting("old", tenant="acme")
        audio_store_for(log).add("old", "glasses", 0, DEMO_AUDIO.read_bytes(), start=0.0, tenant="acme")
    api = make_api(embedders=None, retention_days=30, db=db)
    headers = api.headers(api.token("acme"))
    assert _post(api, headers, "new", HW).status_code == 200
    deadline = time.monotonic() + 30
    while api.client.get("/v1/meetings/old", headers=headers).status_code != 404:
        assert time.monotonic() < deadline, "the reaper did not delete the expired meeting"
        time.sleep(0.05)  # the reaper is a background thread; the deadline bounds the wait
    tombs = api.client.get("/v1/tombstones", headers=headers).json()
    assert [t["meeting_id"] for t in tombs] == ["old"] and tombs[0]["reason"].startswith("retention: older than 30")
    assert api.client.get("/v1/meetings/new", headers=headers).status_code == 200
    assert kept_audio_bytes(api) == 0  # its audio went with it
