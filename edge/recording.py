"""The edge keeps what it heard: 16 kHz mono audio written as Opus in Ogg, in chunks beside the outbox.

A transcript says what was said; the audio lets a person check it. Opus at 24 kbit/s keeps speech clear at
about 10 MB an hour (docs/BENCHMARKS.md), small enough for a board's SD card. The pipeline hands each
block of samples it reads to `AudioKeeper.feed`; every `chunk_seconds` the keeper closes an Ogg file and
records it in `chunks.db` in the same folder (meeting, chunk seq, start in the meeting, sha256), so the sync thread
can upload it, idempotently by `(device, chunk seq)`, when the cloud keeps audio for that meeting. Files
older than the retention (default 7 days) are removed, uploaded or not: the device is not an archive.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .audio import SAMPLE_RATE, import_av
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
        av = import_av()
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


@dataclass(frozen=True, slots=True)
class KeptChunk:
    """One finished chunk of a meeting's audio on the device."""

    meeting_id: str
    chunk_seq: int
    start: float  # seconds from the meeting's start
    duration: float
    path: Path
    sha256: str
    created_at: float  # Unix time
    state: str  # "pending" (to upload), "uploaded", "kept-local" (the cloud does not keep audio for it)


class AudioKeeper:
    """Keeps the audio the edge heard as Ogg Opus chunks in a folder beside the outbox.

    `feed(samples, position)` takes the pipeline's 16 kHz int16 blocks with their place on the meeting's
    clock; a chunk is closed every `chunk_seconds` (and on `close`), then recorded in `chunks.db` in the same
    folder. A chunk is written to a `.part` file and renamed when whole, so a crash loses at most the chunk in
    progress and never leaves a half file recorded as whole. `prune` removes chunks older than the retention.

    Args:
        folder: where the chunks and their table live (created).
        meeting_id: the meeting being recorded.
        chunk_seconds: the length of one chunk (one upload).
        retention_days: how long a chunk stays on the device, uploaded or not.
        bitrate: Opus bits per second.
        clock: Unix seconds (injectable so retention is testable without waiting).
    """

    def __init__(self, folder: str | os.PathLike[str], meeting_id: str, *, chunk_seconds: float = 60.0,
                 retention_days: float = 7.0, bitrate: int = 24000, clock: Any = time.time) -> None:
        self.folder = Path(folder)
        self.meeting_id = meeting_id
        self.chunk_samples = max(int(chunk_seconds * SAMPLE_RATE), _FRAME)
        self.retention = retention_days * 86400.0
        self.bitrate = bitrate
        self.clock = clock
        self.folder.mkdir(parents=True, exist_ok=True)
        for stale in self.folder.glob("*.part"):  # a chunk cut off by a crash: its audio is gone
            stale.unlink(missing_ok=True)
        self._db = sqlite3.connect(str(self.folder / "chunks.db"), isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS audio_chunks (meeting_id TEXT NOT NULL, chunk_seq INTEGER NOT NULL, "
            "start REAL NOT NULL, duration REAL NOT NULL, file TEXT NOT NULL, sha256 TEXT NOT NULL, "
            "created_at REAL NOT NULL, state TEXT NOT NULL DEFAULT 'pending', PRIMARY KEY (meeting_id, chunk_seq))")
        self._lock = threading.Lock()
        self._writer: OggOpusWriter | None = None
        self._start = 0.0
        self._seq = 0
        self._expected: float | None = None  # where the next block should start, to notice a jump

    # -- writing ----------------------------------------------------------------------------------------
    def feed(self, samples: np.ndarray, position: float) -> None:
        """Keep a block of 16 kHz mono int16 samples that starts `position` seconds into the meeting."""
        data = np.asarray(samples, dtype=np.int16).reshape(-1)
        if self._writer is not None and self._expected is not None and abs(position - self._expected) > 0.05:
            self._finish()  # the clock jumped (a resumed input): a chunk covers one stretch only
        while len(data):
            if self._writer is None:
                self._open(position)
            assert self._writer is not None
            room = self.chunk_samples - self._writer.samples
            take = data[:room]
            self._writer.write(take)
            position += len(take) / SAMPLE_RATE
            data = data[room:]
            if self._writer.samples >= self.chunk_samples:
                self._finish()
        self._expected = position

    def _open(self, position: float) -> None:
        with self._lock:
            row = self._db.execute("SELECT MAX(chunk_seq) FROM audio_chunks WHERE meeting_id = ?",
                                   (self.meeting_id,)).fetchone()
        self._seq = 0 if row[0] is None else int(row[0]) + 1
        self._start = position
        self._writer = OggOpusWriter(self._part_path(self._seq), bitrate=self.bitrate)

    def _name(self, seq: int) -> str:
        key = hashlib.sha256(self.meeting_id.encode()).hexdigest()[:12]
        return f"{key}-{seq:06d}.ogg"

    def _part_path(self, seq: int) -> Path:
        return self.folder / (self._name(seq) + ".part")

    def _finish(self) -> None:
        writer, self._writer = self._writer, None
        if writer is None:
            return
        samples = writer.samples
        writer.close()
        part = writer.path
        if samples == 0:
            part.unlink(missing_ok=True)
            return
        final = self.folder / self._name(self._seq)
        os.replace(part, final)
        digest = hashlib.sha256(final.read_bytes()).hexdigest()
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO audio_chunks VALUES (?, ?, ?, ?, ?, ?, ?, 'pending')",
                             (self.meeting_id, self._seq, round(self._start, 3), samples / SAMPLE_RATE,
                              final.name, digest, self.clock()))
        self.prune()  # a capture that runs for days still keeps only the retention's worth

    def close(self) -> None:
        """Finish the chunk in progress."""
        self._finish()

    def shutdown(self) -> None:
        self.close()
        with self._lock:
            self._db.close()

    # -- reading, uploading, retention ------------------------------------------------------------------
    def _chunk(self, row: tuple) -> KeptChunk:
        meeting_id, seq, start, duration, name, sha, created, state = row
        return KeptChunk(meeting_id, int(seq), float(start), float(duration), self.folder / name, sha,
                         float(created), state)

    def chunks(self, state: str | None = None) -> list[KeptChunk]:
        sql = "SELECT * FROM audio_chunks"
        args: tuple = ()
        if state is not None:
            sql += " WHERE state = ?"
            args = (state,)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY meeting_id, chunk_seq", args).fetchall()
        return [self._chunk(r) for r in rows]

    def mark(self, chunk: KeptChunk, state: str) -> None:
        with self._lock:
            self._db.execute("UPDATE audio_chunks SET state = ? WHERE meeting_id = ? AND chunk_seq = ?",
                             (state, chunk.meeting_id, chunk.chunk_seq))

    def prune(self) -> int:
        """Remove chunks older than the retention (uploaded or not); returns how many."""
        cutoff = self.clock() - self.retention
        old = [c for c in self.chunks() if c.created_at < cutoff]
        for chunk in old:
            chunk.path.unlink(missing_ok=True)
            with self._lock:
                self._db.execute("DELETE FROM audio_chunks WHERE meeting_id = ? AND chunk_seq = ?",
                                 (chunk.meeting_id, chunk.chunk_seq))
        if old:
            log.info("removed %d audio chunks older than the retention", len(old))
        return len(old)

    def disk_bytes(self) -> int:
        return sum(c.path.stat().st_size for c in self.chunks() if c.path.exists())


