"""Export, audio and the web pages over HTTP (BM25 only: no model needed), on a real SQLite file and on a real
PostgreSQL database, where the audio's bytes are rows of the database rather than files."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import srt
import webvtt

from meetmem.edge.recording import OggOpusWriter
from meetmem.store.audio import ogg_info
from meetmem.store.backends import audio_store_for
from meetmem.store.interchange import read_jsonl

BACKENDS = ("sqlite", "postgres")
DEMO_AUDIO = Path(__file__).resolve().parents[2] / "meetmem" / "demo_data" / "sample_meeting.ogg"


def _tone(path: Path, seconds: float, freq: float = 440.0) -> bytes:
    t = np.arange(int(seconds * 16000)) / 16000
    with OggOpusWriter(path) as writer:
        writer.write((np.sin(2 * np.pi * freq * t) * 8000).astype(np.int16))
    return path.read_bytes()


@pytest.fixture
def bm25_api(make_api: Callable[..., Any]) -> Any:
    return make_api(embedders=None)


@pytest.fixture
def demo(bm25_api: Any, sample_meeting_path: Path) -> tuple[Any, dict[str, str]]:
    api = bm25_api
    token = api.token("acme")
    headers = api.headers(token)
    _, segments = read_jsonl(sample_meeting_path)
    body = {"device_id": "glasses", "segments": [{"seq": s.seq, "start": s.start, "end": s.end,
                                                  "speaker": s.speaker, "text": s.text} for s in segments]}
    assert api.client.post("/v1/meetings/demo/segments", json=body, headers=headers).status_code == 200
    assert api.client.post("/v1/meetings/demo/close", headers=headers).status_code == 200
    return api, headers


def test_export_formats_over_http(demo: tuple[Any, dict[str, str]]) -> None:
    api, headers = demo
    r = api.client.get("/v1/meetings/demo/export?format=srt", headers=headers)
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-subrip")
    assert 'filename="demo.srt"' in r.headers["content-disposition"]
    assert len(list(srt.parse(r.text, ignore_errors=False))) == 52
    r = api.client.get("/v1/meetings/demo/export?format=vtt", headers=headers)
    assert r.headers["content-type"].startswith("text/vtt")
    assert len(webvtt.from_string(r.text)) == 52
    r = api.client.get("/v1/meetings/demo/export?format=md", headers=headers)
    assert r.headers["content-type"].startswith("text/markdown") and r.text.startswith("# demo\n")
    doc = api.client.get("/v1/meetings/demo/export?format=json", headers=headers).json()
    ledger = api.client.get("/v1/meetings/demo/ledger", headers=headers).json()
    kinds = ("decisions", "todos", "open_questions", "facts", "glossary")
    # (the route's response model adds the other kinds' fields as nulls)
    assert all([{f: v for f, v in item.items() if v is not None} for item in doc["ledger"][k]]
               == [{f: v for f, v in item.items() if v is not None} for item in ledger[k]] for k in kinds)
    assert len(doc["segments"]) == 52
    assert api.client.get("/v1/meetings/demo/export?format=docx", headers=headers).status_code == 422
    assert api.client.get("/v1/meetings/nope/export?format=md", headers=headers).status_code == 404
    assert api.client.get("/v1/meetings/demo/export?format=md").status_code == 401


def test_audio_upload_policy_ranges_and_delete(demo: tuple[Any, dict[str, str]], tmp_path: Path,
                                               kept_audio_bytes: Callable[[Any], int]) -> None:
    api, headers = demo
    client = api.client
    assert client.get("/v1/meetings/demo/audio", headers=headers).status_code == 404
    first = _tone(tmp_path / "c0.ogg", 3.0)
    second = _tone(tmp_path / "c1.ogg", 2.0, 660.0)
    url = "/v1/meetings/demo/audio/chunks/glasses/0?start=1.0"
    ogg = {**headers, "Content-Type": "audio/ogg"}
    # Off by default: the audio stays on the device.
    r = client.put(url, content=first, headers=ogg)
    assert r.status_code == 403 and "not kept" in r.json()["detail"]
    assert client.put("/v1/meetings/demo/audio/policy", json={"keep": True}, headers=headers).json() == {
        "keep": True, "scope": "meeting"}
    r = client.put(url, content=first, headers=ogg)
    assert r.status_code == 200 and r.json()["new"] is True
    assert r.json()["sha256"] == hashlib.sha256(first).hexdigest()
    assert client.put(url, content=first, headers=ogg).json()["new"] is False  # a replay adds nothing
    assert client.put(url, content=second, headers=ogg).status_code == 409  # other bytes, same (device, seq)
    r = client.put("/v1/meetings/demo/audio/chunks/glasses/1?start=6.0", content=second, headers=ogg)
    assert r.status_code == 200
    r = client.put("/v1/meetings/demo/audio/chunks/glasses/2?start=9", content=b"not ogg", headers=ogg)
    assert r.status_code == 422 and "chunk 2" in r.json()["detail"]
    listed = client.get("/v1/meetings/demo/audio/chunks", headers=headers).json()
    assert [(c["chunk_seq"], c["start"]) for c in listed] == [(0, 1.0), (1, 6.0)]

    # The whole meeting on its own clock: 0 to the end of the last chunk, gaps as silence.
    r = client.get("/v1/meetings/demo/audio", headers=headers)
    assert r.status_code == 200 and r.headers["content-type"] == "audio/ogg"
    assert r.headers["accept-ranges"] == "bytes"
    info = ogg_info(r.content)
    assert info.codec == "opus" and info.duration == pytest.approx(8.0, abs=0.05)
    whole = r.content
    r = client.get("/v1/meetings/demo/audio", headers={**headers, "Range": "bytes=100-1099"})
    assert r.status_code == 206 and r.content == whole[100:1100]
    assert r.headers["content-range"] == f"bytes 100-1099/{len(whole)}"
    r = client.get("/v1/meetings/demo/audio", headers={**headers, "Range": "bytes=-50"})
    assert r.status_code == 206 and r.content == whole[-50:]
    r = client.get("/v1/meetings/demo/audio", headers={**headers, "Range": f"bytes={len(whole)}-"})
    assert r.status_code == 416 and r.headers["content-range"] == f"bytes */{len(whole)}"
    # A stretch: position 0 is `start`.
    r = client.get("/v1/meetings/demo/audio?start=2&end=4.5", headers=headers)
    assert r.status_code == 200 and r.headers["x-audio-start"] == "2.000"
    assert ogg_info(r.content).duration == pytest.approx(2.5, abs=0.05)
    assert client.get("/v1/meetings/demo/audio?start=4&end=2", headers=headers).status_code == 422
    assert client.get("/v1/meetings/demo/audio?start=100", headers=headers).status_code == 422

    # Another tenant sees none of it.
    other = api.headers(api.token("globex"))
    assert client.get("/v1/meetings/demo/audio", headers=other).status_code == 404
    assert client.delete("/v1/meetings/demo/audio", headers=other).status_code == 404

    chain_before = [s.hash for s in api.service.log.chain("demo", tenant="acme")]
    store = audio_store_for(api.service.log)
    stored = store.chunks("demo", tenant="acme")
    assert [store.read_bytes(c) for c in stored] == [first, second] and not store.verify("demo", tenant="acme")
    files = [Path(c.path) for c in stored if c.path is not None]
    r = client.delete("/v1/meetings/demo/audio", headers=headers)
    assert r.status_code == 200 and r.json() == {"meeting_id": "demo", "deleted_chunks": 2}
    assert not any(f.exists() for f in files)
    assert kept_audio_bytes(api) == 0  # nothing of it is left: chunks, nor what was rendered from them
    assert client.get("/v1/meetings/demo/audio", headers=headers).status_code == 404
    assert [s.hash for s in api.service.log.chain("demo", tenant="acme")] == chain_before
    assert api.service.log.verify("demo", tenant="acme").ok
    assert len(client.get("/v1/meetings/demo/segments", headers=headers).json()) == 52


def test_tenant_policy_and_service_default(make_api: Callable[..., Any], tmp_path: Path) -> None:
    api = make_api(embedders=None, audio_upload=True)
    headers = api.headers(api.token("acme"))
    body = {"device_id": "g", "segments": [{"seq": 0, "start": 0, "end": 1, "text": "hello"}]}
    api.client.post("/v1/meetings/m/segments", json=body, headers=headers)
    assert api.client.get("/v1/meetings/m/audio/policy", headers=headers).json() == {"keep": True, "scope": "service"}
    assert api.client.put("/v1/audio/policy", json={"keep": False}, headers=headers).json()["scope"] == "tenant"
    assert api.client.get("/v1/meetings/m/audio/policy", headers=headers).json() == {"keep": False, "scope": "tenant"}
    r = api.client.put("/v1/meetings/m/audio/chunks/g/0?start=0", content=_tone(tmp_path / "t.ogg", 1.0),
                       headers={**headers, "Content-Type": "audio/ogg"})
    assert r.status_code == 403 and "tenant" in r.json()["detail"]


@pytest.mark.backends("sqlite")  # static pages and the OpenAPI document: no store behind them
def test_docs_and_app_need_no_internet(bm25_api: Any) -> None:
    client = bm25_api.client
    for page in ("/docs", "/redoc"):
        html = client.get(page).text
        assert "cdn." not in html and "googleapis" not in html
        for asset in ("/docs-assets/swagger-ui-bundle.js", "/docs-assets/redoc.standalone.js"):
            if asset in html:
                r = client.get(asset)
                assert r.status_code == 200 and len(r.content) > 100_000
    assert client.get("/docs-assets/swagger-ui.css").status_code == 200
    index = client.get("/")
    assert index.status_code == 200 and index.headers["content-type"].startswith("text/html")
    assert "/app/app.js" in index.text and "http" not in index.text.replace("http-equiv", "")
    for name in ("app.js", "app.css", "icon.svg"):
        assert client.get(f"/app/{name}").status_code == 200
    for bad in ("/app/..%2Fapp.py", "/app/.hidden", "/app/nothing.js", "/docs-assets/..%2Fcore.py"):
        assert client.get(bad).status_code == 404
    spec = client.get("/openapi.json").json()
    assert "/v1/meetings/{meeting_id}/export" in spec["paths"] and "/" not in spec["paths"]
    json.dumps(spec)
