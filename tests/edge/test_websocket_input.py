"""The WebSocket audio input with a real `websockets` client on a loopback port: real speech streamed as
20 ms frames comes out as the same samples; 48 kHz PCM and Opus are resampled and decoded; every bad stream
is closed with its documented code and the server keeps serving; the real pipeline (VAD + Whisper tiny.en)
turns a streamed sentence into an outbox segment."""

from __future__ import annotations

import json
import logging
import os
import queue
import re
import subprocess
import threading
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from meetmem.edge.agent import CaptureAgent, CaptureOptions
from meetmem.edge.errors import AudioError
from meetmem.edge.outbox import Outbox
from meetmem.edge.websocket_input import (
    CLOSE_BUSY,
    CLOSE_END,
    CLOSE_GOING_AWAY,
    CLOSE_INVALID,
    CLOSE_POLICY,
    CLOSE_TOO_BIG,
    CLOSE_UNSUPPORTED,
    WebSocketInput,
    WebSocketOptions,
    parse_ws_address,
)

PCM16K = {"format": "pcm_s16le", "sample_rate": 16000, "channels": 1}
FRAME = 320  # 20 ms at 16 kHz


@pytest.fixture
def source() -> Iterator[WebSocketInput]:
    with WebSocketInput(WebSocketOptions(port=0)) as ws_input:
        yield ws_input


def _frames(samples: np.ndarray, size: int = FRAME) -> Iterator[bytes]:
    for at in range(0, len(samples), size):
        yield samples[at : at + size].astype("<i2").tobytes()


def _close_of(client: ClientConnection) -> tuple[int, str]:
    """The close code and reason the server sent (it sends nothing else)."""
    with pytest.raises(ConnectionClosed) as closed:
        client.recv(timeout=10)
    assert closed.value.rcvd is not None, "the server did not send a close frame"
    return closed.value.rcvd.code, closed.value.rcvd.reason


def _stream(url: str, samples: np.ndarray, header: dict[str, Any] = PCM16K, *, end: bool = True,
            **connect_args: Any) -> tuple[int, str]:
    with connect(url, **connect_args) as client:
        client.send(json.dumps(header))
        for frame in _frames(samples):
            client.send(frame)
        if end:
            client.send(json.dumps({"end": True}))
        return _close_of(client) if end else (0, "")


def _received(ws_input: WebSocketInput) -> np.ndarray:
    chunks = list(ws_input.chunks())
    assert all(c.dtype == np.int16 and c.ndim == 1 and 0 < len(c) <= 1600 for c in chunks)
    return np.concatenate(chunks) if chunks else np.zeros(0, np.int16)


