"""What an outside attack run found over HTTP (issue 16), each with its reproduction as a test."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

#: Every test here runs on the SQLite file and on PostgreSQL (tests/cloud/conftest.py).
BACKENDS = ("sqlite", "postgres")

Api = Any  # tests/cloud/conftest.py: a TestClient on a fresh app, with token helpers

SEGMENT = {"seq": 0, "start": 0.0, "end": 2.0, "text": "we ship on March 3rd"}


def test_an_empty_batch_makes_no_meeting_and_the_reaper_has_nothing_to_close(make_api: Any,
                                                                              caplog: pytest.LogCaptureFixture) -> None:
    api = make_api(embedders=None, close_after_silence=60)
    h = api.headers(api.token("acme"))
    r = api.client.post("/v1/meetings/phantom-1/segments", json={"device_id": "d", "segments": []}, headers=h)
    assert r.status_code == 422 and "segments" in r.json()["detail"]
    assert api.client.get("/v1/meetings/phantom-1", headers=h).status_code == 404
    assert api.client.get("/v1/meetings", headers=h).json() == []
    with caplog.at_level(logging.WARNING, logger="meetmem.cloud.service"):
        for _ in range(3):
            assert api.service.reaper.close_silent(now=api.service.clock() + 3600) == []
    assert not caplog.records


def test_the_reaper_logs_once_what_it_cannot_close(make_api: Any, caplog: pytest.LogCaptureFixture) -> None:
    api = make_api(embedders=None, close_after_silence=60)
    # A meeting the reaper was told of but that holds nothing (as an empty batch left behind before this
    # fix): it is skipped, said once, and forgotten.
    api.service.reaper._activity[("acme", "ghost")] = api.service.clock()
    with caplog.at_level(logging.WARNING, logger="meetmem.cloud.service"):
        for _ in range(5):
            api.service.reaper.close_silent(now=api.service.clock() + 3600)
    lines = [r for r in caplog.records if "ghost" in r.getMessage()]
    assert len(lines) == 1 and lines[0].exc_info is None
    assert ("acme", "ghost") not in api.service.reaper._activity


def test_a_method_not_allowed_names_the_allowed_ones(api: Api) -> None:
    h = api.headers(api.token("acme"))
    r = api.client.put("/v1/meetings/m/segments", json={}, headers=h)
    assert r.status_code == 405
    assert r.headers["allow"] == "GET, POST"
    assert r.json()["detail"] == "PUT is not allowed here; use GET or POST"


def test_deeply_nested_json_is_named_as_such(api: Api) -> None:
    h = {**api.headers(api.token("acme")), "Content-Type": "application/json"}
    r = api.client.post("/v1/meetings/m/segments", content=b"[" * 1500 + b"]" * 1500, headers=h)
    assert r.status_code == 422, r.text
    assert "nested too deeply" in r.json()["detail"] and "UTF-8" not in r.json()["detail"]


def test_a_byte_order_mark_is_taken_by_the_api_as_by_the_cli(api: Api) -> None:
    h = {**api.headers(api.token("acme")), "Content-Type": "application/json"}
    body = b"\xef\xbb\xbf" + json.dumps({"device_id": "d", "segments": [SEGMENT]}).encode()
    r = api.client.post("/v1/meetings/m/segments", content=body, headers=h)
    assert r.status_code == 200, r.text


def test_the_readme_states_the_body_limit_the_server_enforces(repo_root: Path) -> None:
    from meetmem.settings import Settings

    limit = Settings().max_body_bytes
    readme = (repo_root / "README.md").read_text(encoding="utf-8")
    assert f"{limit // 1_048_576} MiB" in readme
    assert "1 MiB" not in readme.replace(f"{limit // 1_048_576} MiB", "")
