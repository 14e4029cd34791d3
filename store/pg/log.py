"""The transcript log on PostgreSQL: the public methods of the SQLite `TranscriptLog`, the same guarantees.

- Append-only by the database: the schema (migrations/versions/0001) gives the service's role
  `meetmem_app` no UPDATE or DELETE on the log, its triggers refuse UPDATE, TRUNCATE and an untombstoned
  DELETE whoever asks, and a meeting leaves only through `meetmem_delete_meeting`, tombstone first.
  Every connection this class opens acts as `meetmem_app` (`SET ROLE`), whatever user the URL names.
- The same hash chain: the batch rules and the links come from `store/batch.py`, shared with SQLite, so the
  same input (and arrival clock) gives the same heads on both.
- Idempotent `(device_id, seq)` and one writer per meeting at a time across every process: appends to a
  meeting take a transaction-scoped advisory lock on it, and unique keys stand behind that.
- Tenant isolation by row-level security: each transaction sets `app.tenant` to the tenant it serves, and
  the policies show it that tenant's rows alone, whatever a query's WHERE says. Reads across tenants (the
  operator's listings, the reaper) say so with `'*'`, which reads every tenant and writes none.

The pooled connections and the conversion of the driver's errors are `store/pg/connections.py`; a
meeting's dump and load (`meetmem migrate`) are `store/pg/dump.py`; closing and deleting meetings,
`store/pg/lifecycle.py`; the retention settings, `store/pg/retention.py`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from ..batch import plan_batch
from ..errors import (
    InvalidSegment,
    MeetingDeleted,
    MeetingNotFound,
    SequenceError,
    StoreError,
)
from ..interchange import check_id, check_segment_input
from ..meeting_meta import MeetingMeta, meta_from_row, write_meta
from ..receipts import Receipt, ReceiptKey
from ..records import (
    DEFAULT_TENANT,
    GENESIS_HASH,
    AppendResult,
    ChainReport,
    Segment,
    SegmentInput,
    segment_id_for,
    utc_now,
)
from ..rows import SEGMENT_COLUMNS, SEGMENT_SELECT, row_to_segment
from ..verify import check_chain
from . import migrate
from .connections import ALL_TENANTS, POOL_SIZE, PgConnections
from .dump import PgMeetingDumps
from .lifecycle import PgMeetingLifecycle
from .retention import PgRetentionSettings

log = logging.getLogger(__name__)


def _check_text(segments: Sequence[SegmentInput]) -> None:
    # PostgreSQL's text cannot hold NUL; SQLite can. Refused up front, naming the segment.
    for item in segments:
        for name in ("text", "raw_text", "speaker", "lang", "supersedes"):
            value = getattr(item, name)
            if isinstance(value, str) and "\x00" in value:
                raise InvalidSegment(f"{name} contains a NUL character, which the database cannot store",
                                     seq=item.seq)


class PgTranscriptLog(PgConnections, PgMeetingDumps, PgMeetingLifecycle, PgRetentionSettings):
    """The transcript log in one PostgreSQL database, shared by any number of processes.

    Args:
        url: `postgresql://user[:password]@host:port/database`; the user must be `meetmem_app` or a member
            of it (the owner who ran the migrations is).
        clock: the arrival time stamped on each batch (UTC, ISO 8601); the wall clock by default.
        upgrade: bring the schema to the newest revision first (needs the owner's rights); otherwise a
            database behind this code's schema is refused with the command that upgrades it.
    """

    backend = "postgres"

    def __init__(self, url: str, *, clock: Callable[[], str] | None = None, upgrade: bool = False,
                 pool_size: int = POOL_SIZE) -> None:
        super().__init__(url, pool_size=pool_size)
        self._clock = clock or utc_now
        if upgrade:
            migrate.upgrade(url)
        with self._session(ALL_TENANTS) as conn:
            known = conn.execute("SELECT to_regclass('alembic_version')").fetchone()[0] is not None
            row = conn.execute("SELECT version_num FROM alembic_version").fetchone() if known else None
        current, head = (row[0] if row else None), migrate.head_revision()
        if current != head:
            self.close()  # the connection it checked with goes, not left for the garbage collector
            if current is not None and current not in migrate.known_revisions():
                raise StoreError(f"the database {self.path} is at schema revision {current}, this meetmem needs "
                                 f"{head}: a newer meetmem upgraded it; run that version (or newer)")
            raise StoreError(f"the database {self.path} is at schema revision {current or 'none'}, this meetmem "
                             f"needs {head}: run `meetmem db upgrade --database URL` as the database owner")

    #: The SQLite log's raw handles, which the SQLite derived stores use (here: store/pg/*.py instead).
    _SQLITE_ONLY = frozenset({"db", "read", "transaction", "_conn", "_reading"})

    def __getattr__(self, name: str) -> Any:
        if name in PgTranscriptLog._SQLITE_ONLY:
            raise StoreError(f"{name!r} is a handle of the SQLite store, which this operation needs: use the "
                             f"SQLite file (--db); on PostgreSQL the search, summaries, ledger and audio have "
                             f"their own tables")
        raise AttributeError(name)

    def __enter__(self) -> PgTranscriptLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def _lock_meeting(conn: Any, tenant: str, meeting_id: str) -> None:
        # One writer per meeting at a time, across processes; released at commit or rollback.
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{tenant}\x1f{meeting_id}",))

    # -- the one write path -----------------------------------------------------------------------------
    def append(self, meeting_id: str, device_id: str, segments: Sequence[SegmentInput], *,
               tenant: str = DEFAULT_TENANT, meta: MeetingMeta | None = None) -> AppendResult:
        """Append a batch of one device's segments to a meeting, all or nothing (as `TranscriptLog.append`)."""
        check_id("meeting id", meeting_id)
        check_id("device id", device_id)
        check_id("tenant", tenant)
        if not segments:
            if meta is not None and not meta.empty and self.has_meeting(meeting_id, tenant=tenant):
                with self._session(tenant) as conn:
                    write_meta(conn, tenant, meeting_id, meta, mark="%s")
            return AppendResult()
        for item in segments:
            check_segment_input(item)
        _check_text(segments)
        ordered = sorted(segments, key=lambda s: s.seq)
        for before, after in zip(ordered, ordered[1:], strict=False):
            if before.seq == after.seq and before != after:
                raise SequenceError(f"seq {after.seq} appears twice in the batch with different content")
        psycopg = self._psycopg
        try:
            with self._session(tenant) as conn:
                result = self._append_locked(conn, tenant, meeting_id, device_id, ordered)
                if meta is not None:
                    write_meta(conn, tenant, meeting_id, meta, mark="%s")
                return result
        except StoreError as exc:
            if isinstance(exc.__cause__, psycopg.errors.UniqueViolation):
                raise StoreError("concurrent append to the same meeting; retry the batch") from exc
            raise

    def _append_locked(self, conn: Any, tenant: str, meeting_id: str, device_id: str,
                       ordered: Sequence[SegmentInput]) -> AppendResult:
        self._lock_meeting(conn, tenant, meeting_id)
        gone = conn.execute("SELECT deleted_at FROM meeting_deletions WHERE tenant = %s AND meeting_id = %s",
                            (tenant, meeting_id)).fetchone()
        if gone is not None:
            raise MeetingDeleted(tenant, meeting_id, gone[0])
        # The batch's arrival time: a new meeting's `created_at` is when the server first stored a row of it
        # (retention counts a meeting's age from it, never from a time the device gave).
        received_at = self._clock()
        conn.execute("INSERT INTO meetings (tenant, meeting_id, created_at) VALUES (%s, %s, %s) "
                     "ON CONFLICT (tenant, meeting_id) DO NOTHING", (tenant, meeting_id, received_at))
        ids = [segment_id_for(tenant, meeting_id, device_id, s.seq) for s in ordered]
        stored = {seg.segment_id: seg for seg in map(row_to_segment, conn.execute(
            f"SELECT {SEGMENT_SELECT} FROM segments WHERE segment_id = ANY(%s)", (ids,)).fetchall())}
        max_seq = conn.execute("SELECT MAX(seq) FROM segments WHERE tenant = %s AND meeting_id = %s AND "
                               "device_id = %s", (tenant, meeting_id, device_id)).fetchone()[0]
        last = conn.execute("SELECT chain_pos, hash FROM segments WHERE tenant = %s AND meeting_id = %s "
                            "ORDER BY chain_pos DESC LIMIT 1", (tenant, meeting_id)).fetchone()
        pos, prev = (int(last[0]) + 1, str(last[1])) if last else (0, GENESIS_HASH)

        def supersedes_exists(segment_id: str) -> bool:
            return conn.execute("SELECT 1 FROM segments WHERE segment_id = %s AND tenant = %s AND meeting_id = %s",
                                (segment_id, tenant, meeting_id)).fetchone() is not None

        plan = plan_batch(tenant=tenant, meeting_id=meeting_id, device_id=device_id, ordered=ordered, ids=ids,
                          stored=stored, max_seq=-1 if max_seq is None else int(max_seq), next_pos=pos,
                          prev_hash=prev, received_at=received_at, supersedes_exists=supersedes_exists)
        if plan.rows:
            columns = ", ".join(f'"{c}"' for c in SEGMENT_COLUMNS)
            marks = ", ".join(["%s"] * len(SEGMENT_COLUMNS))
            with conn.cursor() as cur:
                cur.executemany(f"INSERT INTO segments ({columns}) VALUES ({marks})",
                                [tuple(r[c] for c in SEGMENT_COLUMNS) for r in plan.rows])
            conn.execute("INSERT INTO meeting_heads (tenant, meeting_id, head_pos, head_hash) VALUES (%s, %s, %s, %s) "
                         "ON CONFLICT (tenant, meeting_id) DO UPDATE SET head_pos = excluded.head_pos, "
                         "head_hash = excluded.head_hash", (tenant, meeting_id, plan.head_pos, plan.head_hash))
        return AppendResult(added=tuple(plan.added), duplicates=plan.duplicates, head_pos=plan.head_pos,
                            head_hash=plan.head_hash)

    # -- reads ------------------------------------------------------------------------------------------
    def has_meeting(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> bool:
        return bool(self._rows("SELECT 1 FROM meetings WHERE tenant = %s AND meeting_id = %s", (tenant, meeting_id),
                               tenant=tenant))

    def require_meeting(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> None:
        if not self.has_meeting(meeting_id, tenant=tenant):
            gone = self._rows("SELECT deleted_at FROM meeting_deletions WHERE tenant = %s AND meeting_id = %s",
                              (tenant, meeting_id), tenant=tenant)
            raise MeetingNotFound(tenant, meeting_id, deleted_at=gone[0][0] if gone else None)

    def meetings(self, *, tenant: str | None = None) -> list[tuple[str, str]]:
        """`(tenant, meeting_id)` of every meeting, oldest first; all tenants when `tenant` is None."""
        if tenant is None:
            rows = self._rows("SELECT tenant, meeting_id FROM meetings ORDER BY created_at, ord", tenant=ALL_TENANTS)
        else:
            rows = self._rows("SELECT tenant, meeting_id FROM meetings WHERE tenant = %s ORDER BY created_at, ord",
                              (tenant,), tenant=tenant)
        return [(r[0], r[1]) for r in rows]

    def meta(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> MeetingMeta:
        rows = self._rows("SELECT title, started_at, participants FROM meetings WHERE tenant = %s AND "
                          "meeting_id = %s", (tenant, meeting_id), tenant=tenant)
        if not rows:
            raise MeetingNotFound(tenant, meeting_id)
        return meta_from_row(*rows[0])

    def segments(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT, start: float | None = None,
                 end: float | None = None, include_superseded: bool = False) -> list[Segment]:
        """A meeting's segments ordered by start, device id and seq (as `TranscriptLog.segments`)."""
        self.require_meeting(meeting_id, tenant=tenant)
        where = ["tenant = %s", "meeting_id = %s"]
        args: list[Any] = [tenant, meeting_id]
        if start is not None:
            where.append('"end" >= %s')
            args.append(start)
        if end is not None:
            where.append("start <= %s")
            args.append(end)
        if not include_superseded:
            where.append("segment_id NOT IN (SELECT supersedes FROM segments WHERE tenant = %s AND meeting_id = %s "
                         "AND supersedes IS NOT NULL)")
            args.extend([tenant, meeting_id])
        # COLLATE "C": the byte order SQLite sorts device ids in, whatever the database's locale.
        sql = (f"SELECT {SEGMENT_SELECT} FROM segments WHERE {' AND '.join(where)} "
               'ORDER BY start, device_id COLLATE "C", seq')
        return [row_to_segment(r) for r in self._rows(sql, args, tenant=tenant)]

    def get(self, segment_ids: Iterable[str]) -> dict[str, Segment]:
        """Segments by id (any meeting, any tenant: callers check ownership)."""
        ids = list(dict.fromkeys(segment_ids))
        if not ids:
            return {}
        rows = self._rows(f"SELECT {SEGMENT_SELECT} FROM segments WHERE segment_id = ANY(%s)", (ids,),
                          tenant=ALL_TENANTS)
        return {seg.segment_id: seg for seg in map(row_to_segment, rows)}

    def superseded_ids(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> set[str]:
        rows = self._rows("SELECT supersedes FROM segments WHERE tenant = %s AND meeting_id = %s AND "
                          "supersedes IS NOT NULL", (tenant, meeting_id), tenant=tenant)
        return {r[0] for r in rows}

    def chain(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT, after_pos: int = -1,
              limit: int | None = None) -> Iterator[Segment]:
        """A meeting's rows in arrival (chain) order, from `after_pos + 1` on (at most `limit` of them)."""
        sql = (f"SELECT {SEGMENT_SELECT} FROM segments WHERE tenant = %s AND meeting_id = %s AND chain_pos > %s "
               "ORDER BY chain_pos")
        args: list[Any] = [tenant, meeting_id, after_pos]
        if limit is not None:
            sql += " LIMIT %s"
            args.append(limit)
        for row in self._rows(sql, args, tenant=tenant):
            yield row_to_segment(row)

    def last_chain_pos(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> int:
        rows = self._rows("SELECT MAX(chain_pos) FROM segments WHERE tenant = %s AND meeting_id = %s",
                          (tenant, meeting_id), tenant=tenant)
        return -1 if not rows or rows[0][0] is None else int(rows[0][0])

    def meeting_stats(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> tuple[int, float]:
        self.require_meeting(meeting_id, tenant=tenant)
        rows = self._rows(
            'SELECT COUNT(*), COALESCE(MAX("end"), 0) FROM segments WHERE tenant = %s AND meeting_id = %s '
            "AND segment_id NOT IN (SELECT supersedes FROM segments WHERE tenant = %s AND meeting_id = %s "
            "AND supersedes IS NOT NULL)", (tenant, meeting_id, tenant, meeting_id), tenant=tenant)
        return int(rows[0][0]), float(rows[0][1])

    def count(self) -> int:
        return int(self._rows("SELECT COUNT(*) FROM segments", tenant=ALL_TENANTS)[0][0])

    def languages(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> tuple[str, ...]:
        return tuple(r[0] for r in self._rows(
            'SELECT DISTINCT lang COLLATE "C" FROM segments WHERE tenant = %s AND meeting_id = %s AND lang IS NOT NULL '
            'ORDER BY 1', (tenant, meeting_id), tenant=tenant))

    def device_first_start(self, meeting_id: str, device_id: str, *, tenant: str = DEFAULT_TENANT) -> float | None:
        rows = self._rows("SELECT MIN(start) FROM segments WHERE tenant = %s AND meeting_id = %s AND device_id = %s",
                          (tenant, meeting_id, device_id), tenant=tenant)
        return float(rows[0][0]) if rows and rows[0][0] is not None else None

    # -- integrity --------------------------------------------------------------------------------------
    def head(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> tuple[int, str] | None:
        rows = self._rows("SELECT head_pos, head_hash FROM meeting_heads WHERE tenant = %s AND meeting_id = %s",
                          (tenant, meeting_id), tenant=tenant)
        return (int(rows[0][0]), str(rows[0][1])) if rows else None

    def verify(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT, receipts: Sequence[Receipt] = (),
               key: ReceiptKey | None = None) -> ChainReport:
        """Recompute a meeting's hash chain and check where it ends, on one snapshot of the database."""
        self.require_meeting(meeting_id, tenant=tenant)
        args = (tenant, meeting_id)
        with self._session(tenant, isolation="REPEATABLE READ") as conn:
            through = conn.execute("SELECT COALESCE(MAX(through_pos), -1) FROM meeting_closures WHERE tenant = %s "
                                   "AND meeting_id = %s", args).fetchone()[0]
            head_row = conn.execute("SELECT head_pos, head_hash FROM meeting_heads WHERE tenant = %s AND "
                                    "meeting_id = %s", args).fetchone()
            rows = conn.execute(f"SELECT {SEGMENT_SELECT} FROM segments WHERE tenant = %s AND meeting_id = %s "
                                "ORDER BY chain_pos", args).fetchall()
        head = (int(head_row[0]), str(head_row[1])) if head_row else None
        mine = [r for r in receipts if (r.tenant, r.meeting_id) == (tenant, meeting_id)]
        return check_chain(meeting_id, map(row_to_segment, rows), head=head, closed_through=int(through),
                           receipts=mine, key=key)
