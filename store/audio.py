"""A meeting's audio, kept apart from the transcript log: Ogg files on disk, their sha256 in the database.

The log is the truth about what was said and it never changes; audio is bulky, private and may be deleted
on its own (a privacy request) without touching the log or its hash chain. So audio lives in files under
a folder beside the database (`<db>.audio/`), named by the sha256 of their bytes, and a table
`meeting_audio` records which chunk of which device belongs to which meeting, where it starts in the
meeting, how long it lasts and its hash. A chunk is identified by `(device_id, chunk_seq)` within its
meeting, like a segment: an upload that is repeated after a lost acknowledgement adds nothing.

Whether the cloud keeps uploaded audio at all is a policy, per tenant or per meeting (`audio_policy`):
off unless the service's default or an explicit setting says otherwise.

Standard library only: the Ogg container is read here just far enough to check a file is Ogg Opus or
Ogg Vorbis and how long it plays.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .errors import InvalidSegment, SequenceError, StoreError
from .log import DEFAULT_TENANT, TranscriptLog

#: The media type of every stored chunk.
OGG_MEDIA_TYPE = "audio/ogg"


class InvalidAudio(InvalidSegment):
    """Audio that is not an Ogg Opus or Ogg Vorbis stream, or a chunk that does not fit the meeting."""


@dataclass(frozen=True, slots=True)
class OggInfo:
    """What the container says about an Ogg audio stream."""

    codec: str  # "opus" or "vorbis"
    sample_rate: int
    channels: int
    duration: float  # seconds


@dataclass(frozen=True, slots=True)
class AudioChunk:
    """One stored piece of a meeting's audio."""

    meeting_id: str
    device_id: str
    chunk_seq: int
    start: float  # seconds from the meeting's start
    duration: float
    sha256: str
    size: int
    codec: str
    path: Path
    added_at: str

    @property
    def end(self) -> float:
        return self.start + self.duration

    def public(self) -> dict[str, object]:
        return {"device_id": self.device_id, "chunk_seq": self.chunk_seq, "start": self.start,
                "end": round(self.end, 3), "duration": self.duration, "sha256": self.sha256,
                "bytes": self.size, "codec": self.codec, "added_at": self.added_at}


def _pages(data: bytes) -> Iterator[tuple[int, int, int, bytes]]:
    """`(header_type, granule, serial, body)` of each Ogg page, checking the framing as it goes."""
    pos = 0
    while pos < len(data):
        if data[pos:pos + 4] != b"OggS" or len(data) < pos + 27:
            raise InvalidAudio(f"not an Ogg stream (no page at byte {pos})")
        header_type, granule, serial = data[pos + 5], *struct.unpack_from("<qI", data, pos + 6)
        count = data[pos + 26]
        table = data[pos + 27:pos + 27 + count]
        size = sum(table)
        body_at = pos + 27 + count
        if len(table) != count or body_at + size > len(data):
            raise InvalidAudio(f"the Ogg stream is truncated (page at byte {pos})")
        yield header_type, granule, serial, data[body_at:body_at + size]
        pos = body_at + size


