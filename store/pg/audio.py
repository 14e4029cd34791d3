"""A meeting's kept audio in PostgreSQL: `store.audio.AudioStore`'s methods, the bytes in the database.

API processes on PostgreSQL keep nothing of their own and may run on different machines, so the chunks are
`bytea` rows (the schema, with the reasons against large objects, is migrations/versions/b22a01_audio):
under the tenant's row-level security, idempotent by `(device_id, chunk_seq)`, held to their sha256 by the
database, read in byte ranges with `substring()`, and removed with the meeting under its tombstone. A chunk
is written under the meeting's advisory lock, the one appends and deletion take, so no audio is added to a
meeting being deleted. A stretch made for the player (several chunks joined) is cached in the database too,
shared by every process, and goes with the chunks.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..audio import (
    READ_BLOCK,
    AudioBlob,
    AudioChunk,
    Renderer,
    SharedRenders,
    check_chunk_place,
    keep_decision,
    ogg_info,
    render_key,
)
from ..errors import MeetingNotFound, SequenceError
from ..log import DEFAULT_TENANT
from .connections import ALL_TENANTS
from .log import PgTranscriptLog

#: Rendered stretches one meeting keeps (as `cloud.audio_render.KEEP_RENDERED` does on disk).
KEEP_RENDERED = 8

_COLUMNS = "meeting_id, device_id, chunk_seq, start, duration, sha256, bytes, codec, added_at, tenant"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _chunk(row: Sequence[Any]) -> AudioChunk:
    meeting_id, device_id, chunk_seq, start, duration, sha, size, codec, added_at, tenant = row
    return AudioChunk(meeting_id, device_id, int(chunk_seq), float(start), float(duration), sha, int(size), codec,
                      None, added_at, tenant)


class PgAudioStore:
    """The audio of every meeting in the log's PostgreSQL database.

    Args:
        log: the transcript log whose database holds the chunks.
        default_keep: whether audio uploaded for a meeting with no policy of its own or of its tenant is kept.
    """

    backend = "postgres"

    def __init__(self, log: PgTranscriptLog, *, default_keep: bool = False) -> None:
        self.log = log
        self.default_keep = default_keep
        self.renders = SharedRenders()

    # -- policy -------------------------------------------------------------------------------------------
    def set_policy(self, keep: bool, *, tenant: str = DEFAULT_TENANT, meeting_id: str | None = None,
                   set_at: str | None = None) -> None:
        """Keep (or refuse) uploaded audio for one meeting, or for the whole tenant when `meeting_id` is None."""
        with self.log._session(tenant) as conn:
            conn.execute("INSERT INTO audio_policy (tenant, meeting_id, keep, set_at) VALUES (%s, %s, %s, %s) "
                         "ON CONFLICT (tenant, meeting_id) DO UPDATE SET keep = excluded.keep, "
                         "set_at = excluded.set_at",
                         (tenant, meeting_id or "", bool(keep), set_at or _now()))

    def keeps(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> tuple[bool, str]:
        """Whether uploaded audio is kept for this meeting, and which setting decided it."""
        rows = self.log._rows("SELECT meeting_id, keep FROM audio_policy WHERE tenant = %s AND meeting_id IN (%s, '')",
                              (tenant, meeting_id), tenant=tenant)
        return keep_decision(rows, meeting_id, self.default_keep)

    def policies(self) -> list[tuple[str, str | None, bool, str]]:
        """Every setting of every tenant: `(tenant, meeting_id or None for the tenant's, keep, set_at)`."""
        rows = self.log._rows('SELECT tenant, meeting_id, keep, set_at FROM audio_policy ORDER BY tenant COLLATE "C", '
                              'meeting_id COLLATE "C"', tenant=ALL_TENANTS)
        return [(str(r[0]), str(r[1]) or None, bool(r[2]), str(r[3])) for r in rows]

    # -- chunks -------------------------------------------------------------------------------------------
    def add(self, meeting_id: str, device_id: str, chunk_seq: int, data: bytes, *, start: float,
            tenant: str = DEFAULT_TENANT, added_at: str | None = None) -> tuple[AudioChunk, bool]:
        """Store one chunk (as `AudioStore.add`): idempotent by `(device_id, chunk_seq)`.

        Raises:
            MeetingNotFound: the tenant has no such meeting (or it was deleted meanwhile).
            InvalidAudio: not Ogg Opus/Vorbis, or a negative start.
            SequenceError: that chunk is already stored with other bytes.
            StoreError: the database refused (nothing is stored).
        """
        check_chunk_place(chunk_seq, start)
        info = ogg_info(data)
        sha = hashlib.sha256(data).hexdigest()
        key = (tenant, meeting_id)
        with self.log._session(tenant) as conn:
            self.log._lock_meeting(conn, tenant, meeting_id)
            if conn.execute("SELECT 1 FROM meetings WHERE tenant = %s AND meeting_id = %s", key).fetchone() is None:
                gone = conn.execute("SELECT deleted_at FROM meeting_deletions WHERE tenant = %s AND meeting_id = %s",
                                    key).fetchone()
                raise MeetingNotFound(tenant, meeting_id, deleted_at=gone[0] if gone else None)
            row = conn.execute(f"SELECT {_COLUMNS} FROM meeting_audio WHERE tenant = %s AND meeting_id = %s AND "
                               "device_id = %s AND chunk_seq = %s", (*key, device_id, chunk_seq)).fetchone()
            if row is not None:
                existing = _chunk(row)
                if existing.sha256 != sha:
                    raise SequenceError(f"audio chunk {chunk_seq} of device {device_id!r} is already stored with "
                                        "other content; a device's chunk numbers must not be reused")
                return existing, False
            # %b: the bytes go in binary, not as an escaped text twice their size.
            row = conn.execute(
                "INSERT INTO meeting_audio (tenant, meeting_id, device_id, chunk_seq, start, duration, sha256, bytes, "
                f"codec, added_at, data) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %b) RETURNING {_COLUMNS}",
                (*key, device_id, chunk_seq, float(start), info.duration, sha, len(data), info.codec,
                 added_at or _now(), data)).fetchone()
        return _chunk(row), True

    def get(self, meeting_id: str, device_id: str, chunk_seq: int, *,
            tenant: str = DEFAULT_TENANT) -> AudioChunk | None:
        rows = self.log._rows(f"SELECT {_COLUMNS} FROM meeting_audio WHERE tenant = %s AND meeting_id = %s AND "
                              "device_id = %s AND chunk_seq = %s", (tenant, meeting_id, device_id, chunk_seq),
                              tenant=tenant)
        return _chunk(rows[0]) if rows else None

    def chunks(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> list[AudioChunk]:
        """The meeting's chunks ordered by start (then device and chunk seq, in byte order as SQLite sorts)."""
        rows = self.log._rows(f"SELECT {_COLUMNS} FROM meeting_audio WHERE tenant = %s AND meeting_id = %s "
                              'ORDER BY start, device_id COLLATE "C", chunk_seq', (tenant, meeting_id), tenant=tenant)
        return [_chunk(r) for r in rows]

    def chunk_seqs(self, meeting_id: str, device_id: str, *, tenant: str = DEFAULT_TENANT) -> list[int]:
        rows = self.log._rows("SELECT chunk_seq FROM meeting_audio WHERE tenant = %s AND meeting_id = %s AND "
                              "device_id = %s ORDER BY chunk_seq", (tenant, meeting_id, device_id), tenant=tenant)
        return [int(r[0]) for r in rows]

    def _read(self, table: str, where: str, params: tuple[Any, ...], first: int, last: int,
              tenant: str) -> Iterator[bytes]:
        # One short transaction per block: a long download holds no connection (or snapshot) between blocks.
        # `substring` counts from 1 and reads only the TOAST slices it covers (the column is STORAGE EXTERNAL).
        pos = first
        while pos <= last:
            size = min(READ_BLOCK, last - pos + 1)
            with self.log._session(tenant) as conn:
                row = conn.execute(f"SELECT substring(data FROM %s FOR %s) FROM {table} WHERE {where}",
                                   (pos + 1, size, *params), binary=True).fetchone()
            if row is None or not row[0]:
                return  # deleted meanwhile: the response ends short rather than send other bytes
            block = bytes(row[0])
            yield block
            pos += len(block)

    def read_bytes(self, chunk: AudioChunk) -> bytes:
        """The chunk's stored bytes (empty if it was deleted meanwhile)."""
        return b"".join(self.blob(chunk).read(0, chunk.size - 1))

    def blob(self, chunk: AudioChunk) -> AudioBlob:
        """The chunk's bytes, for sending in ranges (its sha256 is part of the key: never other bytes)."""
        where = "tenant = %s AND meeting_id = %s AND device_id = %s AND chunk_seq = %s AND sha256 = %s"
        params = (chunk.tenant, chunk.meeting_id, chunk.device_id, chunk.chunk_seq, chunk.sha256)
        return AudioBlob(chunk.size, lambda first, last: self._read("meeting_audio", where, params, first, last,
                                                                     chunk.tenant))

    def _rendered_blob(self, meeting_id: str, key: str, size: int, tenant: str) -> AudioBlob:
        where = "tenant = %s AND meeting_id = %s AND render_key = %s"
        params = (tenant, meeting_id, key)
        return AudioBlob(size, lambda first, last: self._read("meeting_audio_rendered", where, params, first, last,
                                                               tenant))

    def render(self, meeting_id: str, chunks: Sequence[AudioChunk], start: float, end: float, *, renderer: Renderer,
               tenant: str = DEFAULT_TENANT) -> AudioBlob:
        """`[start, end]` of the meeting made from `chunks` by `renderer`, once, then kept in the database for
        every process (the few most recent per meeting)."""
        key = render_key(chunks, start, end)
        held = self.log._rows("SELECT bytes FROM meeting_audio_rendered WHERE tenant = %s AND meeting_id = %s AND "
                              "render_key = %s", (tenant, meeting_id, key), tenant=tenant)
        if held:
            return self._rendered_blob(meeting_id, key, int(held[0][0]), tenant)
        # Requests for this stretch while it is made (in this process) share the one render.
        return self.renders.run((tenant, meeting_id, key),
                                lambda: self._render(meeting_id, chunks, start, end, key, renderer, tenant))

    def _render(self, meeting_id: str, chunks: Sequence[AudioChunk], start: float, end: float, key: str,
                renderer: Renderer, tenant: str) -> AudioBlob:
        held = self.log._rows("SELECT bytes FROM meeting_audio_rendered WHERE tenant = %s AND meeting_id = %s AND "
                              "render_key = %s", (tenant, meeting_id, key), tenant=tenant)
        if held:  # made by another process while this one waited for a slot
            return self._rendered_blob(meeting_id, key, int(held[0][0]), tenant)
        with tempfile.TemporaryDirectory(prefix="meetmem-audio-") as tmp:
            local = []
            for i, chunk in enumerate(chunks):
                path = Path(tmp) / f"{i}.ogg"
                path.write_bytes(self.read_bytes(chunk))
                local.append(replace(chunk, path=path))
            data = renderer(local, start, end, Path(tmp) / "rendered").read_bytes()
        wanted = [(c.device_id, c.chunk_seq, c.sha256) for c in chunks]
        with self.log._session(tenant) as conn:
            self.log._lock_meeting(conn, tenant, meeting_id)
            present = conn.execute(
                "SELECT COUNT(*) FROM meeting_audio a JOIN unnest(%s::text[], %s::bigint[], %s::text[]) "
                "AS w(device_id, chunk_seq, sha256) USING (device_id, chunk_seq, sha256) "
                "WHERE a.tenant = %s AND a.meeting_id = %s",
                ([w[0] for w in wanted], [w[1] for w in wanted], [w[2] for w in wanted], tenant, meeting_id),
            ).fetchone()[0]
            if present != len(wanted):
                # The audio was deleted (or the meeting) while this was made: answer it, keep nothing of it.
                return AudioBlob.of_bytes(data)
            conn.execute("INSERT INTO meeting_audio_rendered (tenant, meeting_id, render_key, bytes, made_at, data) "
                         "VALUES (%s, %s, %s, %s, %s, %b) ON CONFLICT DO NOTHING",
                         (tenant, meeting_id, key, len(data), datetime.now(UTC).isoformat(), data))
            # A live meeting gains chunks, and each new set is a new stretch: keep only the most recent few.
            conn.execute("DELETE FROM meeting_audio_rendered WHERE tenant = %s AND meeting_id = %s AND "
                         "render_key NOT IN (SELECT render_key FROM meeting_audio_rendered WHERE tenant = %s AND "
                         "meeting_id = %s ORDER BY made_at DESC LIMIT %s)",
                         (tenant, meeting_id, tenant, meeting_id, KEEP_RENDERED))
        return self._rendered_blob(meeting_id, key, len(data), tenant)

    def verify(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> list[str]:
        """Problems with the meeting's stored audio (bytes not matching their recorded sha256 or size); the
        database refuses such rows, so only someone who switched its checks off could leave one."""
        rows = self.log._rows("SELECT device_id, chunk_seq, encode(sha256(data), 'hex') = sha256, "
                              "octet_length(data) = bytes FROM meeting_audio WHERE tenant = %s AND meeting_id = %s "
                              'ORDER BY start, device_id COLLATE "C", chunk_seq', (tenant, meeting_id), tenant=tenant)
        problems = []
        for device_id, chunk_seq, sha_ok, size_ok in rows:
            if not sha_ok:
                problems.append(f"chunk {chunk_seq} of {device_id}: sha256 does not match")
            elif not size_ok:
                problems.append(f"chunk {chunk_seq} of {device_id}: size does not match")
        return problems

    def delete(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> int:
        """Remove the meeting's audio (chunks and what was made from them); returns how many chunks.

        The transcript log is not touched: its rows and hash chain stay exactly as they were.
        """
        self.log.require_meeting(meeting_id, tenant=tenant)
        with self.log._session(tenant) as conn:
            self.log._lock_meeting(conn, tenant, meeting_id)
            gone = conn.execute("DELETE FROM meeting_audio WHERE tenant = %s AND meeting_id = %s RETURNING 1",
                                (tenant, meeting_id)).fetchall()
        return len(gone)

    def remove_files(self, meeting_id: str, shas: Any, *, tenant: str = DEFAULT_TENANT) -> int:
        """Nothing to do: a deleted meeting's audio left with its rows, in the deletion's own transaction."""
        return 0
