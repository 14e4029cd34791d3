"""Audio in: files (WAV, FLAC, Ogg and anything else FFmpeg reads) and raw PCM streams, as 16 kHz mono.

Files are decoded with PyAV (already a faster-whisper dependency), resampled and downmixed by FFmpeg's
resampler, and yielded in chunks, so a long recording never has to be in memory. Every failure is an
`AudioError` naming the file and the problem: a missing, empty, corrupt, truncated or non-audio file never
surfaces as a traceback from PyAV.

`paced` replays chunks at speaking speed (`--realtime`) against a `Clock`; tests pass a `ManualClock` so
they never sleep.
"""

from __future__ import annotations

import logging
import os
import struct
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, BinaryIO, Protocol

import numpy as np

from .errors import AudioError, ModelUnavailable

logger = logging.getLogger(__name__)

SAMPLE_RATE = 16000
#: Decoded duration may fall short of the container's declared duration by this much before it counts as
#: truncated (encoder padding and priming samples).
TRUNCATION_TOLERANCE_S = 0.1


class Clock(Protocol):
    """Monotonic time and sleeping: the only two things pacing needs."""

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The real clock: `time.monotonic` and `time.sleep`."""

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class ManualClock:
    """A clock that moves only when slept on or advanced: pacing tests run instantly.

    Attributes:
        slept: every duration passed to `sleep`, in order.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self.slept: list[float] = []

    def now(self) -> float:
        return self._now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self._now += max(0.0, seconds)

    def advance(self, seconds: float) -> None:
        """Time passing while the consumer works (recognition, say)."""
        self._now += seconds


def read_file(path: str | os.PathLike[str], *, chunk_seconds: float = 1.0) -> Iterator[np.ndarray]:
    """Decode an audio file to 16 kHz mono int16 chunks of about `chunk_seconds` each.

    The file is opened and checked here, before any chunk is asked for, so a bad file fails at once; it
    is checked for truncation after the last chunk. Chunks already yielded from a truncated file are good
    audio: a caller that must not lose words keeps them and reports the error.

    Raises:
        AudioError: the file is missing, empty, unreadable, has no audio stream, no samples, corrupt
            packets, or ends before its header says it does.
    """
    av = import_av()
    source = os.fspath(path)
    _check_file(source)
    try:
        container = av.open(source, mode="r")
    except av.error.FFmpegError as exc:
        raise AudioError(source, f"not a readable audio file ({_reason(exc)})") from exc
    if not container.streams.audio:
        container.close()
        raise AudioError(source, "no audio stream in the file")
    return _decode(av, container, source, chunk_seconds)


def decode_file(path: str | os.PathLike[str]) -> np.ndarray:
    """A whole (short) file as one float32 array in [-1, 1): a spoken question, say."""
    chunks = list(read_file(path, chunk_seconds=5.0))
    return (np.concatenate(chunks) if chunks else np.zeros(0, np.int16)).astype(np.float32) / 32768.0


def read_pcm_stream(stream: BinaryIO, *, chunk_seconds: float = 0.1, source: str = "-") -> Iterator[np.ndarray]:
    """Raw 16 kHz 16-bit little-endian mono PCM from a binary stream (standard input), in int16 chunks.

    Short reads (a pipe delivers what it has) are fine; an odd byte is carried to the next read. A final
    odd byte at the end of the stream is dropped with a warning: it is half a sample.
    """
    want = max(2, int(SAMPLE_RATE * chunk_seconds) * 2)
    carry = b""
    while True:
        try:
            data = stream.read(want)
        except OSError as exc:
            raise AudioError(source, f"cannot read the PCM stream ({exc})") from exc
        if not data:
            break
        data = carry + data
        usable = len(data) - len(data) % 2
        carry = data[usable:]
        if usable:
            yield np.frombuffer(data[:usable], dtype="<i2").astype(np.int16)
    if carry:
        logger.warning("%s: dropped a trailing odd byte (the stream ended mid-sample)", source)


def paced(chunks: Iterable[np.ndarray], clock: Clock | None = None, *,
          sample_rate: int = SAMPLE_RATE) -> Iterator[np.ndarray]:
    """Yield each chunk when a microphone would have delivered it: once its last sample has been spoken.

    Time the consumer spends between chunks counts (it is measured on the clock), so a slow consumer is
    not slowed further; one that falls behind gets the next chunk at once.
    """
    clock = clock or SystemClock()
    began = clock.now()
    spoken = 0
    for chunk in chunks:
        spoken += len(chunk)
        due = began + spoken / sample_rate
        wait = due - clock.now()
        if wait > 0:
            clock.sleep(wait)
        yield chunk


def import_av() -> ModuleType:
    """PyAV, imported on first use (decoding, resampling and Opus encoding all go through it); a missing
    install raises ModelUnavailable naming it, for every input and the audio keeper alike."""
    try:
        import av
        import av.error  # noqa: F401 - the exception classes live here
    except ImportError as exc:
        raise ModelUnavailable("av", "PyAV (audio decoding) is not installed") from exc
    return av


