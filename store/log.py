"""The append-only, hash-chained transcript log: the single source of truth, written once for both engines.

One write path (`Log.append`) adds segments; the database itself refuses UPDATE and DELETE on the log
(SQLite's triggers, PostgreSQL's grants and triggers), and a replayed `(device_id, seq)` is ignored rather
than replaced. Each meeting's rows form a hash chain in arrival order, so `verify` can show that nothing was
altered behind the database's back. Indexes, summaries and the ledger are derived from this table and can
always be rebuilt from it.

`Log` speaks to its database through `store/database.py` alone; `TranscriptLog` (here) opens a SQLite file
and `PgTranscriptLog` (store/pg/log.py) a PostgreSQL database. A meeting's dump and load (`meetmem migrate`)
are `store/dump.py`; closing and deleting meetings (and the tombstones deletion leaves),
`store/lifecycle.py`; the retention settings, `store/retention.py`: each a part of `Log`, written once too.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from .batch import plan_batch
from .database import ALL_TENANTS, Database, WriteConflict, chunks, marks
from .dump import MeetingDumps
from .errors import InvalidSegment, MeetingDeleted, MeetingNotFound, SequenceError, StoreError
from .interchange import check_id, check_segment_input
from .lifecycle import MeetingLifecycle
from .meeting_meta import MeetingMeta, meta_from_row, write_meta
from .receipts import Receipt, ReceiptKey
from .records import (
    DEFAULT_TENANT,
    GENESIS_HASH,
    AppendResult,
    ChainReport,
    Segment,
    SegmentInput,
    segment_id_for,
    utc_now,
)
from .retention import RetentionSettings
from .rows import SEGMENT_COLUMNS, SEGMENT_SELECT, row_to_segment
from .sqlite_database import SqliteDatabase
from .verify import check_chain

log = logging.getLogger(__name__)


def _check_text(segments: Sequence[SegmentInput]) -> None:
    # PostgreSQL's text cannot hold NUL; SQLite can. Refused up front, naming the segment.
    for item in segments:
        for name in ("text", "raw_text", "speaker", "lang", "supersedes"):
            value = getattr(item, name)
            if isinstance(value, str) and "\x00" in value:
                raise InvalidSegment(f"{name} contains a NUL character, which the database cannot store",
                                     seq=item.seq)


class Log(MeetingDumps, MeetingLifecycle, RetentionSettings):
    """The transcript log in one database, on either engine.

    Safe to share between threads (and, on PostgreSQL, between processes): a batch is written in one
    session holding its meeting's lock, so concurrent appends keep each chain intact.

    Args:
        database: the database (`store/database.py`).
        clock: the arrival time stamped on each batch (UTC, ISO 8601); the wall clock by default.
    """

    backend = "base"

    def __init__(self, database: Database, *, clock: Callable[[], str] | None = None) -> None:
        self.database = database
        self.dialect = database.dialect
        self.path = database.path
        self._clock = clock or utc_now

    def close(self) -> None:
        self.database.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _rows(self, sql: str, params: Sequence[Any] = (), *, tenant: str) -> list[tuple[Any, ...]]:
        return self.database.rows(sql, params, tenant=tenant)

    # -- the one write path -----------------------------------------------------------------------------
    def append(
        self,
        meeting_id: str,
        device_id: str,
        segments: Sequence[SegmentInput],
        *,
        tenant: str = DEFAULT_TENANT,
        meta: MeetingMeta | None = None,
    ) -> AppendResult:
        """Append a batch of one device's segments to a meeting, all or nothing.

        `meta` (title, start, participants) is stored on the meeting in the same transaction: a refused
        batch leaves no metadata behind.

        A segment whose `(device_id, seq)` is already stored with the same content is a replay and adds
        nothing; the same `seq` with different content is refused. A device's new `seq` values must be
        greater than those it already stored. A segment with `supersedes` corrects an earlier segment of
        the same meeting; the earlier one stays readable.

        Returns:
            the stored rows in chain order, and how many of the batch were replays.

        Raises:
            InvalidSegment, SequenceError: nothing of the batch is stored.
        """
        check_id("meeting id", meeting_id)
        check_id("device id", device_id)
        check_id("tenant", tenant)
        if not segments:
            if meta is not None and not meta.empty and self.has_meeting(meeting_id, tenant=tenant):
                with self.database.session(tenant, lock=meeting_id) as conn:
                    write_meta(conn, tenant, meeting_id, meta)
            return AppendResult()
        for item in segments:
            check_segment_input(item)
        if not self.dialect.stores_nul:
            _check_text(segments)
        ordered = sorted(segments, key=lambda s: s.seq)
        for before, after in zip(ordered, ordered[1:], strict=False):
            if before.seq == after.seq and before != after:
                raise SequenceError(f"seq {after.seq} appears twice in the batch with different content")
        try:
            with self.database.session(tenant, lock=meeting_id) as conn:
                result = self._append_locked(conn, tenant, meeting_id, device_id, ordered)
                if meta is not None:
                    write_meta(conn, tenant, meeting_id, meta)
                return result
        except WriteConflict as exc:
            raise StoreError("concurrent append to the same meeting; retry the batch") from exc

    def _append_locked(self, conn: Any, tenant: str, meeting_id: str, device_id: str,
                       ordered: Sequence[SegmentInput]) -> AppendResult:
        gone = conn.execute("SELECT deleted_at FROM meeting_deletions WHERE tenant = ? AND meeting_id = ?",
                            (tenant, meeting_id)).fetchone()
        if gone is not None:
            raise MeetingDeleted(tenant, meeting_id, gone[0])
        # The batch's arrival time: a new meeting's `created_at` is when the server first stored a row of it
        # (retention counts a meeting's age from it, never from a time the device gave).
        received_at = self._clock()
        conn.execute("INSERT INTO meetings (tenant, meeting_id, created_at) VALUES (?, ?, ?) "
                     "ON CONFLICT (tenant, meeting_id) DO NOTHING", (tenant, meeting_id, received_at))
        ids = [segment_id_for(tenant, meeting_id, device_id, s.seq) for s in ordered]
        stored: dict[str, Segment] = {}
        for chunk in chunks(ids):
            for row in conn.execute(f"SELECT {SEGMENT_SELECT} FROM segments WHERE segment_id IN "
                                    f"({marks(len(chunk))})", chunk).fetchall():
                seg = row_to_segment(row)
                stored[seg.segment_id] = seg
        max_seq = conn.execute("SELECT MAX(seq) FROM segments WHERE tenant = ? AND meeting_id = ? AND device_id = ?",
                               (tenant, meeting_id, device_id)).fetchone()[0]
        last = conn.execute("SELECT chain_pos, hash FROM segments WHERE tenant = ? AND meeting_id = ? "
                            "ORDER BY chain_pos DESC LIMIT 1", (tenant, meeting_id)).fetchone()
        pos, prev = (int(last[0]) + 1, str(last[1])) if last else (0, GENESIS_HASH)

        def supersedes_exists(segment_id: str) -> bool:
            return conn.execute("SELECT 1 FROM segments WHERE segment_id = ? AND tenant = ? AND meeting_id = ?",
                                (segment_id, tenant, meeting_id)).fetchone() is not None

        plan = plan_batch(tenant=tenant, meeting_id=meeting_id, device_id=device_id, ordered=ordered, ids=ids,
                          stored=stored, max_seq=-1 if max_seq is None else int(max_seq), next_pos=pos,
                          prev_hash=prev, received_at=received_at, supersedes_exists=supersedes_exists)
        if plan.rows:
            columns = ", ".join(f'"{c}"' for c in SEGMENT_COLUMNS)
            conn.executemany(f"INSERT INTO segments ({columns}) VALUES ({marks(len(SEGMENT_COLUMNS))})",
                             [tuple(r[c] for c in SEGMENT_COLUMNS) for r in plan.rows])
            if self.dialect.ignores_replays and conn.execute(
                    "SELECT COUNT(*) FROM segments WHERE tenant = ? AND meeting_id = ? AND chain_pos >= ?",
                    (tenant, meeting_id, plan.rows[0]["chain_pos"])).fetchone()[0] != len(plan.rows):
                # Another writer took these chain positions between our read and our insert, and the table
                # dropped our rows rather than refuse them (PostgreSQL's unique keys raise instead).
                raise WriteConflict("another writer took these chain positions")
            conn.execute("INSERT INTO meeting_heads (tenant, meeting_id, head_pos, head_hash) VALUES (?, ?, ?, ?) "
                         "ON CONFLICT (tenant, meeting_id) DO UPDATE SET head_pos = excluded.head_pos, "
                         "head_hash = excluded.head_hash", (tenant, meeting_id, plan.head_pos, plan.head_hash))
        return AppendResult(added=tuple(plan.added), duplicates=plan.duplicates, head_pos=plan.head_pos,
                            head_hash=plan.head_hash)

    # -- reads ------------------------------------------------------------------------------------------
    def has_meeting(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> bool:
        return bool(self._rows("SELECT 1 FROM meetings WHERE tenant = ? AND meeting_id = ?", (tenant, meeting_id),
                               tenant=tenant))

    def require_meeting(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> None:
        if not self.has_meeting(meeting_id, tenant=tenant):
            gone = self._rows("SELECT deleted_at FROM meeting_deletions WHERE tenant = ? AND meeting_id = ?",
                              (tenant, meeting_id), tenant=tenant)
            raise MeetingNotFound(tenant, meeting_id, deleted_at=gone[0][0] if gone else None)

    def meetings(self, *, tenant: str | None = None) -> list[tuple[str, str]]:
        """`(tenant, meeting_id)` of every meeting, oldest first; all tenants when `tenant` is None."""
        order = f"ORDER BY created_at, {self.dialect.ordinal}"
        if tenant is None:
            rows = self._rows(f"SELECT tenant, meeting_id FROM meetings {order}", tenant=ALL_TENANTS)
        else:
            rows = self._rows(f"SELECT tenant, meeting_id FROM meetings WHERE tenant = ? {order}", (tenant,),
                              tenant=tenant)
        return [(r[0], r[1]) for r in rows]

    def meta(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> MeetingMeta:
        """The meeting's title, start and participants, as far as they were given.

        Raises:
            MeetingNotFound: the tenant has no such meeting.
        """
        rows = self._rows("SELECT title, started_at, participants FROM meetings WHERE tenant = ? AND meeting_id = ?",
                          (tenant, meeting_id), tenant=tenant)
        if not rows:
            raise MeetingNotFound(tenant, meeting_id)
        return meta_from_row(*rows[0])

    def segments(
        self,
        meeting_id: str,
        *,
        tenant: str = DEFAULT_TENANT,
        start: float | None = None,
        end: float | None = None,
        include_superseded: bool = False,
    ) -> list[Segment]:
        """A meeting's segments ordered by start, device id and seq (the CONTRACT's listing order).

        `start` / `end` keep the segments that overlap that time range. Corrected segments are left out
        unless `include_superseded`.

        Raises:
            MeetingNotFound: the tenant has no such meeting.
        """
        self.require_meeting(meeting_id, tenant=tenant)
        where = ["tenant = ?", "meeting_id = ?"]
        args: list[Any] = [tenant, meeting_id]
        if start is not None:
            where.append('"end" >= ?')
            args.append(start)
        if end is not None:
            where.append("start <= ?")
            args.append(end)
        if not include_superseded:
            where.append(
                "segment_id NOT IN (SELECT supersedes FROM segments WHERE tenant = ? AND meeting_id = ? "
                "AND supersedes IS NOT NULL)"
            )
            args.extend([tenant, meeting_id])
        # Device ids in byte order on either engine, whatever the database's locale.
        sql = (f"SELECT {SEGMENT_SELECT} FROM segments WHERE {' AND '.join(where)} "
               f"ORDER BY start, device_id{self.dialect.byte_order}, seq")
        return [row_to_segment(r) for r in self._rows(sql, args, tenant=tenant)]

    def get(self, segment_ids: Iterable[str]) -> dict[str, Segment]:
        """Segments by id (any meeting, any tenant: callers check ownership)."""
        found: dict[str, Segment] = {}
        for chunk in chunks(list(dict.fromkeys(segment_ids))):
            for row in self._rows(f"SELECT {SEGMENT_SELECT} FROM segments WHERE segment_id IN ({marks(len(chunk))})",
                                  chunk, tenant=ALL_TENANTS):
                seg = row_to_segment(row)
                found[seg.segment_id] = seg
        return found

    def superseded_ids(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> set[str]:
        rows = self._rows("SELECT supersedes FROM segments WHERE tenant = ? AND meeting_id = ? AND "
                          "supersedes IS NOT NULL", (tenant, meeting_id), tenant=tenant)
        return {r[0] for r in rows}

    def chain(
        self, meeting_id: str, *, tenant: str = DEFAULT_TENANT, after_pos: int = -1, limit: int | None = None
    ) -> Iterator[Segment]:
        """A meeting's rows in arrival (chain) order, from `after_pos + 1` on (at most `limit` of them)."""
        sql = (f"SELECT {SEGMENT_SELECT} FROM segments WHERE tenant = ? AND meeting_id = ? AND chain_pos > ? "
               "ORDER BY chain_pos")
        args: list[Any] = [tenant, meeting_id, after_pos]
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        for row in self._rows(sql, args, tenant=tenant):
            yield row_to_segment(row)

    def last_chain_pos(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> int:
        """The chain position of the meeting's newest row (-1 when it has none)."""
        rows = self._rows("SELECT MAX(chain_pos) FROM segments WHERE tenant = ? AND meeting_id = ?",
                          (tenant, meeting_id), tenant=tenant)
        return -1 if not rows or rows[0][0] is None else int(rows[0][0])

    def meeting_stats(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> tuple[int, float]:
        """How many current (uncorrected) segments a meeting holds, and where its last one ends (seconds)."""
        self.require_meeting(meeting_id, tenant=tenant)
        rows = self._rows(
            'SELECT COUNT(*), COALESCE(MAX("end"), 0) FROM segments WHERE tenant = ? AND meeting_id = ? '
            "AND segment_id NOT IN (SELECT supersedes FROM segments WHERE tenant = ? AND meeting_id = ? "
            "AND supersedes IS NOT NULL)", (tenant, meeting_id, tenant, meeting_id), tenant=tenant)
        return int(rows[0][0]), float(rows[0][1])

    def count(self) -> int:
        return int(self._rows("SELECT COUNT(*) FROM segments", tenant=ALL_TENANTS)[0][0])

    def languages(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> tuple[str, ...]:
        """The languages the meeting's segments are tagged with, sorted."""
        return tuple(r[0] for r in self._rows(
            f"SELECT DISTINCT lang{self.dialect.byte_order} FROM segments WHERE tenant = ? AND meeting_id = ? "
            "AND lang IS NOT NULL ORDER BY 1", (tenant, meeting_id), tenant=tenant))

    def device_first_start(self, meeting_id: str, device_id: str, *, tenant: str = DEFAULT_TENANT) -> float | None:
        """Where a device's first segment of the meeting starts (None: it sent none)."""
        rows = self._rows("SELECT MIN(start) FROM segments WHERE tenant = ? AND meeting_id = ? AND device_id = ?",
                          (tenant, meeting_id, device_id), tenant=tenant)
        return float(rows[0][0]) if rows and rows[0][0] is not None else None

    # -- integrity --------------------------------------------------------------------------------------
    def head(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> tuple[int, str] | None:
        """The meeting's recorded head (last chain position, its hash), kept apart from the segments."""
        rows = self._rows("SELECT head_pos, head_hash FROM meeting_heads WHERE tenant = ? AND meeting_id = ?",
                          (tenant, meeting_id), tenant=tenant)
        return (int(rows[0][0]), str(rows[0][1])) if rows else None

    def verify(
        self, meeting_id: str, *, tenant: str = DEFAULT_TENANT, receipts: Sequence[Receipt] = (),
        key: ReceiptKey | None = None,
    ) -> ChainReport:
        """Recompute a meeting's hash chain and check where it ends (`verify.check_chain` says how), on one
        snapshot of the database.

        Raises:
            MeetingNotFound: the tenant has no such meeting.
            ReceiptError: a receipt of this meeting was not signed by `key` (or no key was given).
        """
        self.require_meeting(meeting_id, tenant=tenant)
        args = (tenant, meeting_id)
        with self.database.session(tenant, snapshot=True) as conn:
            through = conn.execute("SELECT COALESCE(MAX(through_pos), -1) FROM meeting_closures WHERE tenant = ? "
                                   "AND meeting_id = ?", args).fetchone()[0]
            head_row = conn.execute("SELECT head_pos, head_hash FROM meeting_heads WHERE tenant = ? AND "
                                    "meeting_id = ?", args).fetchone()
            rows = conn.execute(f"SELECT {SEGMENT_SELECT} FROM segments WHERE tenant = ? AND meeting_id = ? "
                                "ORDER BY chain_pos", args).fetchall()
        head = (int(head_row[0]), str(head_row[1])) if head_row else None
        mine = [r for r in receipts if (r.tenant, r.meeting_id) == (tenant, meeting_id)]
        return check_chain(meeting_id, map(row_to_segment, rows), head=head, closed_through=int(through),
                           receipts=mine, key=key)


class TranscriptLog(Log):
    """The transcript log of one SQLite file (the embedded default; `store/sqlite_database.py`).

    Args:
        path: the database file; created with its schema when missing.
        max_bytes: a cap on the file's size (SQLite's `max_page_count`); a batch that would pass it is
            refused whole with a StoreError, as on a full disk. None: no cap.
        clock: the arrival time stamped on each batch (UTC, ISO 8601); the wall clock by default.
    """

    backend = "sqlite"
    database: SqliteDatabase

    def __init__(self, path: str | Path, *, max_bytes: int | None = None,
                 clock: Callable[[], str] | None = None) -> None:
        super().__init__(SqliteDatabase(path, max_bytes=max_bytes), clock=clock)

    @property
    def db(self) -> Any:
        """sqlite-utils over the writer connection, for the SQLite-only code (the vector cache, benches)."""
        return self.database.db

    def __enter__(self) -> TranscriptLog:
        return self

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        """A write transaction on the file (`BEGIN IMMEDIATE`): all or nothing, the driver's errors as they are."""
        return self.database.transaction()

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run a read-only query on a reader connection (committed data only)."""
        return self.database.rows(sql, params)
