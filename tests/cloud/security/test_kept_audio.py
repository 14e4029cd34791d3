"""Issue 30, the audio findings: playback that could exhaust memory and CPU (1), chunk uploads that raced on
SQLite (3), chunks checked for Ogg framing only and a 503 naming a server path (8), and Range positions read
with Python's lenient int() (13), each replayed on both stores where it applies."""

from __future__ import annotations

import struct
import threading
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from meetmem.cloud.audio_render import render_range
from meetmem.cloud.ranges import parse_range
from meetmem.edge.recording import OggOpusWriter
from meetmem.store.audio import AudioStore, ogg_info
from meetmem.store.backends import audio_store_for
from meetmem.store.log import TranscriptLog
from meetmem.store.records import SegmentInput

BACKENDS = ("sqlite", "postgres")


def _tone(path: Path, seconds: float, freq: float = 440.0) -> bytes:
    t = np.arange(int(seconds * 16000)) / 16000
    with OggOpusWriter(path) as writer:
        writer.write((np.sin(2 * np.pi * freq * t) * 8000).astype(np.int16))
    return path.read_bytes()


def _ogg_crc(data: bytes) -> int:
    """The Ogg page checksum (CRC-32, polynomial 0x04c11db7, not reflected), so forged pages look whole."""
    crc = 0
    for byte in data:
        crc ^= byte << 24
        for _ in range(8):
            crc = ((crc << 1) ^ 0x04C11DB7) if crc & 0x80000000 else crc << 1
            crc &= 0xFFFFFFFF
    return crc


