"""Brilliant Labs Frame glasses as the edge's microphone, caption display and push-to-talk button.

Built on Brilliant's own packages (`pip install 'meetmem[frame]'`): `frame-ble` is the Bluetooth LE link,
`frame-msg` the message layer on top of it, with the Lua libraries the glasses run. On connecting, the
host uploads those libraries and a small app (`frame_app.FRAME_APP_LUA`) and starts it. The app then

- streams the microphone as frame-msg audio packets (`0x05` + PCM bytes, `0x06` when the stream ends:
  `frame_msg.RxAudio` on this side), signed little-endian PCM at 8 or 16 kHz, 8 or 16 bit;
- sends `0x09` for each tap on the temple (`frame_msg.RxTap` groups them into 1, 2, 3 ... taps);
- draws each `frame_msg.TxPlainText` it receives on code `0x0a`, one line per `\\n`, 60 px apart;
- starts and stops the microphone and the taps on a `frame_msg.TxCode` (1 or 0) on `0x30` and `0x10`.

Bluetooth stays behind one seam, `FrameTransport`: the surface of `frame_ble.FrameBle` this module and
`frame_msg.FrameMsg` use. The real one is `FrameBle` itself; `meetmem.edge.frame_sim.SimulatedFrame` is a
`FrameBle` whose radio is a simulated pair of glasses speaking the same bytes, so everything above the radio
(FrameMsg's dispatch, RxAudio, RxTap, TxPlainText, frame-ble's chunking and flow control) runs for real in
the tests.

The Bluetooth side is asyncio; the edge is synchronous (an iterator of chunks, a blocking question). A
`FrameGlasses` runs its own event loop on a thread and hands audio and taps over through thread-safe queues.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .errors import AudioError, EdgeError, ModelUnavailable
from .frame_app import (
    AUDIO_SUBS_MSG,
    FRAME_APP_NAME,
    FRAME_LUA_LIBS,
    TAP_SUBS_MSG,
    TEXT_MSG,
    frame_app_source,
)
from .frame_display import DisplayLayout, answer_screen, caption_screen
from .vad import SAMPLE_RATE

log = logging.getLogger(__name__)

FRAME_INSTALL_HINT = "pip install 'meetmem[frame]'"
#: The name audio from the glasses goes by (`source_id`, error messages).
SOURCE_NAME = "frame"

class FrameTransport(Protocol):
    """The Bluetooth link to the glasses: the part of `frame_ble.FrameBle` used here and by FrameMsg."""

    async def connect(self, name: str | None = None, timeout: float = 10, *,
                      print_response_handler: Callable[[str], Any],
                      data_response_handler: Callable[[bytes], Any],
                      disconnect_handler: Callable[[], None]) -> Any: ...

    async def disconnect(self) -> None: ...

    def is_connected(self) -> bool: ...

    async def send_break_signal(self, show_me: bool = False) -> None: ...

    async def send_reset_signal(self, show_me: bool = False) -> None: ...

    async def send_lua(self, string: str, show_me: bool = False, await_print: bool = False) -> Any: ...

    async def upload_file_from_string(self, content: str, frame_file_path: str = "main.lua") -> None: ...

    async def send_message(self, msg_code: int, payload: bytes, show_me: bool = False) -> None: ...


@dataclass(frozen=True, slots=True)
class FrameOptions:
    """How to reach and drive the glasses.

    Args:
        name: the Bluetooth name to connect to (`Frame 4F`: the two hex digits Frame shows when it wakes);
            None connects to the first Frame found.
        sample_rate: the microphone's rate, 8000 or 16000. 8 kHz 16-bit (16 kB/s) is what Brilliant's
            examples stream; 16 kHz 16-bit needs 32 kB/s of the ~40 kB/s Frame's Bluetooth manages in good
            conditions, so audio may stutter. Either way the edge gets 16 kHz.
        bit_depth: 8 or 16 bits per sample.
        scan_timeout: seconds to look for the glasses.
        setup: upload frame-msg's Lua libraries and the app before starting it (about 10 s); False when the
            glasses already hold this version of them.
        tap_threshold: taps closer together than this (seconds) count as one double or triple tap.
        queue_seconds: audio held for a slow consumer before the oldest is reported lost.
    """

    name: str | None = None
    sample_rate: int = 8000
    bit_depth: int = 16
    scan_timeout: float = 10.0
    setup: bool = True
    tap_threshold: float = 0.3
    queue_seconds: float = 60.0
    layout: DisplayLayout = DisplayLayout()

    def __post_init__(self) -> None:
        if self.sample_rate not in (8000, 16000) or self.bit_depth not in (8, 16):
            raise ValueError("Frame's microphone records at 8000 or 16000 Hz, 8 or 16 bit")


class FramePcmDecoder:
    """Frame's microphone bytes (signed PCM, little-endian when 16-bit) to 16 kHz mono int16.

    8-bit samples are widened (`<< 8`); 8 kHz is resampled by FFmpeg's resampler through PyAV, as
    `audio.read_file` resamples files, keeping its filter state across packets so chunk edges leave no
    clicks. An odd byte of a 16-bit stream (a packet cut mid-sample) is carried to the next packet.
    """

    def __init__(self, sample_rate: int, bit_depth: int) -> None:
        self.sample_rate = sample_rate
        self.bit_depth = bit_depth
        self._carry = b""
        self._resampler: Any = None
        if sample_rate != SAMPLE_RATE:
            from .audio import import_av

            self._av = import_av()
            self._resampler = self._av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)

    def decode(self, data: bytes) -> np.ndarray:
        """The 16 kHz samples one packet adds (may be empty while the resampler fills)."""
        if self.bit_depth == 8:
            samples = np.frombuffer(data, dtype=np.int8).astype(np.int16) << 8
        else:
            data = self._carry + data
            usable = len(data) - len(data) % 2
            self._carry = data[usable:]
            samples = np.frombuffer(data[:usable], dtype="<i2").astype(np.int16)
        return self._resample(samples)

    def flush(self) -> np.ndarray:
        """What the resampler still holds at the end of the stream."""
        if self._carry:
            log.warning("%s: dropped a trailing odd byte (the stream ended mid-sample)", SOURCE_NAME)
            self._carry = b""
        if self._resampler is None:
            return np.zeros(0, np.int16)
        return self._collect(self._resampler.resample(None))

    def _resample(self, samples: np.ndarray) -> np.ndarray:
        if self._resampler is None or not len(samples):
            return samples
        frame = self._av.AudioFrame.from_ndarray(samples.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = self.sample_rate
        return self._collect(self._resampler.resample(frame))

    @staticmethod
    def _collect(frames: list[Any]) -> np.ndarray:
        parts = [f.to_ndarray().reshape(-1).astype(np.int16, copy=False) for f in frames]
        return np.concatenate(parts) if parts else np.zeros(0, np.int16)


_END = object()  # the audio stream's end: the glasses' final packet
_GONE = object()  # the Bluetooth link dropped


class FrameGlasses:
    """A connection to one pair of Frame glasses: audio in, taps in, text out.

    Args:
        options: which glasses and how to record.
        transport: the Bluetooth link; default a real `frame_ble.FrameBle` (tests pass a `SimulatedFrame`).

    Raises:
        ModelUnavailable: frame-msg / frame-ble are not installed.
    """

    def __init__(self, options: FrameOptions = FrameOptions(), transport: FrameTransport | None = None) -> None:
        try:
            import frame_msg
        except ImportError as exc:
            raise ModelUnavailable("frame-msg", f"the Frame glasses need Brilliant Labs' packages ({exc})",
                                   hint=FRAME_INSTALL_HINT) from exc
        self.options = options
        self._frame_msg = frame_msg
        self.frame: Any = None
        self._transport = transport
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="meetmem-frame", daemon=True)
        self._audio: queue.Queue[Any] = queue.Queue()
        self._taps: queue.Queue[Any] = queue.Queue()
        self._display_wanted: str | None = None
        self._display_event: asyncio.Event | None = None
        self._send_lock: asyncio.Lock | None = None
        self._sources: tuple[asyncio.Queue[Any], ...] = ()
        self._display_sent = threading.Condition()
        self._display_busy = False
        self.disconnected = threading.Event()
        self.lost_audio = 0  # packets dropped because the consumer fell `queue_seconds` behind
        self._held_bytes = 0
        self._closing = False
        self._held_lock = threading.Lock()

    # -- connection -------------------------------------------------------------------------------------

    def connect(self) -> FrameGlasses:
        """Find the glasses, set them up and start the app; returns self (usable as a context manager)."""
        self._thread.start()
        try:
            self._call(self._connect(), timeout=self.options.scan_timeout + 120)
        except EdgeError:
            self.close()
            raise
        except Exception as exc:  # frame-ble raises bare Exceptions: none found, refused, no answer
            self.close()
            raise AudioError(SOURCE_NAME, f"cannot connect to the Frame glasses ({exc}); check that Bluetooth is "
                             "on (BlueZ running) and the glasses are awake, charged and close by") from exc
        return self

    async def _connect(self) -> None:
        frame_msg = self._frame_msg
        self.frame = frame_msg.FrameMsg()
        if self._transport is not None:
            self.frame.ble = self._transport
        ble = self.frame.ble
        # FrameMsg.connect() takes no device name and no disconnect handler: do its steps here with both.
        await ble.connect(self.options.name, self.options.scan_timeout,
                          print_response_handler=lambda text: log.debug("frame: %s", text),
                          data_response_handler=self.frame._handle_data_response,
                          disconnect_handler=self._on_disconnect)
        await ble.send_break_signal()  # stop an app already running
        await ble.send_reset_signal()  # a fresh Lua VM
        await ble.send_break_signal()  # stop a main.lua that auto-started
        if self.options.setup:
            await self.frame.upload_stdlua_libs(lib_names=list(FRAME_LUA_LIBS))
            await ble.upload_file_from_string(frame_app_source(self.options), f"{FRAME_APP_NAME}.lua")
        await self.frame.start_frame_app(FRAME_APP_NAME)  # returns on the app's first print
        self._rx_audio = frame_msg.RxAudio(streaming=True)
        self._rx_tap = frame_msg.RxTap(threshold=self.options.tap_threshold)
        self._sources = (await self._rx_audio.attach(self.frame), await self._rx_tap.attach(self.frame))
        self._pump(self._sources[0], self._audio, audio=True)
        self._pump(self._sources[1], self._taps)
        self._display_event = asyncio.Event()
        self._send_lock = asyncio.Lock()
        self._loop.create_task(self._display_loop())

    def _pump(self, source: asyncio.Queue[Any], target: queue.Queue[Any], *, audio: bool = False) -> None:
        """Move what an Rx handler queues (bytes, tap counts, None at a stream's end) to a thread queue.

        Audio beyond `queue_seconds` behind the consumer is dropped and counted, never held without bound.
        """
        bound = self.options.queue_seconds * self.options.sample_rate * self.options.bit_depth / 8

        async def pump() -> None:
            while True:
                item = await source.get()
                if audio and isinstance(item, bytes):
                    with self._held_lock:
                        if self._held_bytes > bound:
                            self.lost_audio += 1
                            continue
                        self._held_bytes += len(item)
                target.put(_END if item is None else item)

        self._loop.create_task(pump())

    def _on_disconnect(self) -> None:
        if not self._closing:
            log.warning("the Frame glasses disconnected")
        self.disconnected.set()
        self._loop.call_soon_threadsafe(lambda: self._loop.create_task(self._end_streams()))

    async def _end_streams(self) -> None:
        """Queue the link's end behind the packets that came before it: RxAudio hands each packet on
        through a task of its own, so give those a moment to run first."""
        await asyncio.sleep(0.05)
        for source in self._sources:
            source.put_nowait(_GONE)

    def close(self) -> None:
        """Stop the app (the glasses go quiet and blank) and disconnect."""
        self._closing = True
        if self._thread.is_alive():
            if self.frame is not None and not self.disconnected.is_set():
                try:
                    self._call(self._close(), timeout=10)
                except Exception as exc:  # closing a link that is already failing: nothing left to save
                    log.debug("closing the Frame link: %s", exc)
            try:
                self._call(self._cancel_tasks(), timeout=5)
            finally:
                self._loop.call_soon_threadsafe(self._loop.stop)
                self._thread.join(timeout=5)
        if not self._thread.is_alive() and not self._loop.is_closed():
            self._loop.close()

    async def _cancel_tasks(self) -> None:
        """Cancel this loop's tasks (the pumps, the display, RxTap's timers) so none is left pending."""
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _close(self) -> None:
        for rx in (getattr(self, "_rx_audio", None), getattr(self, "_rx_tap", None)):
            if rx is not None:
                rx.detach(self.frame)
        await self.frame.stop_frame_app(reset=True)
        await self.frame.disconnect()

    def __enter__(self) -> FrameGlasses:
        return self.connect() if not self._thread.is_alive() else self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, coroutine: Awaitable[Any], *, timeout: float | None = 30.0) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coroutine, self._loop)  # type: ignore[arg-type]
        return future.result(timeout)

    # -- microphone ---------------------------------------------------------------------------------------

    def start_audio(self) -> None:
        """Start the microphone stream."""
        self._send_code(AUDIO_SUBS_MSG, 1)

    def stop_audio(self) -> None:
        """Stop the microphone: the glasses send what they buffered, then the stream's final packet."""
        if not self.disconnected.is_set():
            self._send_code(AUDIO_SUBS_MSG, 0)

    def _send_code(self, msg_code: int, value: int) -> None:
        if self.disconnected.is_set():
            raise AudioError(SOURCE_NAME, "the glasses disconnected")
        self._call(self._send(msg_code, self._frame_msg.TxCode(value=value).pack()))

    async def _send(self, msg_code: int, payload: bytes) -> None:
        """One message at a time: frame-ble waits for one acknowledgement per chunk and cannot tell two
        messages' acknowledgements apart, so interleaved sends would stall."""
        assert self._send_lock is not None
        async with self._send_lock:
            await self.frame.send_message(msg_code, payload)

    def audio_chunks(self, *, start: bool = True) -> Iterator[np.ndarray]:
        """16 kHz mono int16 chunks (one per Bluetooth packet) until the stream ends or the link drops.

        The end of the stream (after `stop_audio`) and a lost connection both end the iteration without an
        error, after every sample received; `disconnected` tells which. Closing the iterator early stops
        the microphone.
        """
        decoder = FramePcmDecoder(self.options.sample_rate, self.options.bit_depth)
        if start:
            self.start_audio()
        ended = False
        try:
            while True:
                item = self._audio.get()
                if item is _END or item is _GONE:
                    ended = True
                    break
                with self._held_lock:
                    self._held_bytes -= len(item)
                samples = decoder.decode(item)
                if len(samples):
                    yield samples
            tail = decoder.flush()
            if len(tail):
                yield tail
            if self.lost_audio:
                log.error("%d audio packets from the glasses were dropped: the recogniser fell %.0f s behind",
                          self.lost_audio, self.options.queue_seconds)
        finally:
            if not ended:
                self.stop_audio()

    # -- taps -----------------------------------------------------------------------------------------------

    def listen_for_taps(self, enabled: bool = True) -> None:
        """Ask the glasses to report taps (each tap, or a quick run of them, arrives as one count)."""
        self._send_code(TAP_SUBS_MSG, 1 if enabled else 0)

    def next_tap(self, timeout: float | None = None) -> int | None:
        """The next tap count, or None after `timeout` seconds or when the link drops."""
        try:
            item = self._taps.get(timeout=timeout)
        except queue.Empty:
            return None
        return None if item is _GONE else int(item)

    # -- display ----------------------------------------------------------------------------------------------

    def show_lines(self, lines: list[str]) -> None:
        """Replace what the display shows. Never blocks on Bluetooth: when texts come faster than the link
        takes them, only the latest is sent (a caption a second old is worth nothing)."""
        with self._display_sent:
            self._display_wanted = "\n".join(lines)
            self._display_busy = True
        self._loop.call_soon_threadsafe(self._wake_display)

    def show_caption(self, text: str) -> None:
        """The live caption line: the latest words of what was just said."""
        self.show_lines(caption_screen(text, self.options.layout))

    def show_answer(self, text: str) -> None:
        """An answer, as much of it as one screen holds."""
        self.show_lines(answer_screen(text, self.options.layout))

    def wait_displayed(self, timeout: float = 10.0) -> bool:
        """Wait until the latest text has reached the glasses (before closing, say)."""
        with self._display_sent:
            return self._display_sent.wait_for(lambda: not self._display_busy, timeout)

    def _wake_display(self) -> None:
        if self._display_event is not None:
            self._display_event.set()

    async def _display_loop(self) -> None:
        assert self._display_event is not None
        while True:
            await self._display_event.wait()
            self._display_event.clear()
            with self._display_sent:
                text, self._display_wanted = self._display_wanted, None
            if text is not None and not self.disconnected.is_set():
                message = self._frame_msg.TxPlainText(text=text, spacing=self.options.layout.spacing)
                try:
                    await self._send(TEXT_MSG, message.pack())
                except Exception as exc:  # a display that fails must not stop the capture
                    log.warning("could not show text on the glasses: %s", exc)
            with self._display_sent:
                if self._display_wanted is None:
                    self._display_busy = False
                    self._display_sent.notify_all()


