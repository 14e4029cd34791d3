"""The durable local outbox: every segment is on disk before it is sent, and leaves only once acknowledged.

SQLite in WAL mode with `synchronous=FULL`: when `put` returns, the segment survives a kill -9 or a power
cut. The same transaction assigns the segment's `seq` (one counter per device, so seqs only grow) and
records how far into the input the capture got, so a restarted agent neither loses an utterance nor sends
one twice: it resumes after the last utterance it stored, and the cloud ignores a replayed `(device_id,
seq)`. Disk use is bounded: a warning is logged once use passes `warn_fraction` of the bound, and at the
bound `put` refuses with `OutboxFull` rather than drop anything.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .errors import OutboxCorrupt, OutboxError, OutboxFull

log = logging.getLogger(__name__)

#: The payload fields of a segment (the CONTRACT's interchange fields).
FIELDS = ("start", "end", "text", "speaker", "lang", "raw_text", "confidence")


@dataclass(frozen=True, slots=True)
class OutboxSegment:
    """A segment waiting for the cloud's acknowledgement."""

    meeting_id: str
    seq: int
    start: float
    end: float
    text: str
    speaker: str | None = None
    lang: str | None = None
    raw_text: str | None = None
    confidence: float | None = None

    def payload(self) -> dict[str, Any]:
        """The segment as the segments endpoint takes it (`seq` plus the interchange fields set)."""
        body: dict[str, Any] = {"seq": self.seq, "start": self.start, "end": self.end, "text": self.text}
        for name in ("speaker", "lang", "raw_text", "confidence"):
            value = getattr(self, name)
            if value is not None:
                body[name] = value
        return body


@dataclass(frozen=True, slots=True)
class OutboxStats:
    pending: int
    bytes: int
    limit: int
    rejected: int

    @property
    def fraction(self) -> float:
        return self.bytes / self.limit if self.limit else 0.0