def upload_pending(keeper: AudioKeeper, client: Any, device_id: str) -> int:
    """Upload every pending chunk the cloud will take; returns how many it acknowledged.

    Idempotent by `(device, chunk seq)`: a chunk whose acknowledgement was lost is sent again and the cloud
    adds nothing. A 403 means the meeting's policy keeps audio on the device: its chunks are marked
    `kept-local` (not retried). A 404 (the meeting's first segments have not arrived yet) leaves them pending.

    Raises:
        CloudError: the cloud is unreachable or failing (the chunk stays pending; call again later).
    """
    from .errors import CloudError

    sent = 0
    for chunk in keeper.chunks("pending"):
        try:
            data = chunk.path.read_bytes()
        except OSError as exc:
            log.warning("audio chunk %s is unreadable (%s); not uploaded", chunk.path, exc)
            keeper.mark(chunk, "lost")
            continue
        try:
            client.put_audio_chunk(chunk.meeting_id, device_id, chunk.chunk_seq, chunk.start, data)
        except CloudError as exc:
            if exc.status == 403:
                keeper.mark(chunk, "kept-local")
                continue
            if exc.status in (409, 422):
                log.warning("the cloud refused audio chunk %d of %s: %s", chunk.chunk_seq, chunk.meeting_id,
                            exc.detail)
                keeper.mark(chunk, "refused")
                continue
            if exc.status == 404:
                return sent
            raise
        keeper.mark(chunk, "uploaded")
        sent += 1
    return sent