def _best_correlation(a: np.ndarray, b: np.ndarray, max_lag: int) -> float:
    """The highest normalised correlation of two signals over lags up to `max_lag` samples."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    best = 0.0
    for lag in range(-max_lag, max_lag + 1):
        x, y = (a[lag:], b) if lag >= 0 else (a, b[-lag:])
        n = min(len(x), len(y))
        x, y = x[:n], y[:n]
        best = max(best, float(np.dot(x, y) / (np.linalg.norm(x) * np.linalg.norm(y) + 1e-9)))
    return best


def test_speech_in_20_ms_frames_reassembles_to_the_same_samples(source: WebSocketInput, budget_speech: Any) -> None:
    assert _stream(source.url, budget_speech.samples) == (CLOSE_END, "end of stream")
    assert np.array_equal(_received(source), budget_speech.samples)


def test_48_khz_pcm_is_resampled_to_16_khz(source: WebSocketInput, budget_speech: Any, sox: Any,
                                           tmp_path: Path) -> None:
    sox(str(budget_speech.path), "-r", "48000", str(tmp_path / "48k.wav"))
    with wave.open(str(tmp_path / "48k.wav"), "rb") as reader:
        high = np.frombuffer(reader.readframes(reader.getnframes()), dtype="<i2").astype(np.int16)
    header = {**PCM16K, "sample_rate": 48000}
    with connect(source.url) as client:
        client.send(json.dumps(header))
        for frame in _frames(high, size=960):  # 20 ms at 48 kHz
            client.send(frame)
        client.send(json.dumps({"end": True}))
        assert _close_of(client)[0] == CLOSE_END
    got = _received(source)
    assert abs(len(got) - len(budget_speech.samples)) <= 16
    assert _best_correlation(got, budget_speech.samples, 32) > 0.98


def test_raw_opus_packets_are_decoded(source: WebSocketInput, budget_speech: Any) -> None:
    av = pytest.importorskip("av")
    encoder = av.CodecContext.create("libopus" if "libopus" in av.codecs_available else "opus", "w")
    encoder.sample_rate, encoder.layout, encoder.format = 16000, "mono", "s16"
    encoder.open()
    packets: list[bytes] = []
    size = encoder.frame_size or FRAME
    padded = np.concatenate([budget_speech.samples, np.zeros(-len(budget_speech.samples) % size, np.int16)])
    for at in range(0, len(padded), size):
        frame = av.AudioFrame.from_ndarray(padded[at : at + size].reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate, frame.pts = 16000, at
        packets += [bytes(p) for p in encoder.encode(frame)]
    packets += [bytes(p) for p in encoder.encode(None)]
    with connect(source.url) as client:
        client.send(json.dumps({"format": "opus", "sample_rate": 16000, "channels": 1}))
        for packet in packets:
            client.send(packet)
        client.send(json.dumps({"end": True}))
        assert _close_of(client)[0] == CLOSE_END
    got = _received(source)
    assert abs(len(got) - len(padded)) < 0.05 * 16000
    assert _best_correlation(got, budget_speech.samples, 400) > 0.8  # lossy, and delayed by the pre-skip


GOOD = np.arange(-1600, 1600, dtype=np.int16)  # 0.2 s that must stay captured


@pytest.mark.parametrize(("case", "code", "words"), [
    ("unknown format", CLOSE_UNSUPPORTED, "unsupported format 'mp3'"),
    ("unsupported rate", CLOSE_UNSUPPORTED, "unsupported sample_rate 44000"),
    ("three channels", CLOSE_UNSUPPORTED, "unsupported channels 3"),
    ("not json", CLOSE_INVALID, "not JSON"),
    ("not an object", CLOSE_INVALID, "must be a JSON object"),
    ("audio first", CLOSE_INVALID, "audio before the format header"),
    ("odd bytes", CLOSE_INVALID, "not whole samples"),
    ("oversized frame", CLOSE_TOO_BIG, "over the 32000-byte limit"),
    ("other text", CLOSE_INVALID, "unexpected text message"),
    ("bad opus packet", CLOSE_INVALID, "Opus packet did not decode"),
])
def test_a_bad_stream_is_closed_with_its_reason_and_the_server_keeps_serving(
        source: WebSocketInput, case: str, code: int, words: str) -> None:
    header: dict[str, Any] | str | bytes = {
        "unknown format": {**PCM16K, "format": "mp3"},
        "unsupported rate": {**PCM16K, "sample_rate": 44000},
        "three channels": {**PCM16K, "channels": 3},
        "not json": "{format: pcm}",
        "not an object": "[16000]",
        "audio first": GOOD.tobytes(),
        "bad opus packet": {"format": "opus", "sample_rate": 48000, "channels": 1},
    }.get(case, PCM16K)
    then: bytes | str = {"odd bytes": b"\x00\x01\x02", "oversized frame": bytes(32002),
                         "other text": '{"pause": true}', "bad opus packet": b"\xff\x13not opus" * 4}.get(case, b"")
    with connect(source.url) as client:
        client.send(header if isinstance(header, str | bytes) else json.dumps(header))
        if then:
            if case != "bad opus packet":
                client.send(GOOD.tobytes())  # good audio before the bad frame
            client.send(then)
        got_code, reason = _close_of(client)
    assert got_code == code and words in reason, (got_code, reason)
    assert len(reason.encode()) <= 123
    # The next client streams as if nothing happened; audio that came before the bad frame was kept.
    assert _stream(source.url, GOOD)[0] == CLOSE_END
    kept = 2 if then and case != "bad opus packet" else 1
    assert np.array_equal(_received(source), np.tile(GOOD, kept))


def test_a_second_client_is_refused_while_one_streams(source: WebSocketInput) -> None:
    chunks = source.chunks()
    with connect(source.url) as first:
        first.send(json.dumps(PCM16K))
        first.send(GOOD.tobytes())
        head = next(chunks)  # the first stream is being received: it holds the slot
        with connect(source.url) as second:
            assert _close_of(second) == (CLOSE_BUSY, "another client is streaming: one stream at a time, "
                                                     "try again later")
        first.send(GOOD.tobytes())
        first.send(json.dumps({"end": True}))
        assert _close_of(first)[0] == CLOSE_END
    rest = list(chunks)
    assert np.array_equal(np.concatenate([head, *rest]), np.tile(GOOD, 2))
    # After the end, the capture is over: a late client is told so instead of streaming into nothing.
    with connect(source.url) as late:
        assert _close_of(late) == (CLOSE_GOING_AWAY, "the capture has ended")


def test_a_stream_cut_off_without_the_end_continues_with_the_next(source: WebSocketInput) -> None:
    _stream(source.url, GOOD, end=False)  # the phone lost the network
    assert _stream(source.url, GOOD)[0] == CLOSE_END
    assert np.array_equal(_received(source), np.tile(GOOD, 2))


def test_the_token_is_checked_at_the_handshake(budget_speech: Any) -> None:
    with WebSocketInput(WebSocketOptions(port=0, token="s3cret")) as ws_input:
        for url, headers in ((ws_input.url, None), (ws_input.url + "/?token=nope", None),
                             (ws_input.url, {"Authorization": "Bearer nope"})):
            with pytest.raises(InvalidStatus) as refused:
                connect(url, additional_headers=headers)
            assert refused.value.response.status_code == 401
            assert b"Authorization: Bearer TOKEN or ?token=TOKEN" in refused.value.response.body
        assert _stream(ws_input.url, GOOD, end=False,
                       additional_headers={"Authorization": "Bearer s3cret"}) == (0, "")
        assert _stream(ws_input.url + "/audio?token=s3cret", GOOD)[0] == CLOSE_END
        assert np.array_equal(_received(ws_input), np.tile(GOOD, 2))


def test_a_client_that_sends_no_header_is_closed() -> None:
    with WebSocketInput(WebSocketOptions(port=0, header_timeout=0.2)) as ws_input:
        with connect(ws_input.url) as client:
            assert _close_of(client) == (CLOSE_POLICY, "no format header within 0.2 s")
        assert _stream(ws_input.url, GOOD)[0] == CLOSE_END


def test_closing_the_input_ends_the_chunks_and_the_stream(source: WebSocketInput) -> None:
    chunks = source.chunks()
    with connect(source.url) as client:
        client.send(json.dumps(PCM16K))
        client.send(GOOD.tobytes())
        next(chunks)
        source.close()  # Ctrl-C on the edge
        assert _close_of(client) == (CLOSE_GOING_AWAY, "the edge agent is stopping")
    list(chunks)  # ends instead of waiting for more


def test_a_slow_recogniser_holds_the_client_back_and_nothing_is_dropped(budget_speech: Any) -> None:
    stalled = threading.Event()

    class Watch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "holding the client back" in record.getMessage():
                stalled.set()

    watch = Watch(logging.ERROR)
    logger = logging.getLogger("meetmem.edge.websocket_input")
    logger.addHandler(watch)
    try:
        with WebSocketInput(WebSocketOptions(port=0, max_queue_seconds=0.2)) as ws_input:
            sender = threading.Thread(target=_stream, args=(ws_input.url, budget_speech.samples))
            sender.start()
            assert stalled.wait(10), "the queue never filled"
            got = _received(ws_input)  # the recogniser catches up
            sender.join(10)
            assert ws_input.stalls >= 1
    finally:
        logger.removeHandler(watch)
    assert np.array_equal(got, budget_speech.samples)


@pytest.mark.parametrize(("spec", "expected"), [
    ("ws://127.0.0.1:9000", ("127.0.0.1", 9000)),
    ("ws://0.0.0.0:8765/", ("0.0.0.0", 8765)),
    ("ws", ("127.0.0.1", 8765)),
    ("ws://localhost", ("localhost", 8765)),
])
def test_ws_addresses(spec: str, expected: tuple[str, int]) -> None:
    assert parse_ws_address(spec) == expected


@pytest.mark.parametrize(("spec", "words"), [("wss://phone:1", "TLS proxy"), ("ws://:80", "ws://HOST:PORT"),
                                             ("ws://host:99999", "bad port")])
def test_bad_ws_addresses_are_named(spec: str, words: str) -> None:
    with pytest.raises(AudioError, match=words):
        parse_ws_address(spec)


def test_a_port_in_use_is_a_clear_error(source: WebSocketInput) -> None:
    with pytest.raises(AudioError, match="cannot listen"):
        WebSocketInput(WebSocketOptions(port=source.port)).start()


@pytest.mark.model
def test_a_streamed_sentence_reaches_the_outbox(tiny_asr: Any, budget_speech: Any, tmp_path: Path) -> None:
    silence = np.zeros(16000, np.int16)
    samples = np.concatenate([silence, budget_speech.samples, silence, silence])
    with WebSocketInput(WebSocketOptions(port=0)) as ws_input, Outbox(tmp_path / "o.db") as outbox:
        sender = threading.Thread(target=_stream, args=(ws_input.url, samples))
        sender.start()
        agent = CaptureAgent(tiny_asr, outbox, CaptureOptions(meeting_id="m", language="en"))
        status = agent.run(ws_input.chunks(), source="live:ws", live=True)
        sender.join(10)
        stored = outbox.pending(10)
    assert status.segments == len(stored) == 1
    text = stored[0].text.lower()
    assert "budget" in text and "march" in text, text
    start, end = budget_speech.bounds
    assert abs(stored[0].start - (1.0 + start)) < 0.5 and abs(stored[0].end - (1.0 + end)) < 0.6




@pytest.mark.model
def test_edge_run_takes_a_phone_stream_to_the_cloud(serve_factory: Any, meetmem_cli: Any, budget_speech: Any,
                                                    tmp_path: Path, blocked_cli: list[str]) -> None:
    """`meetmem edge run --input ws://127.0.0.1:0` with the cloud's packages blocked: a token-checked stream
    ends with {"end": true}, the command returns once the cloud has the segment."""
    serve = serve_factory()
    serve.start()
    token = meetmem_cli("token", "create", "--tenant", "acme", db=serve.db).stdout.strip()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MEETMEM_WS_TOKEN": "phone-secret"}
    proc = subprocess.Popen([*blocked_cli, "edge", "run", "phone", "--input", "ws://127.0.0.1:0",
                             "--cloud", serve.url, "--token", token, "--outbox",
                             str(tmp_path / "outbox.db"), "--model", "tiny.en", "--language", "en", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr or ()], daemon=True)
    reader.start()
    try:
        url = None
        while url is None:
            line = lines.get(timeout=120)
            match = re.search(r"listening for an audio stream on (ws://\S+)", line)
            url = match.group(1) if match else None
        silence = np.zeros(16000, np.int16)
        samples = np.concatenate([silence, budget_speech.samples, silence, silence])
        with pytest.raises(InvalidStatus):
            connect(url)  # no token
        assert _stream(url, samples, additional_headers={"Authorization": "Bearer phone-secret"})[0] == CLOSE_END
        proc.wait(timeout=120)
        out = proc.stdout.read() if proc.stdout else ""  # a few hundred bytes: it could not block the process
    finally:
        proc.kill()
        proc.wait()
        reader.join(10)  # the pipe is at its end once the process has gone
        for pipe in (proc.stdout, proc.stderr):
            if pipe:
                pipe.close()
    assert proc.returncode == 0, list(lines.queue)
    report = json.loads(out)
    assert report["segments"] == report["sent"] == 1 and report["pending"] == 0
    rows = httpx.get(f"{serve.url}/v1/meetings/phone/segments", headers={"Authorization": f"Bearer {token}"},
                     timeout=30).json()
    assert len(rows) == 1 and "budget" in rows[0]["text"].lower(), rows
