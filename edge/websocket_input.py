"""A WebSocket audio input: a phone app streams the glasses' audio into the capture pipeline.

`meetmem edge run --input ws://HOST:PORT` listens here and hands the capture agent the same 16 kHz mono
int16 chunks a file or the microphone gives it, so the audio goes through the same VAD, recogniser and
outbox. The server is `websockets`' threaded (sync) server: it runs beside the agent's own threads, with no
event loop to share.

Protocol (one connection is one stream; one stream at a time):

1. Connect to ``ws://HOST:PORT/`` (any path). When the edge has a token (``--ws-token`` or
   ``MEETMEM_WS_TOKEN``), send it as ``Authorization: Bearer TOKEN`` or as ``?token=TOKEN`` in the URL (a
   browser cannot set headers). A missing or wrong token is refused at the handshake with HTTP 401.
2. Send one text message, the format header, within 10 s::

       {"format": "pcm_s16le", "sample_rate": 16000, "channels": 1}

   ``format`` is ``pcm_s16le`` (raw 16-bit little-endian PCM, channels interleaved) or ``opus`` (raw Opus
   packets as an Opus encoder emits them, one per binary message; no Ogg container). ``sample_rate`` is one
   of `PCM_RATES` for PCM (anything but 16 kHz is resampled by FFmpeg's resampler, as files are) or of
   `OPUS_RATES` for Opus; ``channels`` is 1 or 2 (downmixed to mono).
3. Send the audio as binary messages: PCM frames of whole samples (20 ms frames are typical: 640 bytes at
   16 kHz mono), at most `MAX_FRAME_SECONDS` each; or one Opus packet per message.
4. The text message ``{"end": true}`` ends the meeting's audio: the edge closes with 1000 and the capture
   finishes (``edge run`` then waits for the cloud and returns). Closing the socket without it ends only
   this stream: the edge keeps listening, and the next stream continues the meeting's clock (a phone that
   lost the network reconnects). Ctrl-C on the edge stops it too.

The edge never answers with data; it closes with one of these codes and a reason saying what to fix:

* 1000 ``end of stream``: the end message was received.
* 1001 the edge is stopping, or the capture has already ended.
* 1003 an unsupported format, sample rate or channel count.
* 1007 a malformed header (not JSON, not an object), audio before the header, a PCM frame that is not a
  whole number of samples, an Opus packet that does not decode, or a text message other than the end.
* 1008 no format header within 10 s.
* 1009 a frame over the size limit.
* 1013 another client is streaming: try again when it has finished.

Whatever a stream delivered before it was closed, for any reason, stays captured. A rejected client never
stops the agent; the server keeps listening for the next one.

Backpressure: the chunks wait in a bounded queue (`WebSocketOptions.max_queue_seconds` of audio). If the
recogniser falls that far behind, the server stops reading the socket, so TCP holds the client back, and
says so in the log: nothing is dropped.
"""

from __future__ import annotations

import hmac
import json
import logging
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np

from .audio import SAMPLE_RATE, import_av
from .errors import AudioError, ModelUnavailable

log = logging.getLogger(__name__)

DEFAULT_PORT = 8765
PCM_RATES = (8000, 11025, 16000, 22050, 24000, 32000, 44100, 48000)
OPUS_RATES = (8000, 12000, 16000, 24000, 48000)
#: The longest PCM frame accepted: a second of audio (at 48 kHz stereo, 192,000 bytes).
MAX_FRAME_SECONDS = 1.0
HEADER_TIMEOUT = 10.0

CLOSE_END = 1000
CLOSE_GOING_AWAY = 1001
CLOSE_UNSUPPORTED = 1003
CLOSE_INVALID = 1007
CLOSE_POLICY = 1008
CLOSE_TOO_BIG = 1009
CLOSE_BUSY = 1013

_END = object()  # the queue's end-of-capture marker


@dataclass(frozen=True, slots=True)
class WebSocketOptions:
    """Where and how the WebSocket input listens.

    Args:
        host: the address to bind: 127.0.0.1 (default) takes streams from this machine only; 0.0.0.0
            takes a phone's stream over the LAN (set a token then: meeting audio is private).
        port: the TCP port (0: any free port; `WebSocketInput.port` says which).
        token: a shared secret the client must present; None accepts any client.
        chunk_seconds: the length of the chunks handed to the agent.
        max_queue_seconds: how much audio may wait for the recogniser before the client is held back.
        header_timeout: seconds a client has to send its format header.
    """

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    token: str | None = None
    chunk_seconds: float = 0.1
    max_queue_seconds: float = 60.0
    header_timeout: float = HEADER_TIMEOUT


