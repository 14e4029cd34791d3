"""A meeting's audio, kept apart from the transcript log: Ogg files on disk, their sha256 in the database.

The log is the truth about what was said and it never changes; audio is bulky, private and may be deleted
on its own (a privacy request) without touching the log or its hash chain. With SQLite, audio lives in files
under a folder beside the database (`<db>.audio/`), named by the sha256 of their bytes, and a table
`meeting_audio` records which chunk of which device belongs to which meeting, where it starts in the
meeting, how long it lasts and its hash. A chunk is identified by `(device_id, chunk_seq)` within its
meeting, like a segment: an upload that is repeated after a lost acknowledgement adds nothing.

With PostgreSQL the bytes are rows of the database itself (`store/pg/audio.py`), since the API processes there
keep nothing of their own. The rows and the policy are written once for both (`MeetingAudio`); only where
the bytes live differs.

Whether the cloud keeps uploaded audio at all is a policy, per tenant or per meeting (`audio_policy`):
off unless the service's default or an explicit setting says otherwise.

The Ogg container is read by store/ogg.py (re-exported here: `ogg_info`, `InvalidAudio`, `OGG_MEDIA_TYPE`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from .database import ALL_TENANTS
from .errors import MeetingNotFound, SequenceError, StoreError
from .log import DEFAULT_TENANT, Log, TranscriptLog
from .ogg import OGG_MEDIA_TYPE, InvalidAudio, OggInfo, ogg_info

__all__ = ["OGG_MEDIA_TYPE", "READ_BLOCK", "AudioBlob", "AudioChunk", "AudioStore", "InvalidAudio", "MeetingAudio",
           "OggInfo", "Renderer", "RendersBusy", "SharedRenders", "check_chunk_place", "keep_decision", "ogg_info",
           "render_key"]

log = logging.getLogger(__name__)


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
    path: Path | None  # the file holding the bytes (SQLite); None where they are in the database
    added_at: str
    tenant: str = DEFAULT_TENANT

    @property
    def end(self) -> float:
        return self.start + self.duration

    def public(self) -> dict[str, object]:
        return {"device_id": self.device_id, "chunk_seq": self.chunk_seq, "start": self.start,
                "end": round(self.end, 3), "duration": self.duration, "sha256": self.sha256,
                "bytes": self.size, "codec": self.codec, "added_at": self.added_at}



def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


#: How much one read of a stored blob returns at most (a file read, or one `substring()` in PostgreSQL).
READ_BLOCK = 256 * 1024


@dataclass(frozen=True, slots=True)
class AudioBlob:
    """Stored audio bytes the service sends whole or in HTTP ranges: `read(first, last)` yields the
    inclusive byte range in blocks, from a file or from the database, without holding it all in memory."""

    size: int
    read: Callable[[int, int], Iterator[bytes]]

    @classmethod
    def of_file(cls, path: Path) -> AudioBlob:
        def read(first: int, last: int) -> Iterator[bytes]:
            with path.open("rb") as f:
                f.seek(first)
                left = last - first + 1
                while left > 0:
                    block = f.read(min(READ_BLOCK, left))
                    if not block:
                        return
                    left -= len(block)
                    yield block

        return cls(os.stat(path).st_size, read)

    @classmethod
    def of_bytes(cls, data: bytes) -> AudioBlob:
        return cls(len(data), lambda first, last: iter((data[first:last + 1],)))


#: Makes `[start, end]` of a meeting from its chunks (which have files) in a folder, returning the file
#: (`meetmem.cloud.audio_render.render_range`; the store does not import the cloud).
Renderer = Callable[[Sequence[AudioChunk], float, float, Path], Path]


T = TypeVar("T")

#: Renders one audio store runs at once (each takes a core while it decodes and encodes).
RENDERS_AT_ONCE = 2
#: How long a request waits for a render slot before it is told to come back.
RENDER_WAIT_S = 60.0


class RendersBusy(StoreError):
    """Every render slot stayed taken for `RENDER_WAIT_S`: the request may be sent again shortly."""


class SharedRenders:
    """Renders in flight, shared by key, and a bound on how many run at once (issue 30).

    A second request for a stretch that is being made waits for that render's result rather than make it again
    (the page and its reloads ask for the same stretch); different stretches take one of `limit` slots each,
    and a request that waits `wait_s` without one gets `RendersBusy`.
    """

    def __init__(self, limit: int = RENDERS_AT_ONCE, wait_s: float = RENDER_WAIT_S) -> None:
        self._lock = threading.Lock()
        self._flights: dict[Hashable, Future[Any]] = {}
        self._slots = threading.BoundedSemaphore(limit)
        self.wait_s = wait_s
        self.made = 0  # renders run to the end or to an error (not those shared)

    def run(self, key: Hashable, make: Callable[[], T]) -> T:
        """`make()`'s result, made once for every caller asking for `key` while it runs."""
        with self._lock:
            flight = self._flights.get(key)
            if flight is not None:
                owner = False
            else:
                owner, flight = True, Future()
                self._flights[key] = flight
        if not owner:
            return flight.result()
        try:
            if not self._slots.acquire(timeout=self.wait_s):
                raise RendersBusy("the service is making other audio; send the request again in a minute")
            try:
                result = make()
            finally:
                self._slots.release()
                self.made += 1
        except BaseException as exc:
            flight.set_exception(exc)
            raise
        else:
            flight.set_result(result)
            return result
        finally:
            with self._lock:
                del self._flights[key]


