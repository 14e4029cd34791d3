"""A simulated pair of Frame glasses behind `frame_ble.FrameBle`'s radio, for tests and demos without them.

`SimulatedFrame` is a `FrameBle` whose Bluetooth writes and notifications go to a Python stand-in for the
glasses instead of bleak: everything above the radio (frame-ble's message chunking and acknowledgements,
FrameMsg's dispatch, RxAudio, RxTap) runs unchanged. The stand-in does what the glasses would with the Lua
`frame_glasses` uploads, byte for byte as frame-msg's Lua libraries do it:

- Lua strings: files written with `frame.file.open / f:write / f:close` are kept (`files`), `require` starts
  the uploaded app, which prints once running;
- data messages (`0x01` + code + size + payload, in MTU-sized chunks) are accumulated and acknowledged as
  `data.lua` does, then parsed as `plain_text.lua` and `code.lua` parse them: text is drawn on `screens`,
  codes start and stop the microphone and the taps;
- the microphone plays `speech` (16 kHz int16) at the rate and bit depth the uploaded app asks for, as
  `audio.lua` sends it (`0x05` + PCM up to the MTU, `0x06` at the end); `tap()` sends `tap.lua`'s `0x09`.

Importing this module needs frame-ble (`pip install 'meetmem[frame]'`); nothing in the edge's commands
imports it.
"""

from __future__ import annotations

import asyncio
import re
import threading
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from frame_ble import FrameBle

from .frame_app import (
    AUDIO_DATA_FINAL_MSG,
    AUDIO_DATA_NON_FINAL_MSG,
    AUDIO_SUBS_MSG,
    TAP_MSG,
    TAP_SUBS_MSG,
    TEXT_MSG,
)
from .frame_display import LINE_HEIGHT
from .vad import SAMPLE_RATE

_DATA = 0x01  # first byte of a data packet (as opposed to Lua text) in either direction
_PALETTE = ("VOID", "WHITE", "GREY", "RED", "PINK", "DARKBROWN", "BROWN", "ORANGE", "YELLOW", "DARKGREEN", "GREEN",
            "LIGHTGREEN", "NIGHTBLUE", "SEABLUE", "SKYBLUE", "CLOUDBLUE")


@dataclass(frozen=True, slots=True)
class PlainText:
    """A TxPlainText message as `plain_text.lua`'s `parse_plain_text` reads it."""

    x: int
    y: int
    palette_offset: int
    color: str
    spacing: int
    string: str


@dataclass(frozen=True, slots=True)
class DrawnLine:
    """One `frame.display.text` call of the app."""

    text: str
    x: int
    y: int
    color: str
    spacing: int


def parse_plain_text(block: bytes) -> PlainText:
    """`plain_text.lua`'s parser, in Python."""
    return PlainText(x=block[0] << 8 | block[1], y=block[2] << 8 | block[3], palette_offset=block[4],
                     color=_PALETTE[block[4] % 16], spacing=block[5], string=block[6:].decode("utf-8"))


