"""The edge keeps what it heard: 16 kHz mono audio written as Opus in Ogg, in chunks beside the outbox.

A transcript says what was said; the audio lets a person check it. Opus at 24 kbit/s keeps speech clear at
about 11 MB an hour (docs/BENCHMARKS.md), small enough for a board's SD card. The pipeline hands each
block of samples it reads to `AudioKeeper.feed`; every `chunk_seconds` the keeper closes an Ogg file and
records it in the outbox's database (meeting, chunk seq, start in the meeting, sha256), so the sync thread
can upload it, idempotently by `(device, chunk seq)`, when the cloud keeps audio for that meeting. Files
older than the retention (default 7 days) are removed, uploaded or not: the device is not an archive.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np

from .audio import SAMPLE_RATE, _import_av
from .errors import AudioError

log = logging.getLogger(__name__)

#: Opus's frame at 16 kHz: 20 ms.
_FRAME = SAMPLE_RATE // 50


class OggOpusWriter:
    """Encodes 16 kHz mono int16 samples to an Ogg Opus file with PyAV (FFmpeg's libopus).

    Args:
        path: the file to write (replaced if it exists).
        bitrate: bits per second (24 kbit/s is clear speech; 16 is still intelligible).
    """

    def __init__(self, path: str | os.PathLike[str], *, bitrate: int = 24000) -> None:
        av = _import_av()
        self.path = Path(path)
        try:
            self._container = av.open(str(self.path), mode="w", format="ogg")
            self._stream = self._container.add_stream("libopus", rate=SAMPLE_RATE)
            self._stream.bit_rate = bitrate
            self._stream.layout = "mono"
        except (av.error.FFmpegError, ValueError) as exc:
            raise AudioError(str(self.path), f"cannot encode Opus here ({exc})") from exc
        self._av = av
        self._pending = np.zeros(0, np.int16)
        self._pts = 0
        self.samples = 0

    def write(self, samples: np.ndarray) -> None:
        """Append 16 kHz mono int16 samples."""
        data = np.asarray(samples, dtype=np.int16).reshape(-1)
        self.samples += len(data)
        self._pending = np.concatenate([self._pending, data]) if len(self._pending) else data
        whole = len(self._pending) - len(self._pending) % _FRAME
        if whole:
            self._encode(self._pending[:whole])
            self._pending = self._pending[whole:]

    def write_silence(self, seconds: float) -> None:
        self.write(np.zeros(max(int(round(seconds * SAMPLE_RATE)), 0), np.int16))

    def _encode(self, samples: np.ndarray | None) -> None:
        if samples is None:
            packets = self._stream.encode(None)
        else:
            frame = self._av.AudioFrame.from_ndarray(samples.reshape(1, -1), format="s16", layout="mono")
            frame.sample_rate = SAMPLE_RATE
            frame.pts = self._pts
            self._pts += len(samples)
            packets = self._stream.encode(frame)
        for packet in packets:
            self._container.mux(packet)

    def close(self) -> None:
        """Flush the encoder and finish the file (a partial last frame is padded with silence)."""
        if self._container is None:
            return
        if len(self._pending):
            pad = np.zeros(_FRAME - len(self._pending) % _FRAME, np.int16)
            self._encode(np.concatenate([self._pending, pad]))
            self._pending = np.zeros(0, np.int16)
        self._encode(None)
        self._container.close()
        self._container = None

    def __enter__(self) -> OggOpusWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
