"""What the edge commands take in: the cloud's address and token, the recogniser, and the audio (a file, raw PCM
on stdin, the microphone, Frame glasses, or a phone app's WebSocket stream).

Like every edge command module, this imports only `meetmem.edge` (faster-whisper, webrtcvad, PyAV, httpx), and
those inside the functions: never torch, FastAPI, faiss or the search index. Settings that may come from the
environment (`MEETMEM_CLOUD`, `MEETMEM_TOKEN`, `MEETMEM_MIC_DEVICE`, `MEETMEM_WS_TOKEN`) are read from
`Settings`, with the flag of the same name first.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from .progress import note

if TYPE_CHECKING:
    from meetmem.settings import Settings


def cloud_and_token(args: argparse.Namespace, settings: Settings) -> tuple[str, str]:
    """The cloud's URL and bearer token: `--cloud` / `--token`, else MEETMEM_CLOUD / MEETMEM_TOKEN."""
    cloud = args.cloud or settings.cloud
    token = args.token or settings.token
    missing = [name for name, value in (("--cloud (or MEETMEM_CLOUD)", cloud),
                                        ("--token (or MEETMEM_TOKEN)", token)) if not value]
    if missing:
        from meetmem.edge.errors import EdgeError

        raise EdgeError(f"missing {' and '.join(missing)}: the edge needs the cloud's URL and a bearer token "
                        "(`meetmem token create --tenant NAME` on the cloud)")
    assert cloud is not None and token is not None
    return cloud, token


def whisper(args: argparse.Namespace) -> Any:
    """The recogniser `--model`, `--threads`, `--beam` and `--language` describe (loads the model)."""
    from meetmem.edge.asr import ASROptions, WhisperASR

    language = None if args.language in (None, "auto") else args.language
    return WhisperASR(ASROptions(model=args.model, cpu_threads=args.threads, beam_size=args.beam,
                                 language=language))


def glossary(args: argparse.Namespace) -> tuple[str, ...]:
    """The names and terms of `--glossary`, as hotwords."""
    return tuple(t.strip() for t in (args.glossary or "").split(",") if t.strip())


def mic_device(args: argparse.Namespace, settings: Settings) -> int | str | None:
    """--mic-device, else MEETMEM_MIC_DEVICE, else PortAudio's default input; digits are a device index."""
    device = args.mic_device or settings.mic_device or None
    return int(device) if device is not None and device.isdigit() else device


def frame_glasses(args: argparse.Namespace) -> Any:
    """The Brilliant Labs Frame glasses `--input frame` / `--audio frame` name (not connected yet)."""
    from meetmem.edge.frame_glasses import FrameGlasses, FrameOptions

    return FrameGlasses(FrameOptions(name=args.frame_name, sample_rate=args.frame_rate))


def websocket_input(args: argparse.Namespace, settings: Settings, *, quiet: bool) -> Any:
    """The WebSocket input `--input ws://HOST:PORT` names (not listening yet)."""
    from meetmem.edge.websocket_input import WebSocketInput, WebSocketOptions, parse_ws_address

    host, port = parse_ws_address(args.input)
    ws_token = args.ws_token or settings.ws_token or None
    if not ws_token and host not in ("127.0.0.1", "localhost", "::1") and not quiet:
        note(f"warning: anyone who can reach {host}:{port} can stream audio into this meeting; set --ws-token "
             "(or MEETMEM_WS_TOKEN) and give the phone app the same token")
    return WebSocketInput(WebSocketOptions(host=host, port=port, token=ws_token))


class CaptureInput(NamedTuple):  # not a dataclass: `meetmem --help` need not import dataclasses and inspect
    """The audio `edge run --input` names: its chunks, and the device behind them when there is one."""

    chunks: Iterable[Any]
    source: str  # agent.source_id: the outbox's name for the input
    live: bool  # cannot be replayed (microphone, stdin, a stream): a restart continues its clock
    wall_clock: bool  # arrives at speaking pace from the start: latencies are timed from the wall clock
    ws_input: Any = None  # the WebSocket server, started once the model is loaded
    glasses: Any = None  # the Frame glasses, connected once the model is loaded


def capture_input(args: argparse.Namespace, settings: Settings, *, quiet: bool) -> CaptureInput:
    """Open `--input`. A file is checked at once, so a bad one fails before any model loads; a stream is parsed
    now and listens later (`CaptureInput.ws_input.start()`)."""
    from meetmem.edge import audio
    from meetmem.edge.agent import source_id

    ws_input = glasses = None
    if args.input == "ws" or args.input.startswith(("ws://", "wss://")):
        ws_input = websocket_input(args, settings, quiet=quiet)
        chunks: Iterable[Any] = ws_input.chunks()
    elif args.input == "frame":
        from meetmem.edge.frame_glasses import frame_chunks

        glasses = frame_glasses(args)
        chunks = frame_chunks(glasses)
    elif args.input == "mic":
        from meetmem.edge.microphone import read_microphone

        chunks = read_microphone(device=mic_device(args, settings))
    elif args.input == "-":
        chunks = audio.read_pcm_stream(sys.stdin.buffer)
    else:
        chunks = audio.read_file(args.input)
        if args.realtime:
            chunks = audio.paced(chunks)
    source = source_id(args.input)
    # A stream's first audio may come long after the start: no wall-clock anchor for its latencies.
    return CaptureInput(chunks, source, live=source.startswith("live:"),
                        wall_clock=args.input in ("-", "mic") or args.realtime, ws_input=ws_input, glasses=glasses)


def push_to_talk(device: int | str | None = None) -> Any:
    """Record from the microphone from now until Enter is pressed (at most 30 s)."""
    import threading

    from meetmem.edge.microphone import record_until

    stop = threading.Event()

    def wait_for_enter() -> None:
        sys.stdin.readline()
        stop.set()

    note("recording your question: press Enter when you have finished speaking")
    threading.Thread(target=wait_for_enter, name="push-to-talk", daemon=True).start()
    return record_until(stop, device=device)

