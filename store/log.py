"""The append-only, hash-chained transcript log in SQLite: the single source of truth.

One write path (`TranscriptLog.append`) adds segments; the database itself refuses UPDATE and DELETE on
the log (triggers), and a replayed `(device_id, seq)` is ignored rather than replaced. Each meeting's rows
form a hash chain in arrival order, so `verify` can show that nothing was altered behind the triggers'
back. Indexes, summaries and the ledger are derived from this table and can always be rebuilt from it.

A meeting's dump and load (`meetmem migrate`) are `store/dump.py`; closing and deleting meetings (and the
tombstones deletion leaves), `store/lifecycle.py`; the retention settings it keeps, `store/retention.py`.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlite_utils

from .batch import plan_batch
from .dump import MeetingDumps
from .errors import ImmutableLog, MeetingDeleted, MeetingNotFound, SequenceError, StoreError
from .interchange import check_id, check_segment_input
from .lifecycle import MeetingLifecycle
from .meeting_meta import MeetingMeta, meta_from_row, write_meta
from .readers import ReaderPool
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
from .schema import TOMBSTONE_SIGNED_FUNCTION, create_schema
from .verify import check_chain

log = logging.getLogger(__name__)



class TranscriptLog(MeetingDumps, MeetingLifecycle, RetentionSettings):
    """The transcript log of one SQLite file.

    Safe to share between threads: writes are serialised by a lock and by SQLite's write lock
    (`BEGIN IMMEDIATE`), so two processes appending to the same file also keep each chain intact.

    Args:
        path: the database file; created with its schema when missing.
        max_bytes: a cap on the file's size (SQLite's `max_page_count`); a batch that would pass it is
            refused whole with a StoreError, as on a full disk. None: no cap.
        clock: the arrival time stamped on each batch (UTC, ISO 8601); the wall clock by default.
    """

    backend = "sqlite"

    def __init__(self, path: str | Path, *, max_bytes: int | None = None,
                 clock: Callable[[], str] | None = None) -> None:
        self.path = Path(path)
        self._clock = clock or utc_now
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False, timeout=30)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the database {self.path}: {exc}") from exc
        self._conn = conn
        # The schema's guard on tombstones calls back here (store/schema.py, `deletions_need_the_key`).
        conn.create_function(TOMBSTONE_SIGNED_FUNCTION, 10, self.tombstone_signed)
        self.db = sqlite_utils.Database(conn)
        self._write_lock = threading.RLock()
        self._readers = ReaderPool(self.path)  # reads on other threads than the writer's (store/readers.py)
        self._writer_thread: int | None = None
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            if max_bytes is not None:
                page_size = conn.execute("PRAGMA page_size").fetchone()[0]
                conn.execute(f"PRAGMA max_page_count = {max(1, int(max_bytes) // page_size)}")
            self._create_schema()
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"{self.path} is not a meetmem database: {exc}") from exc

    # -- schema -----------------------------------------------------------------------------------------
    def _create_schema(self) -> None:
        with self._write_lock, self.transaction():
            create_schema(self.db)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction taken up front (`BEGIN IMMEDIATE`): all or nothing."""
        with self._write_lock:
            outer = self._writer_thread
            self._conn.execute("BEGIN IMMEDIATE")
            self._writer_thread = threading.get_ident()
            try:
                yield
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")
            finally:
                self._writer_thread = outer

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """A connection to read with: the writer's inside its own transaction, else one from the pool."""
        if self._writer_thread == threading.get_ident():
            yield self._conn
            return
        with self._readers.connection() as conn:
            yield conn

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run a read-only query on a reader connection (committed data only)."""
        try:
            with self._reading() as conn:
                return conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"reading {self.path} failed: {exc}") from exc

    def close(self) -> None:
        self._readers.close()
        self._conn.close()

    def __enter__(self) -> TranscriptLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
                with self.transaction():
                    write_meta(self._conn, tenant, meeting_id, meta)
            return AppendResult()
        for item in segments:
            check_segment_input(item)
        ordered = sorted(segments, key=lambda s: s.seq)
        for before, after in zip(ordered, ordered[1:], strict=False):
            if before.seq == after.seq and before != after:
                raise SequenceError(f"seq {after.seq} appears twice in the batch with different content")
        try:
            with self.transaction():
                result = self._append_locked(tenant, meeting_id, device_id, ordered)
                if meta is not None:
                    write_meta(self._conn, tenant, meeting_id, meta)
                return result
        except sqlite3.IntegrityError as exc:
            if "append-only" in str(exc):
                raise ImmutableLog(str(exc)) from exc
            raise StoreError(f"the log refused the batch: {exc}") from exc
        except sqlite3.OperationalError as exc:
            raise StoreError(f"the database could not take the batch: {exc}") from exc

    def _append_locked(
        self, tenant: str, meeting_id: str, device_id: str, ordered: Sequence[SegmentInput]
    ) -> AppendResult:
        conn = self._conn
        gone = conn.execute("SELECT deleted_at FROM meeting_deletions WHERE tenant = ? AND meeting_id = ?",
                            (tenant, meeting_id)).fetchone()
        if gone is not None:
            raise MeetingDeleted(tenant, meeting_id, gone[0])
        # The batch's arrival time: a new meeting's `created_at` is when the server first stored a row of it
        # (retention counts a meeting's age from it, never from a time the device gave).
        received_at = self._clock()
        conn.execute(
            "INSERT OR IGNORE INTO meetings (tenant, meeting_id, created_at) VALUES (?, ?, ?)",
            (tenant, meeting_id, received_at),
        )
        ids = [segment_id_for(tenant, meeting_id, device_id, s.seq) for s in ordered]
        stored: dict[str, Segment] = {}
        for chunk_start in range(0, len(ids), 500):
            chunk = ids[chunk_start : chunk_start + 500]
            marks = ",".join("?" * len(chunk))
            for row in conn.execute(f"SELECT {SEGMENT_SELECT} FROM segments WHERE segment_id IN ({marks})", chunk):
                seg = row_to_segment(row)
                stored[seg.segment_id] = seg
        max_seq_row = conn.execute(
            "SELECT MAX(seq) FROM segments WHERE tenant = ? AND meeting_id = ? AND device_id = ?",
            (tenant, meeting_id, device_id),
        ).fetchone()
        max_seq = max_seq_row[0] if max_seq_row and max_seq_row[0] is not None else -1
        last = conn.execute(
            "SELECT chain_pos, hash FROM segments WHERE tenant = ? AND meeting_id = ? "
            "ORDER BY chain_pos DESC LIMIT 1",
            (tenant, meeting_id),
        ).fetchone()
        pos, prev = (last[0] + 1, last[1]) if last else (0, GENESIS_HASH)

        def supersedes_exists(segment_id: str) -> bool:
            return conn.execute("SELECT 1 FROM segments WHERE segment_id = ? AND tenant = ? AND meeting_id = ?",
                                (segment_id, tenant, meeting_id)).fetchone() is not None

        plan = plan_batch(tenant=tenant, meeting_id=meeting_id, device_id=device_id, ordered=ordered, ids=ids,
                          stored=stored, max_seq=max_seq, next_pos=pos, prev_hash=prev, received_at=received_at,
                          supersedes_exists=supersedes_exists)
        rows, added, duplicates, pos, prev = plan.rows, plan.added, plan.duplicates, plan.head_pos + 1, plan.head_hash
        if rows:
            columns = ", ".join(f'"{c}"' for c in SEGMENT_COLUMNS)
            marks = ", ".join("?" * len(SEGMENT_COLUMNS))
            conn.executemany(
                f"INSERT INTO segments ({columns}) VALUES ({marks})",
                [tuple(r[c] for c in SEGMENT_COLUMNS) for r in rows],
            )
            inserted = conn.execute(
                "SELECT COUNT(*) FROM segments WHERE tenant = ? AND meeting_id = ? AND chain_pos >= ?",
                (tenant, meeting_id, rows[0]["chain_pos"]),
            ).fetchone()[0]
            if inserted != len(rows):
                # Another writer took these chain positions between our read and our insert.
                raise StoreError("concurrent append to the same meeting; retry the batch")
            conn.execute(
                "INSERT INTO meeting_heads (tenant, meeting_id, head_pos, head_hash) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (tenant, meeting_id) DO UPDATE SET head_pos = excluded.head_pos, "
                "head_hash = excluded.head_hash",
                (tenant, meeting_id, pos - 1, prev),
            )
        return AppendResult(added=tuple(added), duplicates=duplicates, head_pos=pos - 1, head_hash=prev)

    # -- reads ------------------------------------------------------------------------------------------
    def has_meeting(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> bool:
        rows = self.read("SELECT 1 FROM meetings WHERE tenant = ? AND meeting_id = ?", (tenant, meeting_id))
        return bool(rows)

    def require_meeting(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> None:
        if not self.has_meeting(meeting_id, tenant=tenant):
            gone = self.read("SELECT deleted_at FROM meeting_deletions WHERE tenant = ? AND meeting_id = ?",
                             (tenant, meeting_id))
            raise MeetingNotFound(tenant, meeting_id, deleted_at=gone[0][0] if gone else None)

    def meetings(self, *, tenant: str | None = None) -> list[tuple[str, str]]:
        """`(tenant, meeting_id)` of every meeting, oldest first; all tenants when `tenant` is None."""
        if tenant is None:
            rows = self.read("SELECT tenant, meeting_id FROM meetings ORDER BY created_at, rowid")
        else:
            rows = self.read(
                "SELECT tenant, meeting_id FROM meetings WHERE tenant = ? ORDER BY created_at, rowid", (tenant,)
            )
        return [(r[0], r[1]) for r in rows]

    def meta(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> MeetingMeta:
        """The meeting's title, start and participants, as far as they were given.

        Raises:
            MeetingNotFound: the tenant has no such meeting.
        """
        rows = self.read("SELECT title, started_at, participants FROM meetings WHERE tenant = ? AND meeting_id = ?",
                         (tenant, meeting_id))
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
        sql = f"SELECT {SEGMENT_SELECT} FROM segments WHERE {' AND '.join(where)} ORDER BY start, device_id, seq"
        return [row_to_segment(r) for r in self.read(sql, args)]

    def get(self, segment_ids: Iterable[str]) -> dict[str, Segment]:
        """Segments by id (any meeting, any tenant: callers check ownership)."""
        ids = list(dict.fromkeys(segment_ids))
        found: dict[str, Segment] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for row in self.read(f"SELECT {SEGMENT_SELECT} FROM segments WHERE segment_id IN ({marks})", chunk):
                seg = row_to_segment(row)
                found[seg.segment_id] = seg
        return found

    def superseded_ids(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> set[str]:
        rows = self.read(
            "SELECT supersedes FROM segments WHERE tenant = ? AND meeting_id = ? AND supersedes IS NOT NULL",
            (tenant, meeting_id),
        )
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
        for row in self.read(sql, args):
            yield row_to_segment(row)

    def last_chain_pos(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> int:
        """The chain position of the meeting's newest row (-1 when it has none)."""
        rows = self.read("SELECT MAX(chain_pos) FROM segments WHERE tenant = ? AND meeting_id = ?",
                         (tenant, meeting_id))
        return -1 if not rows or rows[0][0] is None else int(rows[0][0])

    def meeting_stats(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> tuple[int, float]:
        """How many current (uncorrected) segments a meeting holds, and where its last one ends (seconds)."""
        self.require_meeting(meeting_id, tenant=tenant)
        rows = self.read(
            'SELECT COUNT(*), COALESCE(MAX("end"), 0) FROM segments WHERE tenant = ? AND meeting_id = ? '
            "AND segment_id NOT IN (SELECT supersedes FROM segments WHERE tenant = ? AND meeting_id = ? "
            "AND supersedes IS NOT NULL)",
            (tenant, meeting_id, tenant, meeting_id),
        )
        return int(rows[0][0]), float(rows[0][1])

    def count(self) -> int:
        return self.read("SELECT COUNT(*) FROM segments")[0][0]

    def languages(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> tuple[str, ...]:
        """The languages the meeting's segments are tagged with, sorted."""
        return tuple(r[0] for r in self.read("SELECT DISTINCT lang FROM segments WHERE tenant = ? AND meeting_id = ? "
                                             "AND lang IS NOT NULL ORDER BY lang", (tenant, meeting_id)))

    def device_first_start(self, meeting_id: str, device_id: str, *, tenant: str = DEFAULT_TENANT) -> float | None:
        """Where a device's first segment of the meeting starts (None: it sent none)."""
        rows = self.read("SELECT MIN(start) FROM segments WHERE tenant = ? AND meeting_id = ? AND device_id = ?",
                         (tenant, meeting_id, device_id))
        return float(rows[0][0]) if rows and rows[0][0] is not None else None

    # -- integrity --------------------------------------------------------------------------------------
    def head(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> tuple[int, str] | None:
        """The meeting's recorded head (last chain position, its hash), kept apart from the segments."""
        rows = self.read("SELECT head_pos, head_hash FROM meeting_heads WHERE tenant = ? AND meeting_id = ?",
                         (tenant, meeting_id))
        return (int(rows[0][0]), str(rows[0][1])) if rows else None

    def verify(
        self, meeting_id: str, *, tenant: str = DEFAULT_TENANT, receipts: Sequence[Receipt] = (),
        key: ReceiptKey | None = None,
    ) -> ChainReport:
        """Recompute a meeting's hash chain and check where it ends (`verify.check_chain` says how).

        Raises:
            MeetingNotFound: the tenant has no such meeting.
            ReceiptError: a receipt of this meeting was not signed by `key` (or no key was given).
        """
        self.require_meeting(meeting_id, tenant=tenant)
        closed = self.read("SELECT MAX(through_pos) FROM meeting_closures WHERE tenant = ? AND meeting_id = ?",
                           (tenant, meeting_id))
        through = closed[0][0] if closed and closed[0][0] is not None else -1
        mine = [r for r in receipts if (r.tenant, r.meeting_id) == (tenant, meeting_id)]
        head = self.head(meeting_id, tenant=tenant)
        return check_chain(meeting_id, self.chain(meeting_id, tenant=tenant), head=head, closed_through=through,
                           receipts=mine, key=key)