def render_key(chunks: Sequence[AudioChunk], start: float, end: float) -> str:
    """The name of a rendered stretch: the same chunks and times give the same key."""
    key = hashlib.sha256(repr((round(start, 3), round(end, 3), [(c.sha256, c.start) for c in chunks])).encode())
    return key.hexdigest()[:32]


def check_chunk_place(chunk_seq: int, start: float) -> None:
    """Refuse a negative chunk number or a start that is not a finite number of seconds, 0 or more."""
    if chunk_seq < 0:
        raise InvalidAudio(f"chunk_seq must be 0 or more, got {chunk_seq}")
    if not (start >= 0) or start == float("inf"):
        raise InvalidAudio(f"start must be a number of seconds, 0 or more, got {start}")


def keep_decision(rows: Iterable[tuple], meeting_id: str, default_keep: bool) -> tuple[bool, str]:
    """Whether audio is kept, and which setting decided it, from the tenant's `audio_policy` rows
    `(meeting_id, keep)` for this meeting and for the tenant (`''`): the meeting's, else the tenant's, else the
    service's default."""
    by_scope = {r[0]: bool(r[1]) for r in rows}
    if meeting_id in by_scope:
        return by_scope[meeting_id], "meeting"
    if "" in by_scope:
        return by_scope[""], "tenant"
    return default_keep, "service"