def ogg_info(data: bytes) -> OggInfo:
    """Codec, rate, channels and playing time of an Ogg Opus or Ogg Vorbis file.

    Raises:
        InvalidAudio: not Ogg, truncated, another codec, or empty.
    """
    if not data:
        raise InvalidAudio("the audio file is empty")
    first = True
    codec = ""
    rate = channels = pre_skip = 0
    last_granule = -1
    stream = None
    for _kind, granule, serial, body in _pages(data):
        if first:
            first = False
            stream = serial
            if body.startswith(b"OpusHead") and len(body) >= 19:
                codec, channels = "opus", body[9]
                pre_skip, rate = struct.unpack_from("<HI", body, 10)
            elif body.startswith(b"\x01vorbis") and len(body) >= 16:
                codec, channels = "vorbis", body[11]
                (rate,) = struct.unpack_from("<I", body, 12)
            else:
                raise InvalidAudio("the Ogg stream holds neither Opus nor Vorbis audio; "
                                   "encode it as Ogg Opus (e.g. `ffmpeg -i in.wav -c:a libopus out.ogg`)")
        if serial == stream and granule >= 0:
            last_granule = granule
    if not codec or last_granule < 0:
        raise InvalidAudio("the Ogg stream holds no audio")
    if codec == "opus":
        # Opus granule positions count 48 kHz samples whatever the input rate, and include the pre-skip.
        duration = max(last_granule - pre_skip, 0) / 48000.0
    else:
        duration = last_granule / float(rate or 1)
    return OggInfo(codec=codec, sample_rate=rate, channels=channels, duration=round(duration, 3))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class AudioStore:
    """The audio of every meeting in one database: chunk files beside it, their rows in it.

    Args:
        log: the transcript log whose database records the chunks (and whose meetings they belong to).
        folder: where the files go (default: `<database file>.audio` beside it).
        default_keep: whether audio uploaded for a meeting with no policy of its own or of its tenant
            is kept (the cloud's `MEETMEM_AUDIO_UPLOAD`; off by default).
    """

    def __init__(self, log: TranscriptLog, folder: str | Path | None = None, *, default_keep: bool = False) -> None:
        if getattr(log, "backend", "sqlite") != "sqlite":
            raise StoreError("audio is kept beside the SQLite store only: the PostgreSQL store does not keep audio "
                             "yet (the transcript, search, summaries and the ledger work)")
        self.log = log
        self.folder = Path(folder) if folder is not None else log.path.with_name(log.path.name + ".audio")
        self.default_keep = default_keep
        with log.transaction():
            log.db.execute(
                "CREATE TABLE IF NOT EXISTS meeting_audio (tenant TEXT NOT NULL, meeting_id TEXT NOT NULL, "
                "device_id TEXT NOT NULL, chunk_seq INTEGER NOT NULL, start REAL NOT NULL, "
                "duration REAL NOT NULL, sha256 TEXT NOT NULL, bytes INTEGER NOT NULL, codec TEXT NOT NULL, "
                "added_at TEXT NOT NULL, PRIMARY KEY (tenant, meeting_id, device_id, chunk_seq))"
            )
            log.db.execute(
                "CREATE TABLE IF NOT EXISTS audio_policy (tenant TEXT NOT NULL, meeting_id TEXT NOT NULL, "
                "keep INTEGER NOT NULL, set_at TEXT NOT NULL, PRIMARY KEY (tenant, meeting_id))"
            )

    # -- policy -------------------------------------------------------------------------------------------
    def set_policy(self, keep: bool, *, tenant: str = DEFAULT_TENANT, meeting_id: str | None = None) -> None:
        """Keep (or refuse) uploaded audio for one meeting, or for the whole tenant when `meeting_id` is None."""
        with self.log.transaction():
            self.log.db.execute("INSERT OR REPLACE INTO audio_policy VALUES (?, ?, ?, ?)",
                                (tenant, meeting_id or "", int(keep), _now()))

    def keeps(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> tuple[bool, str]:
        """Whether uploaded audio is kept for this meeting, and which setting decided it."""
        rows = self.log.read("SELECT meeting_id, keep FROM audio_policy WHERE tenant = ? AND meeting_id IN (?, '')",
                             (tenant, meeting_id))
        by_scope = {r[0]: bool(r[1]) for r in rows}
        if meeting_id in by_scope:
            return by_scope[meeting_id], "meeting"
        if "" in by_scope:
            return by_scope[""], "tenant"
        return self.default_keep, "service"

    # -- chunks -------------------------------------------------------------------------------------------
    def _file(self, sha256: str) -> Path:
        return self.folder / sha256[:2] / f"{sha256}.ogg"

    def add(self, meeting_id: str, device_id: str, chunk_seq: int, data: bytes, *, start: float,
            tenant: str = DEFAULT_TENANT) -> tuple[AudioChunk, bool]:
        """Store one chunk of a meeting's audio (an Ogg file) starting `start` seconds into the meeting.

        Idempotent by `(device_id, chunk_seq)`: the same bytes again add nothing.

        Returns:
            the chunk, and whether it was new.

        Raises:
            MeetingNotFound: the tenant has no such meeting.
            InvalidAudio: not Ogg Opus/Vorbis, or a negative start.
            SequenceError: that chunk is already stored with other bytes.
        """
        if chunk_seq < 0:
            raise InvalidAudio(f"chunk_seq must be 0 or more, got {chunk_seq}")
        if not (start >= 0) or start == float("inf"):
            raise InvalidAudio(f"start must be a number of seconds, 0 or more, got {start}")
        self.log.require_meeting(meeting_id, tenant=tenant)
        info = ogg_info(data)
        sha = hashlib.sha256(data).hexdigest()
        existing = self.get(meeting_id, device_id, chunk_seq, tenant=tenant)
        if existing is not None:
            if existing.sha256 != sha:
                raise SequenceError(f"audio chunk {chunk_seq} of device {device_id!r} is already stored with "
                                    "other content; a device's chunk numbers must not be reused")
            return existing, False
        path = self._file(sha)
        try:
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                # Written whole to a temporary name and renamed: a crash never leaves half a file behind
                # a recorded hash.
                fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".part")
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(tmp, path)
        except OSError as exc:
            raise StoreError(f"cannot write the audio file {path}: {exc}") from exc
        with self.log.transaction():
            self.log.db.execute(
                "INSERT OR IGNORE INTO meeting_audio VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (tenant, meeting_id, device_id, chunk_seq, float(start), info.duration, sha, len(data),
                 info.codec, _now()),
            )
        chunk = self.get(meeting_id, device_id, chunk_seq, tenant=tenant)
        assert chunk is not None
        return chunk, True

    def _chunk(self, row: tuple) -> AudioChunk:
        meeting_id, device_id, chunk_seq, start, duration, sha, size, codec, added_at = row
        return AudioChunk(meeting_id, device_id, int(chunk_seq), float(start), float(duration), sha, int(size),
                          codec, self._file(sha), added_at)

    _COLUMNS = "meeting_id, device_id, chunk_seq, start, duration, sha256, bytes, codec, added_at"

    def get(self, meeting_id: str, device_id: str, chunk_seq: int, *,
            tenant: str = DEFAULT_TENANT) -> AudioChunk | None:
        rows = self.log.read(f"SELECT {self._COLUMNS} FROM meeting_audio WHERE tenant = ? AND meeting_id = ? "
                             "AND device_id = ? AND chunk_seq = ?", (tenant, meeting_id, device_id, chunk_seq))
        return self._chunk(rows[0]) if rows else None

    def chunks(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> list[AudioChunk]:
        """The meeting's chunks ordered by start (then device and chunk seq)."""
        rows = self.log.read(f"SELECT {self._COLUMNS} FROM meeting_audio WHERE tenant = ? AND meeting_id = ? "
                             "ORDER BY start, device_id, chunk_seq", (tenant, meeting_id))
        return [self._chunk(r) for r in rows]

    def chunk_seqs(self, meeting_id: str, device_id: str, *, tenant: str = DEFAULT_TENANT) -> list[int]:
        rows = self.log.read("SELECT chunk_seq FROM meeting_audio WHERE tenant = ? AND meeting_id = ? AND "
                             "device_id = ? ORDER BY chunk_seq", (tenant, meeting_id, device_id))
        return [int(r[0]) for r in rows]

    def verify(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> list[str]:
        """Problems with the meeting's audio files (missing, or bytes not matching their recorded sha256)."""
        problems = []
        for chunk in self.chunks(meeting_id, tenant=tenant):
            try:
                digest = hashlib.sha256(chunk.path.read_bytes()).hexdigest()
            except OSError as exc:
                problems.append(f"chunk {chunk.chunk_seq} of {chunk.device_id}: {exc.strerror}")
                continue
            if digest != chunk.sha256:
                problems.append(f"chunk {chunk.chunk_seq} of {chunk.device_id}: sha256 does not match")
        return problems

    def rendered_folder(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> Path:
        """Where audio made from the meeting's chunks (a time range, several chunks joined) is cached."""
        key = hashlib.sha256(f"{tenant}\n{meeting_id}".encode()).hexdigest()[:24]
        return self.folder / "rendered" / key

    def delete(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> int:
        """Remove the meeting's audio (rows and files no other meeting uses); returns how many chunks.

        The transcript log is not touched: its rows and hash chain stay exactly as they were.
        """
        self.log.require_meeting(meeting_id, tenant=tenant)
        chunks = self.chunks(meeting_id, tenant=tenant)
        with self.log.transaction():
            self.log.db.execute("DELETE FROM meeting_audio WHERE tenant = ? AND meeting_id = ?", (tenant, meeting_id))
        shutil.rmtree(self.rendered_folder(meeting_id, tenant=tenant), ignore_errors=True)
        for sha in {c.sha256 for c in chunks}:
            if not self.log.read("SELECT 1 FROM meeting_audio WHERE sha256 = ? LIMIT 1", (sha,)):
                self._file(sha).unlink(missing_ok=True)
        return len(chunks)

    def remove_files(self, meeting_id: str, shas: Iterable[str], *, tenant: str = DEFAULT_TENANT) -> int:
        """After a meeting's deletion committed (`TranscriptLog.delete_meeting`): remove its audio files that
        no other meeting's rows name, and its rendered audio; returns how many files went."""
        shutil.rmtree(self.rendered_folder(meeting_id, tenant=tenant), ignore_errors=True)
        removed = 0
        for sha in set(shas):
            if self.log.read("SELECT 1 FROM meeting_audio WHERE sha256 = ? LIMIT 1", (sha,)):
                continue
            path = self._file(sha)
            if path.exists():
                path.unlink(missing_ok=True)
                removed += 1
        return removed


class NoAudioStore:
    """The audio side of a store that keeps no audio (PostgreSQL, for now): nothing is kept, every upload
    is refused as a policy that does not keep audio would refuse it, and asking to keep audio says why not.

    So the audio routes answer as they do for a meeting without audio (404, 403, 422), never a 5xx.
    """

    REASON = "the PostgreSQL store does not keep audio yet (keep it with the SQLite store: --db)"

    def __init__(self, log: Any, *, default_keep: bool = False) -> None:
        self.log = log

    def set_policy(self, keep: bool, *, tenant: str = DEFAULT_TENANT, meeting_id: str | None = None) -> None:
        if keep:
            raise InvalidSegment(f"audio cannot be kept: {self.REASON}")

    def keeps(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> tuple[bool, str]:
        return False, "service"

    def add(self, *args: Any, **kwargs: Any) -> tuple[AudioChunk, bool]:
        raise InvalidSegment(f"audio cannot be kept: {self.REASON}")

    def get(self, meeting_id: str, device_id: str, chunk_seq: int, *,
            tenant: str = DEFAULT_TENANT) -> AudioChunk | None:
        return None

    def chunks(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> list[AudioChunk]:
        return []

    def rendered_folder(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> Path:
        raise InvalidSegment(f"no audio: {self.REASON}")

    def delete(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> int:
        return 0

    def remove_files(self, meeting_id: str, shas: Iterable[str], *, tenant: str = DEFAULT_TENANT) -> int:
        return 0


def audio_store_for(log: Any, *, default_keep: bool = False) -> AudioStore | NoAudioStore:
    """The audio store of the log's database: files beside the SQLite file, or none with PostgreSQL."""
    if getattr(log, "backend", "sqlite") != "sqlite":
        return NoAudioStore(log, default_keep=default_keep)
    return AudioStore(log, default_keep=default_keep)
