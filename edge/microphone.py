"""A live microphone as 16 kHz mono int16 chunks, through `sounddevice` (optional: PortAudio)."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator

import numpy as np

from .errors import AudioError, ModelUnavailable
from .vad import SAMPLE_RATE

log = logging.getLogger(__name__)


def read_microphone(*, chunk_seconds: float = 0.1, device: int | str | None = None,
                    max_queue_seconds: float = 60.0) -> Iterator[np.ndarray]:
    """Chunks from the default (or named) input device until the caller stops iterating (Ctrl-C).

    The PortAudio callback only copies into a queue, so a slow recogniser never makes the sound card drop
    audio; if the queue ever holds `max_queue_seconds` the overflow is reported, never hidden.
    """
    try:
        import sounddevice
    except (ImportError, OSError) as exc:  # OSError: the PortAudio library itself is missing
        raise ModelUnavailable("sounddevice", f"microphone input is not available ({exc})",
                               hint="pip install sounddevice, and the system's PortAudio library "
                               "(apt-get install libportaudio2)") from exc
    blocks: queue.Queue[bytes] = queue.Queue(maxsize=max(1, int(max_queue_seconds / chunk_seconds)))
    overflows = 0

    def callback(data: bytes, frames: int, time_info: object, status: object) -> None:
        nonlocal overflows
        try:
            blocks.put_nowait(bytes(data))
        except queue.Full:
            overflows += 1
    try:
        stream = sounddevice.RawInputStream(samplerate=SAMPLE_RATE, channels=1, dtype="int16", device=device,
                                            blocksize=int(SAMPLE_RATE * chunk_seconds), callback=callback)
    except Exception as exc:  # PortAudio's errors: no device, busy device, unsupported rate
        raise AudioError("mic", f"cannot open the microphone ({exc})") from exc
    with stream:
        while True:
            if overflows:
                log.error("the recogniser fell %d blocks behind the microphone; that audio was lost", overflows)
                overflows = 0
            yield np.frombuffer(blocks.get(), dtype="<i2").astype(np.int16)


def record_until(stop: threading.Event, *, max_seconds: float = 30.0, device: int | str | None = None) -> np.ndarray:
    """Push-to-talk: microphone audio until `stop` is set (the key released) or `max_seconds` pass, as
    float32 in [-1, 1)."""
    chunks: list[np.ndarray] = []
    total = 0
    for chunk in read_microphone(device=device):
        chunks.append(chunk)
        total += len(chunk)
        if stop.is_set() or total >= max_seconds * SAMPLE_RATE:
            break
    samples = np.concatenate(chunks) if chunks else np.zeros(0, np.int16)
    return samples.astype(np.float32) / 32768.0