def parse_ws_address(spec: str) -> tuple[str, int]:
    """The host and port of ``ws://HOST:PORT`` (``ws`` alone: 127.0.0.1 and the default port).

    Raises:
        AudioError: not a ``ws://`` address, or a bad port.
    """
    if spec == "ws":
        return "127.0.0.1", DEFAULT_PORT
    parts = urlsplit(spec)
    if parts.scheme == "wss":
        raise AudioError(spec, "wss:// is not served here: listen on ws:// and put a TLS proxy in front "
                               "if the stream crosses an untrusted network")
    if parts.scheme != "ws" or not parts.hostname:
        raise AudioError(spec, "not a WebSocket address: use ws://HOST:PORT (e.g. ws://0.0.0.0:8765)")
    try:
        port = parts.port
    except ValueError as exc:
        raise AudioError(spec, f"bad port ({exc})") from exc
    return parts.hostname, DEFAULT_PORT if port is None else port


class _Rejected(Exception):
    """A stream the edge closes: the close code and a reason the client's developer can act on."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


class _Stopping(Exception):
    """The input was closed while a stream was being received."""


class _Decoder:
    """One stream's audio, in the header's format, to 16 kHz mono int16."""

    def __init__(self, header: dict[str, Any]) -> None:
        fmt, rate, channels = header.get("format"), header.get("sample_rate"), header.get("channels", 1)
        if fmt not in ("pcm_s16le", "opus"):
            raise _Rejected(CLOSE_UNSUPPORTED, f"unsupported format {fmt!r}: use pcm_s16le or opus")
        rates = PCM_RATES if fmt == "pcm_s16le" else OPUS_RATES
        if isinstance(rate, bool) or rate not in rates:
            raise _Rejected(CLOSE_UNSUPPORTED, f"unsupported sample_rate {rate!r} for {fmt}: use one of "
                                               + ", ".join(map(str, rates)))
        if isinstance(channels, bool) or channels not in (1, 2):
            raise _Rejected(CLOSE_UNSUPPORTED, f"unsupported channels {channels!r}: send 1 (mono) or 2")
        self.format, self.rate, self.channels = fmt, int(rate), int(channels)
        # An Opus packet holds at most 120 ms; 64 KiB is far above any real one.
        self.max_bytes = int(MAX_FRAME_SECONDS * self.rate) * 2 * self.channels if fmt == "pcm_s16le" else 65536
        self._av: Any = None
        self._resampler: Any = None
        self._codec: Any = None
        if fmt == "opus" or self.rate != SAMPLE_RATE or self.channels != 1:
            self._av = import_av()
            self._resampler = self._av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
        if fmt == "opus":
            self._codec = self._av.CodecContext.create("opus", "r")
            self._codec.sample_rate = 48000  # FFmpeg's Opus decoder always gives 48 kHz
            self._codec.layout = "mono" if self.channels == 1 else "stereo"

    def feed(self, data: bytes) -> np.ndarray:
        if len(data) > self.max_bytes:
            raise _Rejected(CLOSE_TOO_BIG, f"a {len(data)}-byte frame is over the {self.max_bytes}-byte limit: "
                                           f"send at most {MAX_FRAME_SECONDS:g} s per frame (20 ms is typical)")
        if self.format == "opus":
            try:
                frames = self._codec.decode(self._av.Packet(data))
            except self._av.error.FFmpegError as exc:
                raise _Rejected(CLOSE_INVALID, "an Opus packet did not decode: send raw Opus packets, one per "
                                               "message, not an Ogg stream") from exc
            return self._resample(frames)
        if len(data) % (2 * self.channels):
            raise _Rejected(CLOSE_INVALID, f"a {len(data)}-byte frame is not whole samples: pcm_s16le frames "
                                           f"are multiples of {2 * self.channels} bytes")
        samples = np.frombuffer(data, dtype="<i2").astype(np.int16)
        if self._resampler is None:
            return samples
        frame = self._av.AudioFrame.from_ndarray(samples.reshape(1, -1), format="s16",
                                                 layout="mono" if self.channels == 1 else "stereo")
        frame.sample_rate = self.rate
        return self._resample([frame])

    def flush(self) -> np.ndarray:
        """What the resampler still holds at the end of the stream."""
        return self._resample(None) if self._resampler is not None else np.zeros(0, np.int16)

    def _resample(self, frames: Any) -> np.ndarray:
        out = [o.to_ndarray().reshape(-1).astype(np.int16, copy=False)
               for frame in ([None] if frames is None else frames) for o in self._resampler.resample(frame)]
        return np.concatenate(out) if out else np.zeros(0, np.int16)


def _parse_header(message: str | bytes) -> dict[str, Any]:
    if isinstance(message, bytes):
        raise _Rejected(CLOSE_INVALID, 'audio before the format header: send {"format": "pcm_s16le", '
                                       '"sample_rate": 16000, "channels": 1} first')
    try:
        header = json.loads(message)
    except ValueError as exc:
        raise _Rejected(CLOSE_INVALID, f"the format header is not JSON ({exc.__class__.__name__})") from exc
    if not isinstance(header, dict):
        raise _Rejected(CLOSE_INVALID, 'the format header must be a JSON object: {"format": "pcm_s16le", ...}')
    return header


class WebSocketInput:
    """A WebSocket server whose streams become one capture's audio chunks.

    Use as a context manager (or `start` / `close`); iterate `chunks()` from the capture.

    Raises (from `start`):
        ModelUnavailable: the `websockets` package is not installed.
        AudioError: the address cannot be bound (in use, not this machine's).
    """

    def __init__(self, options: WebSocketOptions | None = None) -> None:
        self.options = options or WebSocketOptions()
        self.stalls = 0  # times the recogniser fell `max_queue_seconds` behind and the client was held back
        self.received_samples = 0  # 16 kHz samples received over every stream
        slots = max(1, int(self.options.max_queue_seconds / self.options.chunk_seconds))
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=slots)
        self._chunk_samples = max(1, int(SAMPLE_RATE * self.options.chunk_seconds))
        self._lock = threading.Lock()
        self._active: Any = None
        self._ended = False
        self._closed = threading.Event()
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port actually bound (useful with port 0)."""
        if self._server is None:
            raise RuntimeError("the WebSocket input is not started")
        return int(self._server.socket.getsockname()[1])

    @property
    def url(self) -> str:
        return f"ws://{self.options.host}:{self.port}"

    def start(self) -> WebSocketInput:
        try:
            from websockets.sync.server import serve
        except ImportError as exc:
            raise ModelUnavailable("websockets", "the WebSocket input is not available") from exc
        limit = int(MAX_FRAME_SECONDS * max(PCM_RATES)) * 2 * 2
        try:
            # max_size is only the transport's guard (4x the largest valid frame); the decoder names the
            # real limit in its close reason.
            self._server = serve(self._serve_client, self.options.host, self.options.port,
                                 process_request=self._check_token, max_size=4 * limit)
        except OSError as exc:
            raise AudioError(f"ws://{self.options.host}:{self.options.port}",
                             f"cannot listen ({exc.strerror or exc})") from exc
        self._thread = threading.Thread(target=self._server.serve_forever, name="meetmem-ws-input", daemon=True)
        self._thread.start()
        log.info("listening for audio streams on %s", self.url)
        return self

    def close(self) -> None:
        """Stop listening, close a stream in progress (1001) and end `chunks()`."""
        self._closed.set()
        with self._lock:
            self._ended = True
            active = self._active
        if active is not None:
            active.close(CLOSE_GOING_AWAY, "the edge agent is stopping")
        if self._server is not None:
            self._server.shutdown()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        try:
            self._queue.put_nowait(_END)
        except queue.Full:  # nobody is waiting on an empty queue, so nobody needs the marker now
            pass

    def __enter__(self) -> WebSocketInput:
        return self.start() if self._server is None else self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def chunks(self) -> Iterator[np.ndarray]:
        """16 kHz mono int16 chunks of every stream in turn, until a client sends the end or `close()`."""
        while True:
            item = self._queue.get()
            if item is _END:
                return
            yield item

    # -- the server's side: each connection runs in its own thread -------------------------------------

    def _check_token(self, connection: Any, request: Any) -> Any:
        token = self.options.token
        if token is None:
            return None
        auth = request.headers.get("Authorization", "")
        if auth[:7].lower() == "bearer ":
            given = auth[7:].strip()
        else:
            given = parse_qs(urlsplit(request.path).query).get("token", [""])[0]
        if given and hmac.compare_digest(given.encode(), token.encode()):
            return None
        log.warning("refused an audio stream from %s: missing or wrong token", _peer(connection))
        return connection.respond(HTTPStatus.UNAUTHORIZED,
                                  "missing or wrong token: send Authorization: Bearer TOKEN or ?token=TOKEN\n")

    def _serve_client(self, connection: Any) -> None:
        with self._lock:
            refusal = ((CLOSE_GOING_AWAY, "the capture has ended") if self._ended else
                       (CLOSE_BUSY, "another client is streaming: one stream at a time, try again later")
                       if self._active is not None else None)
            if refusal is None:
                self._active = connection
        if refusal is not None:
            log.warning("refused an audio stream from %s: %s", _peer(connection), refusal[1])
            connection.close(*refusal)
            return
        try:
            self._receive(connection)
        finally:
            self._release(connection)

    def _receive(self, connection: Any) -> None:
        from websockets.exceptions import ConnectionClosed

        peer = _peer(connection)
        pending: list[np.ndarray] = []
        decoder: _Decoder | None = None
        try:
            try:
                header = connection.recv(timeout=self.options.header_timeout)
            except TimeoutError:
                raise _Rejected(CLOSE_POLICY, f"no format header within {self.options.header_timeout:g} s") from None
            decoder = _Decoder(_parse_header(header))
            log.info("audio stream from %s: %s, %d Hz, %d channel(s)", peer, decoder.format, decoder.rate,
                     decoder.channels)
            for message in connection:
                if isinstance(message, str):
                    if _is_end(message):
                        self._push(pending, decoder.flush(), final=True)
                        decoder = None
                        self._finish()
                        self._release(connection)
                        connection.close(CLOSE_END, "end of stream")
                        return
                    raise _Rejected(CLOSE_INVALID, 'unexpected text message: send audio as binary messages, '
                                                   'and {"end": true} to finish')
                self._push(pending, decoder.feed(message))
            log.info("the audio stream from %s closed without an end message; waiting for the next one", peer)
        except _Rejected as exc:
            log.warning("closed the audio stream from %s (%d): %s", peer, exc.code, exc.reason)
            self._keep(pending, decoder)
            decoder = None  # kept: the resampler is flushed once
            self._release(connection)  # before the close: a client that reconnects at once is not "busy"
            connection.close(exc.code, _fit_reason(exc.reason))
        except _Stopping:
            connection.close(CLOSE_GOING_AWAY, "the edge agent is stopping")
        except ConnectionClosed as exc:
            log.info("the audio stream from %s was cut off (%s); waiting for the next one", peer, exc)
        finally:
            self._keep(pending, decoder)

    def _keep(self, pending: list[np.ndarray], decoder: _Decoder | None) -> None:
        """Queue what the stream still holds: what arrived before any failure is good audio."""
        try:
            self._push(pending, decoder.flush() if decoder is not None else np.zeros(0, np.int16), final=True)
        except _Stopping:
            pass

    def _release(self, connection: Any) -> None:
        """Free the one-stream slot, once this connection's audio is all queued."""
        with self._lock:
            if self._active is connection:
                self._active = None

    def _push(self, pending: list[np.ndarray], samples: np.ndarray, *, final: bool = False) -> None:
        """Queue the stream's samples in `chunk_seconds` chunks (the rest too when `final`)."""
        if len(samples):
            pending.append(samples)
            self.received_samples += len(samples)
        held = sum(len(p) for p in pending)
        if held < self._chunk_samples and not (final and held):
            return
        joined = np.concatenate(pending)
        pending.clear()
        cut = len(joined) if final else len(joined) - len(joined) % self._chunk_samples
        for at in range(0, cut, self._chunk_samples):
            self._put(joined[at : min(at + self._chunk_samples, cut)])
        if cut < len(joined):
            pending.append(joined[cut:])

    def _put(self, item: Any) -> None:
        warned = False
        while True:
            if self._closed.is_set():
                raise _Stopping
            try:
                self._queue.put(item, timeout=0.5)
                return
            except queue.Full:
                if not warned:
                    self.stalls += 1
                    warned = True
                    log.error("the recogniser is %g s of audio behind the WebSocket stream; holding the client "
                              "back until it catches up (nothing is dropped)", self.options.max_queue_seconds)

    def _finish(self) -> None:
        with self._lock:
            self._ended = True
        self._put(_END)


def _is_end(message: str) -> bool:
    try:
        parsed = json.loads(message)
    except ValueError:
        return False
    return isinstance(parsed, dict) and parsed.get("end") is True


def _fit_reason(reason: str) -> str:
    """A close reason fits in 123 bytes of UTF-8 (RFC 6455, 5.5.1)."""
    encoded = reason.encode()
    return reason if len(encoded) <= 123 else encoded[:120].decode(errors="ignore") + "..."


def _peer(connection: Any) -> Any:
    """The client's address for the log. A client that sent its audio and hung up before its handler ran
    has a closed socket (getpeername fails) but its messages are still buffered and must be read."""
    try:
        return connection.remote_address
    except OSError:
        return "a client that has already disconnected"
