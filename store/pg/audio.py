"""A meeting's kept audio in PostgreSQL: `store.audio.MeetingAudio` with the bytes in the database.

API processes on PostgreSQL keep nothing of their own and may run on different machines, so the chunks are
`bytea` rows (the schema, with the reasons against large objects, is migrations/versions/b22a01_audio):
under the tenant's row-level security, idempotent by `(device_id, chunk_seq)`, held to their sha256 by the
database, read in byte ranges with `substring()`, and removed with the meeting under its tombstone. A chunk
is written under the meeting's advisory lock, the one appends and deletion take, so no audio is added to a
meeting being deleted. A stretch made for the player (several chunks joined) is cached in the database too,
shared by every process, and goes with the chunks.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..audio import READ_BLOCK, AudioBlob, AudioChunk, MeetingAudio, Renderer, render_key
from ..log import DEFAULT_TENANT

#: Rendered stretches one meeting keeps (as `cloud.audio_render.KEEP_RENDERED` does on disk).
KEEP_RENDERED = 8


class PgAudioStore(MeetingAudio):
    """The audio of every meeting in the log's PostgreSQL database, the bytes in its rows (the rows and the
    policy are `MeetingAudio`'s, written once for both engines).

    Args:
        log: the transcript log whose database holds the chunks.
        default_keep: whether audio uploaded for a meeting with no policy of its own or of its tenant is kept.
    """

    backend = "postgres"

    def _store(self, conn: Any, values: tuple[Any, ...], staged: bytes, sha: str) -> None:
        # %b: the bytes go in binary, not as an escaped text twice their size.
        conn.execute("INSERT INTO meeting_audio (tenant, meeting_id, device_id, chunk_seq, start, duration, sha256, "
                     "bytes, codec, added_at, data) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %b)",
                     (*values, staged))

    def _read(self, table: str, where: str, params: tuple[Any, ...], first: int, last: int,
              tenant: str) -> Iterator[bytes]:
        # One short transaction per block: a long download holds no connection (or snapshot) between blocks.
        # `substring` counts from 1 and reads only the TOAST slices it covers (the column is STORAGE EXTERNAL).
        pos = first
        while pos <= last:
            size = min(READ_BLOCK, last - pos + 1)
            with self.log.database.session(tenant) as conn:
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
        held = self._held(meeting_id, key, tenant)
        if held:
            return self._rendered_blob(meeting_id, key, int(held[0][0]), tenant)
        # Requests for this stretch while it is made (in this process) share the one render.
        return self.renders.run((tenant, meeting_id, key),
                                lambda: self._render(meeting_id, chunks, start, end, key, renderer, tenant))

    def _held(self, meeting_id: str, key: str, tenant: str) -> list[tuple[Any, ...]]:
        return self.log.database.rows("SELECT bytes FROM meeting_audio_rendered WHERE tenant = ? AND meeting_id = ? "
                                      "AND render_key = ?", (tenant, meeting_id, key), tenant=tenant)

    def _render(self, meeting_id: str, chunks: Sequence[AudioChunk], start: float, end: float, key: str,
                renderer: Renderer, tenant: str) -> AudioBlob:
        held = self._held(meeting_id, key, tenant)
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
        with self.log.database.session(tenant, lock=meeting_id) as conn:
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
        rows = self.log.database.rows("SELECT device_id, chunk_seq, encode(sha256(data), 'hex') = sha256, "
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
        with self.log.database.session(tenant, lock=meeting_id) as conn:
            gone = conn.execute("DELETE FROM meeting_audio WHERE tenant = %s AND meeting_id = %s RETURNING 1",
                                (tenant, meeting_id)).fetchall()
        return len(gone)

    def remove_files(self, meeting_id: str, shas: Any, *, tenant: str = DEFAULT_TENANT) -> int:
        """Nothing to do: a deleted meeting's audio left with its rows, in the deletion's own transaction."""
        return 0