class Outbox:
    """The outbox file of one edge device.

    Args:
        path: the SQLite file (created when missing).
        max_bytes: the bound on the text the outbox holds; `put` refuses beyond it.
        warn_fraction: log a warning once the outbox is this full.
        device_id: the device id to use when the file is new (default: `edge-` + a random id); an existing
            outbox keeps the id it was created with, so a restart continues the same seq sequence.
    """

    def __init__(self, path: str | Path, *, max_bytes: int = 256 * 1024 * 1024, warn_fraction: float = 0.5,
                 device_id: str | None = None) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.warn_fraction = warn_fraction
        self._lock = threading.RLock()
        self._warned = False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False, timeout=30)
            self._conn.execute("PRAGMA journal_mode=WAL")
            # FULL: a committed put is on disk before it returns, even in WAL mode (NORMAL could lose the
            # last transactions on power loss).
            self._conn.execute("PRAGMA synchronous=FULL")
            self._create_schema(device_id)
            check = self._conn.execute("PRAGMA quick_check").fetchone()
            if check is None or check[0] != "ok":
                raise sqlite3.DatabaseError(f"integrity check: {check[0] if check else 'no answer'}")
        except sqlite3.OperationalError as exc:  # locked, read-only, no room: the file itself is fine
            raise OutboxError(f"cannot open the outbox {self.path}: {exc}") from exc
        except sqlite3.DatabaseError as exc:  # not a database, or a malformed one: damaged
            self._set_aside(exc)
        except (OSError, sqlite3.Error) as exc:
            raise OutboxError(f"cannot open the outbox {self.path}: {exc}") from exc
        self.device_id: str = self._meta("device_id") or ""
        self._bytes = self._conn.execute("SELECT COALESCE(SUM(bytes), 0) FROM outbox").fetchone()[0]

    def _set_aside(self, problem: Exception) -> None:
        """A damaged outbox still holds segments not yet sent: move it aside whole (with its WAL), never delete
        it, and say where it went; the next start begins a new outbox."""
        conn = getattr(self, "_conn", None)
        if conn is not None:
            conn.close()
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        try:
            for suffix in ("", "-wal", "-shm"):
                part = Path(f"{self.path}{suffix}")
                if part.exists():
                    part.rename(Path(f"{aside}{suffix}"))
        except OSError as exc:
            raise OutboxCorrupt(
                f"the outbox {self.path} is damaged ({problem}) and could not be moved aside ({exc}); nothing was "
                "deleted: move it away by hand to start a new outbox") from exc
        raise OutboxCorrupt(
            f"the outbox {self.path} is damaged ({problem}); it was moved aside to {aside} with everything it held "
            f"(nothing was deleted; `sqlite3 {aside} .recover` reads what is left of it). Start again to begin a "
            "new outbox (with --device-id, give a new one: the old device's seqs may not be reused)"
        ) from problem

    def _create_schema(self, device_id: str | None) -> None:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                self._conn.execute(
                    "CREATE TABLE IF NOT EXISTS outbox (meeting_id TEXT NOT NULL, seq INTEGER NOT NULL, "
                    '"start" REAL NOT NULL, "end" REAL NOT NULL, text TEXT NOT NULL, speaker TEXT, lang TEXT, '
                    "raw_text TEXT, confidence REAL, created_at TEXT NOT NULL, bytes INTEGER NOT NULL, "
                    "PRIMARY KEY (meeting_id, seq))"
                )
                # Refused by the cloud for good (a malformed segment): kept, never silently dropped.
                self._conn.execute(
                    "CREATE TABLE IF NOT EXISTS rejected (meeting_id TEXT NOT NULL, seq INTEGER NOT NULL, "
                    "payload TEXT NOT NULL, reason TEXT NOT NULL, rejected_at TEXT NOT NULL)"
                )
                self._conn.execute(
                    "CREATE TABLE IF NOT EXISTS progress (meeting_id TEXT NOT NULL, source TEXT NOT NULL, "
                    "position REAL NOT NULL, PRIMARY KEY (meeting_id, source))"
                )
                # The cloud's signed receipt of each meeting's furthest acknowledged position: proof, held
                # outside the cloud's database, of what it acknowledged (`meetmem verify --receipt`).
                self._conn.execute(
                    "CREATE TABLE IF NOT EXISTS receipts (meeting_id TEXT PRIMARY KEY, pos INTEGER NOT NULL, "
                    "receipt TEXT NOT NULL, received_at TEXT NOT NULL)"
                )
                self._conn.execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES ('device_id', ?)",
                    (device_id or f"edge-{uuid.uuid4().hex[:12]}",),
                )
                self._conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('next_seq', '0')")
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def _meta(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    # -- writing ----------------------------------------------------------------------------------------
    def put(self, meeting_id: str, segment: dict[str, Any], *, source: str | None = None,
            position: float | None = None) -> OutboxSegment:
        """Store one segment durably and give it the device's next seq.

        Args:
            meeting_id: the meeting it belongs to.
            segment: the interchange fields (`start`, `end`, `text`, optional `speaker`, `lang`, `raw_text`,
                `confidence`).
            source, position: the input it came from and how far into that input capture now is (seconds);
                recorded in the same transaction, so a restart resumes exactly after this segment.

        Raises:
            OutboxFull: the outbox is at its bound; nothing was stored.
        """
        item = {name: segment.get(name) for name in FIELDS}
        size = len(str(item["text"]).encode()) + len(str(item["raw_text"] or "").encode()) + 64
        with self._lock:
            if self._bytes + size > self.max_bytes:
                raise OutboxFull(
                    f"the outbox {self.path} holds {self._bytes} bytes, its bound is {self.max_bytes}: the cloud "
                    "has not acknowledged segments for a long time. Nothing was dropped; restore the connection "
                    "(or raise --outbox-max-mb) and start again."
                )
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    seq = int(self._meta("next_seq") or 0)
                    self._conn.execute("UPDATE meta SET value = ? WHERE key = 'next_seq'", (str(seq + 1),))
                    self._conn.execute(
                        'INSERT INTO outbox (meeting_id, seq, "start", "end", text, speaker, lang, raw_text, '
                        "confidence, created_at, bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (meeting_id, seq, float(item["start"]), float(item["end"]), item["text"], item["speaker"],
                         item["lang"], item["raw_text"], item["confidence"], _now(), size),
                    )
                    if source is not None and position is not None:
                        self._record_progress(meeting_id, source, position)
                    self._conn.execute("COMMIT")
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise OutboxError(f"cannot write to the outbox {self.path}: {exc}") from exc
            self._bytes += size
            self._check_fill()
        return OutboxSegment(meeting_id, seq, float(item["start"]), float(item["end"]), item["text"],
                             item["speaker"], item["lang"], item["raw_text"], item["confidence"])

    def record_progress(self, meeting_id: str, source: str, position: float) -> None:
        """Record how far capture got in an input when no segment came of it (silence)."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._record_progress(meeting_id, source, position)
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def _record_progress(self, meeting_id: str, source: str, position: float) -> None:
        self._conn.execute(
            "INSERT INTO progress (meeting_id, source, position) VALUES (?, ?, ?) "
            "ON CONFLICT (meeting_id, source) DO UPDATE SET position = MAX(position, excluded.position)",
            (meeting_id, source, float(position)),
        )

    def progress(self, meeting_id: str, source: str) -> float:
        """How far (seconds) capture of `source` for the meeting got before; 0 for a new input."""
        with self._lock:
            row = self._conn.execute(
                "SELECT position FROM progress WHERE meeting_id = ? AND source = ?", (meeting_id, source)
            ).fetchone()
        return float(row[0]) if row else 0.0

    def _check_fill(self) -> None:
        fraction = self._bytes / self.max_bytes if self.max_bytes else 0.0
        if fraction >= self.warn_fraction and not self._warned:
            self._warned = True
            log.warning("the outbox %s is %.0f%% full (%d of %d bytes): the cloud has not taken segments for a "
                        "while; capture stops at 100%% rather than drop any", self.path, 100 * fraction,
                        self._bytes, self.max_bytes)
        elif fraction < self.warn_fraction / 2:
            self._warned = False

    # -- sending ----------------------------------------------------------------------------------------
    def pending(self, limit: int = 100) -> list[OutboxSegment]:
        """The oldest unacknowledged segments of one meeting (the meeting of the oldest), in seq order."""
        with self._lock:
            first = self._conn.execute("SELECT meeting_id FROM outbox ORDER BY seq LIMIT 1").fetchone()
            if first is None:
                return []
            rows = self._conn.execute(
                'SELECT meeting_id, seq, "start", "end", text, speaker, lang, raw_text, confidence FROM outbox '
                "WHERE meeting_id = ? ORDER BY seq LIMIT ?",
                (first[0], limit),
            ).fetchall()
        return [OutboxSegment(*row) for row in rows]

    def ack(self, meeting_id: str, seqs: Sequence[int], receipt: dict[str, Any] | None = None) -> None:
        """The cloud stored these segments: they leave the outbox, and its receipt (if any) is kept in the same
        transaction, replacing an older one of the meeting (a later position vouches for every earlier one)."""
        import json

        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._delete_locked(meeting_id, seqs)
                pos = receipt.get("pos") if isinstance(receipt, dict) else None
                if isinstance(pos, int) and not isinstance(pos, bool):
                    self._conn.execute(
                        "INSERT INTO receipts (meeting_id, pos, receipt, received_at) VALUES (?, ?, ?, ?) "
                        "ON CONFLICT (meeting_id) DO UPDATE SET pos = excluded.pos, receipt = excluded.receipt, "
                        "received_at = excluded.received_at WHERE excluded.pos >= receipts.pos",
                        (meeting_id, pos, json.dumps(receipt, ensure_ascii=False), _now()),
                    )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def receipts(self) -> list[dict[str, Any]]:
        """The cloud's latest receipt of every meeting this device sent to, oldest meeting first."""
        import json

        with self._lock:
            rows = self._conn.execute("SELECT receipt FROM receipts ORDER BY received_at, meeting_id").fetchall()
        return [json.loads(row[0]) for row in rows]

    def reject(self, segments: Sequence[OutboxSegment], reason: str) -> None:
        """The cloud refused these segments for good: move them aside (kept, with the reason)."""
        import json

        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(
                    "INSERT INTO rejected (meeting_id, seq, payload, reason, rejected_at) VALUES (?, ?, ?, ?, ?)",
                    [(s.meeting_id, s.seq, json.dumps(s.payload(), ensure_ascii=False), reason, _now())
                     for s in segments],
                )
                self._delete_locked(segments[0].meeting_id if segments else "", [s.seq for s in segments])
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        log.error("the cloud refused %d segments for good (%s); they are kept in the outbox's rejected table",
                  len(segments), reason)

    def _delete_locked(self, meeting_id: str, seqs: Sequence[int]) -> None:
        if not seqs:
            return
        marks = ",".join("?" * len(seqs))
        freed = self._conn.execute(
            f"SELECT COALESCE(SUM(bytes), 0) FROM outbox WHERE meeting_id = ? AND seq IN ({marks})",
            (meeting_id, *seqs),
        ).fetchone()[0]
        self._conn.execute(f"DELETE FROM outbox WHERE meeting_id = ? AND seq IN ({marks})", (meeting_id, *seqs))
        self._bytes -= freed
        self._check_fill()

    # -- state ------------------------------------------------------------------------------------------
    def stats(self) -> OutboxStats:
        with self._lock:
            pending = self._conn.execute("SELECT COUNT(*) FROM outbox").fetchone()[0]
            rejected = self._conn.execute("SELECT COUNT(*) FROM rejected").fetchone()[0]
            return OutboxStats(pending, self._bytes, self.max_bytes, rejected)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Outbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")
