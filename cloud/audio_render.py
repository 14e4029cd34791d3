"""A stretch of a meeting's audio made from its stored chunks: one Ogg Opus file for `[start, end]`.

A meeting's audio may be one file (a CLI ingest) or many chunks from the edge, with gaps where nobody
spoke and overlaps where two devices heard the same moment. The player wants one file on the meeting's
own clock: chunks are decoded in time order, gaps become silence, a moment two devices both heard is
taken from the first, and the result is encoded once and cached beside the chunks (the cache is removed
with the meeting's audio). Decoding and encoding use the edge's own stages (PyAV).

A render is bounded (issue 30): silence is written a block at a time, never held whole, and one request
makes at most `MAX_RENDER_SECONDS` of audio (about 7 s of CPU for an hour of silence, 30 s for an hour of
speech decoded and encoded again, on one core of the reference machine).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from meetmem.store.audio import AudioChunk, InvalidAudio, render_key

SAMPLE_RATE = 16000
#: How many made files one meeting's cache keeps.
KEEP_RENDERED = 8
#: The longest stretch one request may have made from chunks; longer is asked for in parts.
MAX_RENDER_SECONDS = 3600.0
#: Samples of silence written at once: 10 s, 320 kB (a gap of days is written in such blocks).
SILENCE_BLOCK = 10 * SAMPLE_RATE
_SILENCE = np.zeros(SILENCE_BLOCK, np.int16)
_SILENCE.setflags(write=False)


class ChunkUnreadable(Exception):
    """A stored chunk could not be decoded; says which chunk, never where it is kept."""

    def __init__(self, chunk: AudioChunk, reason: str) -> None:
        super().__init__(f"chunk {chunk.chunk_seq} of device {chunk.device_id!r} cannot be decoded ({reason})")


def write_silence(writer: object, samples: int) -> None:
    """`samples` of silence, written in blocks of at most `SILENCE_BLOCK` (never one array the gap's size)."""
    while samples > 0:
        take = min(samples, SILENCE_BLOCK)
        writer.write(_SILENCE[:take])  # type: ignore[attr-defined]
        samples -= take


#: How far a chunk's decoded length may differ from what its granule positions say (a frame or two).
DURATION_TOLERANCE_S = 0.25


def check_decodes(data: bytes, claimed: float) -> None:
    """Decode an uploaded chunk the way a render will, and hold it to the duration its container claims
    (issue 30: a chunk that cannot be played back is refused when it arrives, not found out by a player).

    Raises:
        meetmem.store.audio.InvalidAudio: the chunk does not decode, or plays for another length than its
            granule positions say.
        meetmem.edge.errors.ModelUnavailable: PyAV is not installed.
    """
    from meetmem.edge.audio import read_file
    from meetmem.edge.errors import AudioError

    decoded = 0
    most = int((claimed + DURATION_TOLERANCE_S) * SAMPLE_RATE)
    with tempfile.NamedTemporaryFile(suffix=".ogg") as tmp:
        tmp.write(data)
        tmp.flush()
        try:
            for block in read_file(tmp.name, chunk_seconds=5.0):
                decoded += len(block)
                if decoded > most:
                    break  # no need to decode the rest of a chunk already longer than it says
        except AudioError as exc:
            raise InvalidAudio(f"the audio cannot be decoded ({exc.problem})") from None
    seconds = decoded / SAMPLE_RATE
    if abs(seconds - claimed) > DURATION_TOLERANCE_S:
        longer = "more" if seconds > claimed else f"{seconds:.2f} s"
        raise InvalidAudio(f"the Ogg stream says it plays {claimed:.2f} s but decodes to {longer}; "
                           "the file is damaged or its granule positions are wrong")


def render_range(chunks: Sequence[AudioChunk], start: float, end: float, folder: Path) -> Path:
    """The meeting's audio from `start` to `end` seconds as an Ogg Opus file (made once, then cached).

    Raises:
        ChunkUnreadable: a chunk's file cannot be decoded.
        meetmem.edge.errors.ModelUnavailable: PyAV is not installed.
        ValueError: the stretch is longer than `MAX_RENDER_SECONDS` (the caller refuses such requests).
    """
    from meetmem.edge.audio import read_file
    from meetmem.edge.errors import AudioError
    from meetmem.edge.recording import OggOpusWriter

    if end - start > MAX_RENDER_SECONDS:
        raise ValueError(f"a stretch of {end - start:.0f} s is longer than {MAX_RENDER_SECONDS:.0f} s")
    target = folder / f"{render_key(chunks, start, end)}.ogg"
    if target.exists():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    # A live meeting gains chunks, and each new set is a new file: keep only the few most recent.
    made = sorted(folder.glob("*.ogg"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in made[KEEP_RENDERED - 1:]:
        old.unlink(missing_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".part")
    os.close(fd)
    try:
        first = int(round(start * SAMPLE_RATE))
        last = int(round(end * SAMPLE_RATE))
        cursor = first  # the next sample of the meeting's clock to write
        with OggOpusWriter(tmp) as writer:
            for chunk in sorted(chunks, key=lambda c: (c.start, c.device_id, c.chunk_seq)):
                if chunk.end * SAMPLE_RATE <= cursor or chunk.start * SAMPLE_RATE >= last:
                    continue
                pos = int(round(chunk.start * SAMPLE_RATE))
                assert chunk.path is not None  # the caller gives each chunk a file (store.audio.Renderer)
                try:
                    for block in read_file(chunk.path, chunk_seconds=5.0):
                        block_end = pos + len(block)
                        lo, hi = max(pos, cursor), min(block_end, last)
                        if hi > lo:
                            write_silence(writer, lo - cursor)
                            writer.write(block[lo - pos:hi - pos])
                            cursor = hi
                        pos = block_end
                        if pos >= last:
                            break
                except AudioError as exc:
                    raise ChunkUnreadable(chunk, exc.problem) from exc
            write_silence(writer, last - cursor)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target