def _page(body: bytes, granule: int, serial: int, seq: int, flags: int = 0, lacing: bytes | None = None) -> bytes:
    """One Ogg page holding `body` (one packet, unless `lacing` says where its packets end)."""
    if lacing is None:
        lacing = bytes([255] * (len(body) // 255) + [len(body) % 255])
    header = (b"OggS" + bytes([0, flags]) + struct.pack("<qII", granule, serial, seq) + b"\0\0\0\0"
              + bytes([len(lacing)]) + bytes(lacing))
    page = header + body
    return page[:22] + struct.pack("<I", _ogg_crc(page)) + page[26:]


def _split_pages(data: bytes) -> list[tuple[int, int, int, bytes, bytes]]:
    """`(header_type, granule, serial, body, lacing table)` of each page of an Ogg file."""
    pages, pos = [], 0
    while pos < len(data):
        count = data[pos + 26]
        size = sum(data[pos + 27:pos + 27 + count])
        granule, serial = struct.unpack_from("<qI", data, pos + 6)
        body_at = pos + 27 + count
        pages.append((data[pos + 5], granule, serial, data[body_at:body_at + size], data[pos + 27:body_at]))
        pos = body_at + size
    return pages


def _meeting(api: Any, meeting: str = "m") -> dict[str, str]:
    headers = api.headers(api.token("acme"))
    body = {"device_id": "glasses", "segments": [{"seq": 0, "start": 0, "end": 1, "text": "hello"}]}
    assert api.client.post(f"/v1/meetings/{meeting}/segments", json=body, headers=headers).status_code == 200
    assert api.client.put(f"/v1/meetings/{meeting}/audio/policy", json={"keep": True},
                          headers=headers).status_code == 200
    return headers


def _put(api: Any, headers: dict[str, str], seq: int, data: bytes, start: float, device: str = "glasses",
         meeting: str = "m") -> Any:
    return api.client.put(f"/v1/meetings/{meeting}/audio/chunks/{device}/{seq}?start={start}", content=data,
                          headers={**headers, "Content-Type": "audio/ogg"})


# -- finding 1: playback bounded ------------------------------------------------------------------------------
def test_a_stretch_longer_than_the_cap_is_refused_with_how_to_ask(make_api: Callable[..., Any],
                                                                   tmp_path: Path) -> None:
    """A chunk two hours in: the whole meeting (two hours of silence to make) is refused with a 422 that says
    to ask for parts; a stretch within the cap is made, and says where it lies."""
    api = make_api(embedders=None)
    headers = _meeting(api)
    tone = _tone(tmp_path / "t.ogg", 1.0)
    assert _put(api, headers, 0, tone, 0).status_code == 200
    assert _put(api, headers, 1, tone, 7200).status_code == 200
    r = api.client.get("/v1/meetings/m/audio", headers=headers)
    assert r.status_code == 422, r.status_code
    detail = r.json()["detail"]
    assert "`start` and `end`" in detail and "3600 s" in detail  # the cap: an hour
    assert api.client.get("/v1/meetings/m/audio?start=3000&end=7201", headers=headers).status_code == 422
    r = api.client.get("/v1/meetings/m/audio?start=7140&end=7300", headers=headers)
    assert r.status_code == 200
    assert r.headers["x-audio-start"] == "7140.000" and r.headers["x-audio-end"] == "7201.000"
    assert ogg_info(r.content).duration == pytest.approx(61.0, abs=0.05)
    r = api.client.get("/v1/meetings/m/audio?start=7140&end=7300", headers={**headers, "Range": "bytes=0-99"})
    assert r.status_code == 206 and len(r.content) == 100


@pytest.mark.backends("sqlite")  # the renderer alone: no store behind it
def test_a_gap_is_written_as_silence_in_blocks(tmp_path: Path) -> None:
    """Ten minutes of gap before a one-second chunk: the render never holds the gap (19 MB of samples)."""
    with TranscriptLog(tmp_path / "a.db") as log:
        log.append("m", "d", [SegmentInput(seq=0, start=0, end=1, text="hi")])
        store = AudioStore(log, default_keep=True)
        chunk, _ = store.add("m", "d", 0, _tone(tmp_path / "t.ogg", 1.0), start=599.0)
        tracemalloc.start()
        try:
            made = render_range([chunk], 0.0, 600.0, tmp_path / "rendered")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert ogg_info(made.read_bytes()).duration == pytest.approx(600.0, abs=0.05)
    assert peak < 4 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB"


def test_concurrent_requests_for_one_stretch_share_one_render(make_api: Callable[..., Any], tmp_path: Path) -> None:
    api = make_api(embedders=None)
    headers = _meeting(api)
    tone = _tone(tmp_path / "t.ogg", 1.0)
    assert _put(api, headers, 0, tone, 0).status_code == 200
    assert _put(api, headers, 1, tone, 1500).status_code == 200  # 25 minutes of silence to make: seconds of CPU
    barrier = threading.Barrier(4)
    answers: list[Any] = []

    def ask() -> None:
        barrier.wait()
        answers.append(api.client.get("/v1/meetings/m/audio?start=0&end=1501", headers=headers))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.status_code for r in answers] == [200] * 4
    assert len({r.content for r in answers}) == 1
    assert api.client.app.state.audio.renders.made == 1


# -- finding 3: racing uploads ---------------------------------------------------------------------------------
def test_racing_uploads_of_one_chunk_store_one_and_refuse_the_other(
        make_api: Callable[..., Any], tmp_path: Path, kept_audio_bytes: Callable[[Any], int]) -> None:
    api = make_api(embedders=None)
    headers = _meeting(api)
    pairs = 12
    tones = [(_tone(tmp_path / f"a{i}.ogg", 1.0, 300 + 10 * i), _tone(tmp_path / f"b{i}.ogg", 1.0, 700 + 10 * i))
             for i in range(pairs)]
    statuses: dict[int, list[int]] = {i: [] for i in range(pairs)}

    def upload(seq: int, data: bytes, barrier: threading.Barrier) -> None:
        barrier.wait()
        r = _put(api, headers, seq, data, seq * 2.0)
        statuses[seq].append(r.status_code)

    for i, (a, b) in enumerate(tones):
        barrier = threading.Barrier(2)
        threads = [threading.Thread(target=upload, args=(i, data, barrier)) for data in (a, b)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert {i: sorted(s) for i, s in statuses.items()} == {i: [200, 409] for i in range(pairs)}
    store = audio_store_for(api.service.log)
    stored = store.chunks("m", tenant="acme")
    assert len(stored) == pairs and not store.verify("m", tenant="acme")
    # Exactly the winners' bytes are kept: no loser's file (or row) beside them.
    assert kept_audio_bytes(api) == sum(c.size for c in stored)
    assert api.client.delete("/v1/meetings/m", headers=headers).status_code == 200
    assert kept_audio_bytes(api) == 0


# -- finding 8: what a chunk must be ---------------------------------------------------------------------------
def test_a_chunk_that_is_not_opus_or_lies_about_its_length_is_refused(make_api: Callable[..., Any],
                                                                      tmp_path: Path) -> None:
    api = make_api(embedders=None)
    headers = _meeting(api)
    real = _tone(tmp_path / "t.ogg", 2.0)
    pages = _split_pages(real)
    serial, head = pages[0][2], pages[0][3]
    html = b"<!doctype html><html><body><script>alert(document.cookie)</script></body></html>"
    # An OpusHead page, then a web page where the audio should be.
    html_chunk = _page(head, 0, serial, 0, 2) + _page(html, 48000, serial, 1, 4)
    # A real chunk whose last granule position claims 96 trillion seconds.
    *rest, last = pages
    forged = b"".join(_page(body, granule, serial, n, kind, lacing)
                      for n, (kind, granule, _, body, lacing) in enumerate(rest))
    forged += _page(last[3], 96 * 10**12 * 48000, serial, len(rest), last[0], last[4])
    for seq, data, problem in ((0, html_chunk, "OpusTags"), (1, forged, "granule position")):
        r = _put(api, headers, seq, data, 0)
        assert r.status_code == 422 and problem in r.json()["detail"], (seq, r.status_code, r.text)
    assert api.client.get("/v1/meetings/m/audio/chunks", headers=headers).json() == []
    assert _put(api, headers, 2, real, 0).status_code == 200


@pytest.mark.backends("sqlite")  # a chunk's file damaged on disk after it was stored: SQLite keeps files
def test_a_chunk_that_cannot_be_decoded_is_named_without_a_path(make_api: Callable[..., Any],
                                                                tmp_path: Path) -> None:
    api = make_api(embedders=None)
    headers = _meeting(api)
    tone = _tone(tmp_path / "t.ogg", 1.0)
    assert _put(api, headers, 0, tone, 0).status_code == 200
    assert _put(api, headers, 1, _tone(tmp_path / "u.ogg", 1.0, 660), 3).status_code == 200
    damaged = audio_store_for(api.service.log).chunks("m", tenant="acme")[1].path
    assert damaged is not None
    damaged.write_bytes(b"<html>" * 100)
    r = api.client.get("/v1/meetings/m/audio", headers=headers)
    assert r.status_code == 503
    detail = r.json()["detail"]
    assert "chunk 1 of device 'glasses'" in detail
    assert str(tmp_path) not in detail and ".ogg" not in detail and "/" not in detail.replace("/v1", "")


# -- finding 13: Range positions -----------------------------------------------------------------------------
@pytest.mark.backends("sqlite")  # pure parsing
@pytest.mark.parametrize(("header", "wanted"), [
    ("bytes=0-99", (0, 99)),
    ("bytes=-50", (950, 999)),
    ("bytes=900-", (900, 999)),
    ("bytes=1_0-2_0", None),
    ("bytes=+1-+2", None),
    ("bytes=-+5", None),
    ("bytes=\u0661-\u0662", None),  # Arabic-Indic digits: int() reads them, RFC 9110 does not
    ("bytes=1-2-3", None),
    ("bytes=-", None),
    ("bytes=1000-", "unsatisfiable"),
])
def test_range_positions_are_ascii_digits_only(header: str, wanted: Any) -> None:
    assert parse_range(header, 1000) == wanted


def test_a_lenient_range_is_ignored_over_http(make_api: Callable[..., Any], tmp_path: Path) -> None:
    api = make_api(embedders=None)
    headers = _meeting(api)
    tone = _tone(tmp_path / "t.ogg", 1.0)
    assert _put(api, headers, 0, tone, 0).status_code == 200
    r = api.client.get("/v1/meetings/m/audio", headers={**headers, "Range": "bytes=1_0-2_0"})
    assert r.status_code == 200 and r.content == tone
    assert api.client.get("/v1/meetings/m/audio", headers={**headers, "Range": "bytes=10-20"}).status_code == 206