def _check_file(source: str) -> None:
    try:
        info = os.stat(source)
    except FileNotFoundError as exc:
        raise AudioError(source, "no such file") from exc
    except OSError as exc:
        raise AudioError(source, f"cannot read the file ({exc.strerror or exc})") from exc
    if not Path(source).is_file():
        raise AudioError(source, "not a regular file")
    if info.st_size == 0:
        raise AudioError(source, "the file is empty")


def _reason(exc: Exception) -> str:
    """FFmpeg's message without the errno and file name PyAV wraps around it."""
    message = getattr(exc, "strerror", None) or str(exc)
    return str(message).rstrip(".")


def _decode(av: ModuleType, container: Any, source: str, chunk_seconds: float) -> Iterator[np.ndarray]:
    try:
        yield from _decode_stream(av, container, source, chunk_seconds)
    finally:
        container.close()


def _decode_stream(av: ModuleType, container: Any, source: str, chunk_seconds: float) -> Iterator[np.ndarray]:
    stream = container.streams.audio[0]
    declared = _declared_seconds(stream, source)
    resampler = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
    chunk_samples = max(1, int(SAMPLE_RATE * chunk_seconds))
    buffered: list[np.ndarray] = []
    held = 0
    total = 0
    failure: AudioError | None = None
    try:
        for packet in container.demux(stream):
            for frame in packet.decode():
                for out in resampler.resample(frame):
                    samples = out.to_ndarray().reshape(-1).astype(np.int16, copy=False)
                    buffered.append(samples)
                    held += len(samples)
                    total += len(samples)
                    while held >= chunk_samples:
                        joined = np.concatenate(buffered)
                        yield joined[:chunk_samples]
                        buffered, held = [joined[chunk_samples:]], held - chunk_samples
        for out in resampler.resample(None):
            samples = out.to_ndarray().reshape(-1).astype(np.int16, copy=False)
            buffered.append(samples)
            total += len(samples)
    except av.error.FFmpegError as exc:
        failure = AudioError(source, f"corrupt or truncated audio after {total / SAMPLE_RATE:.2f} s "
                                     f"({_reason(exc)})")
        failure.__cause__ = exc
    # What was decoded before a failure is good audio: hand it over before reporting the failure.
    tail = np.concatenate(buffered) if buffered else np.zeros(0, np.int16)
    if len(tail):
        yield tail
    if failure is not None:
        raise failure
    if total == 0:
        raise AudioError(source, "the file contains no audio samples")
    decoded = total / SAMPLE_RATE
    if declared is not None and decoded < declared - TRUNCATION_TOLERANCE_S:
        raise AudioError(source, f"truncated: the header says {declared:.2f} s but only {decoded:.2f} s "
                                 "could be decoded")
    logger.debug("%s: decoded %.2f s (%s, %d Hz, %d channel(s))", source, decoded,
                 stream.codec_context.name, stream.rate or 0, stream.channels or 0)


def _declared_seconds(stream: Any, source: str) -> float | None:
    """The duration the file's header states exactly, if it does: WAV and FLAC; else None.

    FFmpeg derives a WAV's duration from the file size, so a cut-off WAV looks whole to it; the RIFF
    header's data size tells the truth, and is read here. FLAC's STREAMINFO holds the exact sample count.
    Other formats are not checked: lossy headers only estimate it (MP3), or the length is read from the
    end of the file itself (Ogg), so a shortfall there proves nothing.
    """
    riff = _riff_data_seconds(source)
    if riff is not None:
        return riff
    if stream.codec_context.name == "flac" and stream.duration and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    return None


def _riff_data_seconds(source: str) -> float | None:
    try:
        with open(source, "rb") as handle:
            header = handle.read(12)
            if len(header) < 12 or header[:4] != b"RIFF" or header[8:12] != b"WAVE":
                return None
            byte_rate = None
            while True:
                chunk = handle.read(8)
                if len(chunk) < 8:
                    return None
                kind, length = chunk[:4], struct.unpack("<I", chunk[4:])[0]
                if kind == b"fmt ":
                    fmt = handle.read(length + length % 2)
                    if len(fmt) >= 12:
                        byte_rate = struct.unpack("<I", fmt[8:12])[0]
                elif kind == b"data":
                    # 0 and 0xFFFFFFFF mark a WAV written to a pipe, whose length is unknown.
                    if not byte_rate or length in (0, 0xFFFFFFFF):
                        return None
                    return length / byte_rate
                else:
                    handle.seek(length + length % 2, os.SEEK_CUR)
    except OSError:
        return None


def tee(chunks: Iterable[np.ndarray], start: float,
         keep: Callable[[np.ndarray, float], None]) -> Iterator[np.ndarray]:
    """The chunks unchanged, each also handed to `keep` with its start on the meeting's clock."""
    position = start
    for chunk in chunks:
        keep(chunk, position)
        position += len(chunk) / SAMPLE_RATE
        yield chunk


def skip_samples(chunks: Iterable[np.ndarray], samples: int) -> Iterator[np.ndarray]:
    """The chunks without their first `samples` samples (what an earlier run already captured)."""
    for chunk in chunks:
        if samples <= 0:
            yield chunk
        elif len(chunk) <= samples:
            samples -= len(chunk)
        else:
            yield chunk[samples:]
            samples = 0