class MeetingAudio:
    """The audio of every meeting in the log's database, on either engine: the policy, and each chunk's row
    (`meeting_audio`: which device's chunk, where it starts, how long, its sha256), written once. Where the
    bytes live is the one thing the engines do their own way: files beside a SQLite database (`AudioStore`,
    below), `bytea` rows in PostgreSQL (`store/pg/audio.py`'s `PgAudioStore`).

    A chunk is added under the meeting's lock, the one appends and deletion take, so of two uploads racing
    for one (device, chunk seq) one stores and the other finds its row (`new: false`, or 409 for other bytes),
    and no audio is added to a meeting being deleted.

    Args:
        log: the transcript log whose database records the chunks (and whose meetings they belong to).
        default_keep: whether audio uploaded for a meeting with no policy of its own or of its tenant
            is kept (the cloud's `MEETMEM_AUDIO_UPLOAD`; off by default).
    """

    backend = "base"
    _COLUMNS = "meeting_id, device_id, chunk_seq, start, duration, sha256, bytes, codec, added_at, tenant"

    def __init__(self, log: Log, *, default_keep: bool = False) -> None:
        self.log = log
        self.default_keep = default_keep
        self.renders = SharedRenders()
        self._byte_order = log.dialect.byte_order

    # -- policy -------------------------------------------------------------------------------------------
    def set_policy(self, keep: bool, *, tenant: str = DEFAULT_TENANT, meeting_id: str | None = None,
                   set_at: str | None = None) -> None:
        """Keep (or refuse) uploaded audio for one meeting, or for the whole tenant when `meeting_id` is None."""
        with self.log.database.session(tenant) as conn:
            conn.execute("INSERT INTO audio_policy (tenant, meeting_id, keep, set_at) VALUES (?, ?, ?, ?) "
                         "ON CONFLICT (tenant, meeting_id) DO UPDATE SET keep = excluded.keep, "
                         "set_at = excluded.set_at", (tenant, meeting_id or "", bool(keep), set_at or _now()))

    def policies(self) -> list[tuple[str, str | None, bool, str]]:
        """Every setting of every tenant: `(tenant, meeting_id or None for the tenant's, keep, set_at)`."""
        rows = self.log.database.rows(f"SELECT tenant, meeting_id, keep, set_at FROM audio_policy ORDER BY "
                                      f"tenant{self._byte_order}, meeting_id{self._byte_order}", tenant=ALL_TENANTS)
        return [(str(r[0]), str(r[1]) or None, bool(r[2]), str(r[3])) for r in rows]

    def keeps(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> tuple[bool, str]:
        """Whether uploaded audio is kept for this meeting, and which setting decided it."""
        rows = self.log.database.rows("SELECT meeting_id, keep FROM audio_policy WHERE tenant = ? AND "
                                      "meeting_id IN (?, '')", (tenant, meeting_id), tenant=tenant)
        return keep_decision(rows, meeting_id, self.default_keep)

    # -- chunks -------------------------------------------------------------------------------------------
    def add(self, meeting_id: str, device_id: str, chunk_seq: int, data: bytes, *, start: float,
            tenant: str = DEFAULT_TENANT, added_at: str | None = None) -> tuple[AudioChunk, bool]:
        """Store one chunk of a meeting's audio (an Ogg file) starting `start` seconds into the meeting.

        Idempotent by `(device_id, chunk_seq)`: the same bytes again add nothing. `added_at` keeps the time
        another database stored it (`meetmem migrate`); now by default.

        Returns:
            the chunk, and whether it was new.

        Raises:
            MeetingNotFound: the tenant has no such meeting (or it was deleted meanwhile).
            InvalidAudio: not Ogg Opus/Vorbis, or a negative start.
            SequenceError: that chunk is already stored with other bytes.
            StoreError: the bytes could not be written (nothing is stored).
        """
        check_chunk_place(chunk_seq, start)
        self.log.require_meeting(meeting_id, tenant=tenant)
        info = ogg_info(data)
        sha = hashlib.sha256(data).hexdigest()
        existing = self.get(meeting_id, device_id, chunk_seq, tenant=tenant)
        if existing is not None:
            return self._same(existing, sha), False
        staged = self._stage(data, sha)
        key = (tenant, meeting_id)
        try:
            with self.log.database.session(tenant, lock=meeting_id) as conn:
                if conn.execute("SELECT 1 FROM meetings WHERE tenant = ? AND meeting_id = ?", key).fetchone() is None:
                    gone = conn.execute("SELECT deleted_at FROM meeting_deletions WHERE tenant = ? AND "
                                        "meeting_id = ?", key).fetchone()
                    raise MeetingNotFound(tenant, meeting_id, deleted_at=gone[0] if gone else None)
                row = conn.execute(f"SELECT {self._COLUMNS} FROM meeting_audio WHERE tenant = ? AND meeting_id = ? "
                                   "AND device_id = ? AND chunk_seq = ?", (*key, device_id, chunk_seq)).fetchone()
                if row is not None:
                    return self._same(self._chunk(row), sha), False
                self._store(conn, (*key, device_id, chunk_seq, float(start), info.duration, sha, len(data),
                                   info.codec, added_at or _now()), staged, sha)
        finally:
            self._unstage(staged)
        chunk = self.get(meeting_id, device_id, chunk_seq, tenant=tenant)
        assert chunk is not None
        return chunk, True

    @staticmethod
    def _same(existing: AudioChunk, sha: str) -> AudioChunk:
        """The stored chunk, if it holds these bytes; else the (device, chunk seq) was reused."""
        if existing.sha256 != sha:
            raise SequenceError(f"audio chunk {existing.chunk_seq} of device {existing.device_id!r} is already "
                                "stored with other content; a device's chunk numbers must not be reused")
        return existing

    def _chunk(self, row: Sequence[Any]) -> AudioChunk:
        meeting_id, device_id, chunk_seq, start, duration, sha, size, codec, added_at, tenant = row
        return AudioChunk(meeting_id, device_id, int(chunk_seq), float(start), float(duration), sha, int(size),
                          codec, self._file(sha), added_at, tenant)

    def get(self, meeting_id: str, device_id: str, chunk_seq: int, *,
            tenant: str = DEFAULT_TENANT) -> AudioChunk | None:
        rows = self.log.database.rows(f"SELECT {self._COLUMNS} FROM meeting_audio WHERE tenant = ? AND "
                                      "meeting_id = ? AND device_id = ? AND chunk_seq = ?",
                                      (tenant, meeting_id, device_id, chunk_seq), tenant=tenant)
        return self._chunk(rows[0]) if rows else None

    def chunks(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> list[AudioChunk]:
        """The meeting's chunks ordered by start (then device, in byte order, and chunk seq)."""
        rows = self.log.database.rows(f"SELECT {self._COLUMNS} FROM meeting_audio WHERE tenant = ? AND "
                                      f"meeting_id = ? ORDER BY start, device_id{self._byte_order}, chunk_seq",
                                      (tenant, meeting_id), tenant=tenant)
        return [self._chunk(r) for r in rows]

    def chunk_seqs(self, meeting_id: str, device_id: str, *, tenant: str = DEFAULT_TENANT) -> list[int]:
        rows = self.log.database.rows("SELECT chunk_seq FROM meeting_audio WHERE tenant = ? AND meeting_id = ? AND "
                                      "device_id = ? ORDER BY chunk_seq", (tenant, meeting_id, device_id),
                                      tenant=tenant)
        return [int(r[0]) for r in rows]

    # -- where the bytes live: each engine's own ----------------------------------------------------------
    def _file(self, sha256: str) -> Path | None:
        """The file holding a chunk's bytes (None where they are in the database)."""
        return None

    def _stage(self, data: bytes, sha: str) -> Any:
        """Before the chunk's transaction: put the bytes where `_store` can claim them."""
        return data

    def _store(self, conn: Any, values: tuple[Any, ...], staged: Any, sha: str) -> None:
        """Inside the meeting's lock: the chunk's row (`values`, in `_COLUMNS` order but tenant first) and bytes."""
        raise NotImplementedError

    def _unstage(self, staged: Any) -> None:
        """After the transaction, stored or not: drop what `_stage` left."""


class AudioStore(MeetingAudio):
    """Audio beside a SQLite database: chunk files named by their sha256 in a folder beside it.

    Args:
        log: the SQLite transcript log.
        folder: where the files go (default: `<database file>.audio` beside it).
        default_keep: as `MeetingAudio`'s.
    """

    backend = "sqlite"

    def __init__(self, log: TranscriptLog, folder: str | Path | None = None, *, default_keep: bool = False) -> None:
        if log.dialect.backend != "sqlite":
            raise StoreError("AudioStore keeps files beside a SQLite store; for PostgreSQL use audio_store_for(log)")
        super().__init__(log, default_keep=default_keep)
        self.folder = Path(folder) if folder is not None else log.path.with_name(log.path.name + ".audio")

    def _file(self, sha256: str) -> Path:
        return self.folder / sha256[:2] / f"{sha256}.ogg"

    def _stage(self, data: bytes, sha: str) -> str:
        # Written whole under a temporary name first (a crash never leaves half a file behind a recorded hash),
        # then named in the chunk's transaction (`_store`): of two uploads racing for one chunk only one names
        # its file. Deletion removes files under the same lock, so none is named after its rows went (issue 30).
        path = self._file(sha)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".part")
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
        except OSError as exc:
            raise StoreError(f"the audio chunk could not be written ({exc.strerror or 'disk error'})") from exc
        return tmp

    def _store(self, conn: Any, values: tuple[Any, ...], staged: str, sha: str) -> None:
        conn.execute("INSERT INTO meeting_audio (tenant, meeting_id, device_id, chunk_seq, start, duration, sha256, "
                     "bytes, codec, added_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", values)
        try:
            os.replace(staged, self._file(sha))
        except OSError as exc:  # the row is rolled back with the transaction
            raise StoreError(f"the audio chunk could not be written ({exc.strerror or 'disk error'})") from exc

    def _unstage(self, staged: str) -> None:
        if os.path.exists(staged):
            os.unlink(staged)

    def read_bytes(self, chunk: AudioChunk) -> bytes:
        """The chunk's stored bytes.

        Raises:
            StoreError: its file is missing or unreadable.
        """
        assert chunk.path is not None
        try:
            return chunk.path.read_bytes()
        except OSError as exc:  # the path is the operator's business, not the client's: logged, not answered
            log.warning("cannot read the audio file %s: %s", chunk.path, exc.strerror)
            raise StoreError(f"audio chunk {chunk.chunk_seq} of device {chunk.device_id!r} cannot be read "
                             f"({exc.strerror})") from exc

    def blob(self, chunk: AudioChunk) -> AudioBlob:
        """The chunk's bytes, for sending in ranges."""
        assert chunk.path is not None
        return AudioBlob.of_file(chunk.path)

    def render(self, meeting_id: str, chunks: Sequence[AudioChunk], start: float, end: float, *, renderer: Renderer,
               tenant: str = DEFAULT_TENANT) -> AudioBlob:
        """`[start, end]` of the meeting made from `chunks` by `renderer`, cached in `rendered_folder`; requests
        for the same stretch while it is made share that one render."""
        folder = self.rendered_folder(meeting_id, tenant=tenant)
        key = (tenant, meeting_id, render_key(chunks, start, end))
        return AudioBlob.of_file(self.renders.run(key, lambda: renderer(chunks, start, end, folder)))

    def verify(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> list[str]:
        """Problems with the meeting's audio files (missing, or bytes not matching their recorded sha256)."""
        problems = []
        for chunk in self.chunks(meeting_id, tenant=tenant):
            assert chunk.path is not None
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
        with self.log.database.session(tenant, lock=meeting_id) as conn:
            shas = {r[0] for r in conn.execute("SELECT sha256 FROM meeting_audio WHERE tenant = ? AND meeting_id = ?",
                                               (tenant, meeting_id)).fetchall()}
            gone = conn.execute("DELETE FROM meeting_audio WHERE tenant = ? AND meeting_id = ?",
                                (tenant, meeting_id)).rowcount
            self._unlink_unused(conn, shas)
        shutil.rmtree(self.rendered_folder(meeting_id, tenant=tenant), ignore_errors=True)
        return int(gone)

    def _unlink_unused(self, conn: Any, shas: Iterable[str]) -> int:
        """Inside a write transaction (so no upload names a file meanwhile): remove the files of `shas` no row
        names any more; returns how many went."""
        removed = 0
        for sha in set(shas):
            if conn.execute("SELECT 1 FROM meeting_audio WHERE sha256 = ? LIMIT 1", (sha,)).fetchone():
                continue
            path = self._file(sha)
            if path.exists():
                path.unlink(missing_ok=True)
                removed += 1
        return removed

    def remove_files(self, meeting_id: str, shas: Iterable[str], *, tenant: str = DEFAULT_TENANT) -> int:
        """After a meeting's deletion committed (`Log.delete_meeting`): remove its audio files that no other
        meeting's rows name, and its rendered audio; returns how many files went."""
        shutil.rmtree(self.rendered_folder(meeting_id, tenant=tenant), ignore_errors=True)
        with self.log.database.session(tenant, lock=meeting_id) as conn:
            return self._unlink_unused(conn, shas)