class SimulatedFrame(FrameBle):
    """Frame glasses in software, speaking frame-ble's and frame-msg's wire format.

    Args:
        speech: what the wearer's microphone hears once it starts (16 kHz mono int16).
        after_speech: what happens when the speech runs out: `idle` (the microphone goes on hearing nothing
            until the host stops it), `final` (the app stops the microphone: the stream's final packet),
            `disconnect` (the glasses go out of range).
        name: the Bluetooth name (`connect(name=...)` must match it when given).
        mtu: the negotiated ATT MTU (Frame negotiates 247 on most hosts).
        realtime: send the microphone at speaking pace rather than as fast as the host takes it.
    """

    def __init__(self, speech: np.ndarray | None = None, *,
                 after_speech: Literal["idle", "final", "disconnect"] = "idle",
                 name: str = "Frame 4F", mtu: int = 247, realtime: bool = False) -> None:
        super().__init__()
        self.speech = np.zeros(0, np.int16) if speech is None else np.asarray(speech, dtype=np.int16)
        self.after_speech = after_speech
        self.name = name
        self.mtu_size = mtu
        self.realtime = realtime
        self.files: dict[str, str] = {}
        self.lua: list[str] = []  # every Lua string the host sent
        self.messages: list[tuple[int, bytes]] = []  # every whole data message: (code, payload)
        self.screens: list[list[DrawnLine]] = []  # every screen the app showed, in order
        self.app: str | None = None  # the running app's source
        self.mic: tuple[int, int] | None = None  # (sample_rate, bit_depth) while recording
        self.taps_enabled = False
        self.connected = False
        self.speech_done = threading.Event()
        self.shown = threading.Condition()
        self._accum: dict[int, dict[str, Any]] = {}
        self._writing: tuple[str, list[str]] | None = None
        self._stream: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- the radio: what bleak does for FrameBle -------------------------------------------------------

    async def connect(self, name: str | None = None, timeout: float = 10, print_response_handler: Any = None,
                      data_response_handler: Any = None, disconnect_handler: Any = None) -> str:
        if name is not None and name != self.name:
            raise Exception("No matching Frame device found")  # what FrameBle raises
        self._user_print_response_handler = print_response_handler or (lambda _: None)
        self._user_data_response_handler = data_response_handler or (lambda _: None)
        self._user_disconnect_handler = disconnect_handler or (lambda: None)
        self._loop = asyncio.get_running_loop()
        self.connected = True
        return "4E:87:B5:0C:64:0F"

    async def disconnect(self) -> None:
        self._disconnect_handler(None)

    def _disconnect_handler(self, _: Any) -> None:
        if not self.connected:
            return
        self.connected = False
        self.app = None
        if self._stream is not None:
            self._stream.cancel()
        self._user_disconnect_handler()

    def is_connected(self) -> bool:
        return self.connected

    def max_lua_payload(self) -> int:
        return self.mtu_size - 3

    def max_data_payload(self) -> int:
        return self.mtu_size - 4

    async def _transmit(self, data: Any, show_me: bool = False) -> None:
        if not self.connected:
            raise Exception("Not connected")  # bleak's error, as FrameBle lets it through
        if len(data) > self.mtu_size - 3:
            raise Exception("payload length is too large")
        self._receive(bytes(data))

    def tap(self) -> None:
        """The wearer taps the temple (from any thread)."""
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._tap)

    def drop_link(self) -> None:
        """The glasses go out of range (from any thread)."""
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._disconnect_handler, None)

    def wait_shown(self, text: str, timeout: float = 10.0) -> bool:
        """Wait until a screen holding `text` was shown."""
        with self.shown:
            return self.shown.wait_for(lambda: any(text in " ".join(line.text for line in screen)
                                                   for screen in self.screens), timeout)

    # -- the glasses ----------------------------------------------------------------------------------------

    def _notify(self, packet: bytes) -> None:
        """Send a notification to the host (tasks run in order, so packets arrive in order)."""
        assert self._loop is not None
        self._loop.create_task(self._notification_handler(None, bytearray(packet)))

    def _print(self, text: str) -> None:
        self._notify(text.encode())

    def _receive(self, data: bytes) -> None:
        if data == b"\x03":  # break: the running app stops, as its pcall catches the break
            self._stop_app()
        elif data == b"\x04":  # reset: a fresh Lua VM (files stay)
            self._stop_app()
        elif data[0] == _DATA:
            self._receive_data(data[1:])
        else:
            self._run_lua(data.decode())

    def _stop_app(self) -> None:
        self.app = None
        self.taps_enabled = False
        self.mic = None
        if self._stream is not None:
            self._stream.cancel()

    def _run_lua(self, code: str) -> None:
        self.lua.append(code)
        if match := re.fullmatch(r"f=frame\.file\.open\('([^']+)','w'\);print\(1\)", code):
            self._writing = (match.group(1), [])
            self._print("1")
        elif match := re.fullmatch(r'f:write\("(.*)"\);print\(1\)', code, re.S):
            assert self._writing is not None, "f:write without an open file"
            self._writing[1].append(_lua_unescape(match.group(1)))
            self._print("1")
        elif code == "f:close();print(nil)":
            assert self._writing is not None
            self.files[self._writing[0]] = "".join(self._writing[1])
            self._writing = None
            self._print("nil")
        elif match := re.fullmatch(r"require\('([^']+)'\)", code):
            self._start_app(match.group(1))
        elif code.endswith("print(0)"):
            self._print("0")

    def _start_app(self, module: str) -> None:
        source = self.files.get(f"{module}.lua")
        if source is None:
            self._print(f"module '{module}' not found")
            return
        for lib in re.findall(r"require\('([^']+)'\)", source):
            if f"{lib}.lua" not in self.files:
                self._print(f"module '{lib}' not found")
                return
        self.app = source
        self._show([DrawnLine("meetmem", 1, 1, "WHITE", 4)])
        self._print("meetmem app running")

    def _receive_data(self, packet: bytes) -> None:
        """`data.lua`'s `update_app_data_accum`: accumulate a message's chunks, then acknowledge."""
        code = packet[0]
        item = self._accum.setdefault(code, {"size": 0, "chunks": []})
        if not item["chunks"]:
            item["size"] = packet[1] << 8 | packet[2]
            item["chunks"] = [packet[3:]]
        else:
            item["chunks"].append(packet[1:])
        if sum(len(c) for c in item["chunks"]) == item["size"]:
            block = b"".join(item["chunks"])
            item["chunks"] = []
            self.messages.append((code, block))
            if self.app is not None:
                self._handle(code, block)
            else:
                self._print(f"Error: No parser for flag: {code}")
        self._notify(bytes([_DATA, 0x00]))

    def _handle(self, code: int, block: bytes) -> None:
        if code == TEXT_MSG:
            text = parse_plain_text(block)
            lines = [DrawnLine(line, text.x, text.y + i * LINE_HEIGHT, text.color, text.spacing)
                     for i, line in enumerate(text.string.split("\n")) if line]
            self._show(lines)
        elif code == TAP_SUBS_MSG:
            self.taps_enabled = block[0] == 1
        elif code == AUDIO_SUBS_MSG:
            if block[0] == 1 and self.mic is None:
                assert self.app is not None
                rate = int(re.search(r"sample_rate=(\d+)", self.app).group(1))  # type: ignore[union-attr]
                depth = int(re.search(r"bit_depth=(\d+)", self.app).group(1))  # type: ignore[union-attr]
                self.mic = (rate, depth)
                self._stream = asyncio.get_running_loop().create_task(self._record(rate, depth))
            elif block[0] == 0 and self.mic is not None:
                self.mic = None  # the stream sends the rest, then the final packet

    def _show(self, lines: list[DrawnLine]) -> None:
        with self.shown:
            self.screens.append(lines)
            self.shown.notify_all()

    def _tap(self) -> None:
        if self.connected and self.taps_enabled:
            self._notify(bytes([_DATA, TAP_MSG]))

    async def _record(self, rate: int, depth: int) -> None:
        """`audio.lua`'s `read_and_send_audio` loop over the speech, recorded at the app's rate and depth."""
        pcm = microphone_bytes(self.speech, rate, depth)
        step = (self.mtu_size - 4 - 1) // 2 * 2  # an even number of bytes, as audio.lua reads
        for at in range(0, len(pcm), step):
            if self.mic is None:
                break
            self._notify(bytes([_DATA, AUDIO_DATA_NON_FINAL_MSG]) + pcm[at : at + step])
            await asyncio.sleep(step / (rate * depth / 8) if self.realtime else 0)
        self.speech_done.set()
        if self.after_speech == "disconnect" and self.mic is not None:
            self._disconnect_handler(None)
            return
        if self.after_speech == "idle":
            while self.mic is not None:
                await asyncio.sleep(0.01)
        self.mic = None
        self._notify(bytes([_DATA, AUDIO_DATA_FINAL_MSG]))


def microphone_bytes(speech: np.ndarray, rate: int, depth: int) -> bytes:
    """16 kHz int16 speech as Frame's microphone delivers it: signed PCM at `rate` Hz and `depth` bits.

    8 kHz is made with FFmpeg's resampler (band-limited, as the microphone's own filter makes it); 8-bit is
    the top byte of each 16-bit sample.
    """
    samples = np.asarray(speech, dtype=np.int16)
    if rate != SAMPLE_RATE:
        import av

        resampler = av.AudioResampler(format="s16", layout="mono", rate=rate)
        frame = av.AudioFrame.from_ndarray(samples.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = SAMPLE_RATE
        parts = [f.to_ndarray().reshape(-1) for f in [*resampler.resample(frame), *resampler.resample(None)]]
        samples = np.concatenate(parts).astype(np.int16) if parts else np.zeros(0, np.int16)
    if depth == 8:
        return (samples >> 8).astype(np.int8).tobytes()
    return samples.astype("<i2").tobytes()


def _lua_unescape(literal: str) -> str:
    """The string a Lua double-quoted literal written by `FrameBle.upload_file_from_string` stands for."""
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), literal, flags=re.S)
