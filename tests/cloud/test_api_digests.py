"""Summaries and the ledger over HTTP: made in the background for a live meeting, at once for a closed
one, the CLI's shapes, tenant-scoped, and behind overview answers."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import pytest

from meetmem.store.records import SegmentInput

#: Every test here runs on the SQLite file and on PostgreSQL (tests/cloud/conftest.py).
BACKENDS = ("sqlite", "postgres")

Api = Any  # tests/cloud/conftest.py: a TestClient on a fresh app, with token helpers

MEETING = "launch-review"


def _post(api: Api, headers: dict[str, str], device_id: str, segments: list[SegmentInput]) -> None:
    rows = [{k: v for k, v in asdict(s).items() if v is not None} for s in segments]
    r = api.client.post(f"/v1/meetings/{MEETING}/segments", json={"device_id": device_id, "segments": rows},
                        headers=headers)
    assert r.status_code == 200, r.text


def _settle(api: Api) -> None:
    assert api.service.scheduler.indexer.wait_idle(60)
    assert api.service.scheduler.summaries.wait_idle(60)


@pytest.fixture
def live(api: Api, sample_device_and_segments: tuple[str, list[SegmentInput]]) -> tuple[Api, dict[str, str]]:
    device_id, segments = sample_device_and_segments
    headers = api.headers(api.token("local"))
    for i in range(0, len(segments), 10):
        _post(api, headers, device_id, segments[i : i + 10])
    _settle(api)
    return api, headers


def test_a_live_meeting_is_summarized_in_the_background_and_finished_on_close(
        live: tuple[Api, dict[str, str]]) -> None:
    api, headers = live
    r = api.client.get(f"/v1/meetings/{MEETING}/summary", headers=headers)
    assert r.status_code == 200, r.text
    during = r.json()
    assert during["final"] is False and during["open_from"] is not None
    assert all(s["end"] <= during["open_from"] for s in during["l1"])

    assert api.client.post(f"/v1/meetings/{MEETING}/close", headers=headers).status_code == 200
    r = api.client.get(f"/v1/meetings/{MEETING}/summary", headers=headers)
    after = r.json()
    assert after["final"] is True and after["open_from"] is None
    assert len(after["l1"]) > len(during["l1"]) and after["l2"]
    stored = {s["segment_id"]: s for s in api.client.get(f"/v1/meetings/{MEETING}/segments", headers=headers).json()}
    for line in after["l2"] + [line for s in after["l1"] for line in s["lines"]]:
        assert line["segment_ids"] and all(sid in stored for sid in line["segment_ids"])
        assert line["text"] in stored[line["segment_ids"][0]]["text"]


def test_the_ledger_names_owners_due_dates_and_decisions(live: tuple[Api, dict[str, str]]) -> None:
    api, headers = live
    api.client.post(f"/v1/meetings/{MEETING}/close", headers=headers)
    r = api.client.get(f"/v1/meetings/{MEETING}/ledger", headers=headers)
    assert r.status_code == 200, r.text
    ledger = r.json()
    todos = {(t["owner"], t["due"]) for t in ledger["todos"]}
    assert ("Dana", "April 2nd") in todos and ("Bob", "March 12th") in todos
    assert any("TS-204" in d["text"] for d in ledger["decisions"])
    stored = {s["segment_id"] for s in api.client.get(f"/v1/meetings/{MEETING}/segments", headers=headers).json()}
    for key in ("decisions", "todos", "open_questions", "facts", "glossary"):
        for item in ledger[key]:
            assert item["source"]["segment_ids"] and set(item["source"]["segment_ids"]) <= stored


def test_overview_questions_are_answered_from_the_ledger_with_citations(live: tuple[Api, dict[str, str]]) -> None:
    api, headers = live
    api.client.post(f"/v1/meetings/{MEETING}/close", headers=headers)
    _settle(api)
    r = api.client.post(f"/v1/meetings/{MEETING}/ask", json={"question": "What did we decide?", "explain": True},
                        headers=headers)
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["kind"] == "overview"
    assert "TS-204" in answer["answer"] and "$349" in answer["answer"]
    assert any("TS-204" in c["text"] for c in answer["citations"]) and len(answer["citations"]) <= 10
    assert any(b["block"].startswith("ledger: decisions") and b["reason"] == "pinned" for b in answer["manifest"])

    r = api.client.post(f"/v1/meetings/{MEETING}/ask", json={"question": "What does Dana owe us?"}, headers=headers)
    answer = r.json()
    assert "press release" in answer["answer"] and "Bob" not in answer["answer"]


def test_summaries_belong_to_their_tenant(live: tuple[Api, dict[str, str]]) -> None:
    api, _ = live
    other = api.headers(api.token("other-team"))
    for what in ("summary", "ledger"):
        r = api.client.get(f"/v1/meetings/{MEETING}/{what}", headers=other)
        assert r.status_code == 404 and "launch-review" in r.json()["detail"]
        assert api.client.get(f"/v1/meetings/{MEETING}/{what}").status_code == 401