def frame_chunks(glasses: FrameGlasses) -> Iterator[np.ndarray]:
    """`edge run --input frame`: the glasses' microphone as the capture's chunks, until the link drops."""
    glasses.show_lines(["meetmem: listening"])
    yield from glasses.audio_chunks()


def record_question(glasses: FrameGlasses, *, max_seconds: float = 30.0, wait_seconds: float | None = 120.0,
                    prompt: str = "Tap to ask a question") -> np.ndarray:
    """Push-to-talk on the glasses: a tap starts the question, the next tap (or `max_seconds`) ends it.

    Returns:
        The question as float32 in [-1, 1), as `microphone.record_until` returns it.

    Raises:
        AudioError: no tap within `wait_seconds`, or the glasses disconnected.
    """
    glasses.listen_for_taps(True)
    glasses.show_lines(answer_screen(prompt, glasses.options.layout))
    if glasses.next_tap(wait_seconds) is None:
        raise AudioError(SOURCE_NAME, "no tap on the glasses" if not glasses.disconnected.is_set()
                         else "the glasses disconnected")
    glasses.show_lines(["Listening... tap when done"])
    stopped = threading.Event()

    def stop_on_tap() -> None:
        while not stopped.is_set():
            if glasses.next_tap(0.1) is not None or glasses.disconnected.is_set():
                break
        if not stopped.is_set():
            stopped.set()
            glasses.stop_audio()

    watcher = threading.Thread(target=stop_on_tap, name="meetmem-frame-tap", daemon=True)
    watcher.start()
    chunks: list[np.ndarray] = []
    total = 0
    for chunk in glasses.audio_chunks():  # ends at the final packet the stop brings
        chunks.append(chunk)
        total += len(chunk)
        if total >= max_seconds * SAMPLE_RATE and not stopped.is_set():
            stopped.set()
            glasses.stop_audio()
    stopped.set()
    watcher.join()
    glasses.listen_for_taps(False)
    if glasses.disconnected.is_set():
        raise AudioError(SOURCE_NAME, "the glasses disconnected during the question")
    glasses.show_lines(["Thinking..."])
    samples = np.concatenate(chunks) if chunks else np.zeros(0, np.int16)
    return samples.astype(np.float32) / 32768.0
