"""A stretch of a meeting's audio made from its stored chunks: one Ogg Opus file for `[start, end]`.

A meeting's audio may be one file (a CLI ingest) or many chunks from the edge, with gaps where nobody
spoke and overlaps where two devices heard the same moment. The player wants one file on the meeting's
own clock: chunks are decoded in time order, gaps become silence, a moment two devices both heard is
taken from the first, and the result is encoded once and cached beside the chunks (the cache is removed
with the meeting's audio). Decoding and encoding use the edge's own stages (PyAV).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from meetmem.store.audio import AudioChunk, render_key

SAMPLE_RATE = 16000
#: How many made files one meeting's cache keeps.
KEEP_RENDERED = 8


def render_range(chunks: Sequence[AudioChunk], start: float, end: float, folder: Path) -> Path:
    """The meeting's audio from `start` to `end` seconds as an Ogg Opus file (made once, then cached).

    Raises:
        meetmem.edge.errors.AudioError: a chunk file cannot be decoded.
        meetmem.edge.errors.ModelUnavailable: PyAV is not installed.
    """
    from meetmem.edge.audio import read_file
    from meetmem.edge.recording import OggOpusWriter

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
                for block in read_file(chunk.path, chunk_seconds=5.0):
                    block_end = pos + len(block)
                    lo, hi = max(pos, cursor), min(block_end, last)
                    if hi > lo:
                        if lo > cursor:
                            writer.write(np.zeros(lo - cursor, np.int16))
                        writer.write(block[lo - pos:hi - pos])
                        cursor = hi
                    pos = block_end
                    if pos >= last:
                        break
            if cursor < last:
                writer.write(np.zeros(last - cursor, np.int16))
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target
