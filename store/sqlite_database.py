"""The SQLite adapter of `store/database.py`: one file, one writer connection, a pool of readers.

Writes are serialised by a lock and by SQLite's own write lock (`BEGIN IMMEDIATE`), so a session is the
only writer of the whole file while it lasts, across processes: a meeting needs no lock of its own. Reads on
other threads than the writer's go through read-only connections of their own (store/readers.py), which see
committed data alone. SQLite has no tenants of its own: every table carries a `tenant` column and every
query names it.

What only SQLite does, here: the schema's numbered steps a file lacks are applied when it is opened
(store/schema.py; `meetmem db upgrade --db FILE` does the same and says what it did), and a meeting's rows leave
behind a tombstone that the schema's triggers accept only while `meetmem_tombstone_signed`, a function this
connection registers, says the deleting process's key signed it.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .database import SQLITE, WriteConflict
from .errors import ImmutableLog, StoreError
from .readers import ReaderPool
from .receipts import ReceiptError, ReceiptKey
from .rows import TOMBSTONE_COLUMNS
from .schema import TOMBSTONE_SIGNED_FUNCTION, upgrade_schema
from .tombstones import Tombstone, check_tombstone

#: Derived tables keyed by (tenant, meeting_id), made by the modules that own them (each may be absent).
DERIVED_MEETING_TABLES = ("summary_sections", "meeting_digests", "ledger_items", "meeting_audio", "audio_policy",
                          "speaker_names", "ask_turns")


class SqliteDatabase:
    """One SQLite file (see the module's text).

    Args:
        path: the database file; created with its schema when missing.
        max_bytes: a cap on the file's size (SQLite's `max_page_count`); a write that would pass it is
            refused whole with a StoreError, as on a full disk. None: no cap.
    """

    dialect = SQLITE

    def __init__(self, path: str | Path, *, max_bytes: int | None = None) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False, timeout=30)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the database {self.path}: {exc}") from exc
        self.conn = conn
        #: The key `remove_meeting` signs with while it writes its tombstone (None: every tombstone of a held
        #: meeting is refused).
        self._deleting_with: ReceiptKey | None = None
        conn.create_function(TOMBSTONE_SIGNED_FUNCTION, 10, self.tombstone_signed)
        self._write_lock = threading.RLock()
        self._readers = ReaderPool(self.path)
        self._writer_thread: int | None = None
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            # As sqlite-utils set it when it wrapped every connection: a REPLACE fires the delete triggers too.
            conn.execute("PRAGMA recursive_triggers=ON")
            if max_bytes is not None:
                page_size = conn.execute("PRAGMA page_size").fetchone()[0]
                conn.execute(f"PRAGMA max_page_count = {max(1, int(max_bytes) // page_size)}")
            with self.transaction():
                #: The schema's version before and after this open (store/schema.py's numbered steps).
                self.upgraded = upgrade_schema(conn)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"{self.path} is not a meetmem database: {exc}") from exc

    # -- transactions -----------------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction taken up front (`BEGIN IMMEDIATE`): all or nothing; the driver's errors as
        they are (the SQLite-only stores that use it catch them themselves)."""
        with self._write_lock:
            outer = self._writer_thread
            self.conn.execute("BEGIN IMMEDIATE")
            self._writer_thread = threading.get_ident()
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            else:
                self.conn.execute("COMMIT")
            finally:
                self._writer_thread = outer

    @contextmanager
    def session(self, tenant: str, *, lock: str | None = None, snapshot: bool = False) -> Iterator[Any]:
        """One transaction (`store/database.py`). The whole file's write lock stands for `lock`; a `snapshot`
        without a lock reads on a reader connection, so it never holds writers up. Inside a transaction this
        thread holds already, the session is part of that transaction."""
        try:
            if self._writer_thread == threading.get_ident():
                yield self.conn  # inside this thread's own transaction: part of it, all or nothing with it
                return
            if snapshot and lock is None:
                with self._readers.connection() as conn:
                    conn.execute("BEGIN")
                    try:
                        yield conn
                    finally:
                        conn.execute("COMMIT")
                return
            with self.transaction() as conn:
                yield conn
        except sqlite3.IntegrityError as exc:
            if "append-only" in str(exc) or "never deleted" in str(exc):
                raise ImmutableLog(str(exc)) from exc
            raise WriteConflict(f"the database {self.path} refused: {exc}") from exc
        except sqlite3.Error as exc:
            raise StoreError(f"the database {self.path} could not take it: {exc}") from exc

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A connection to read with: the writer's inside its own transaction, else one from the pool."""
        if self._writer_thread == threading.get_ident():
            yield self.conn
            return
        with self._readers.connection() as conn:
            yield conn

    def rows(self, sql: str, params: Sequence[Any] = (), *, tenant: str = "") -> list[tuple[Any, ...]]:
        """One read of committed data (or of the calling thread's own open transaction)."""
        try:
            with self.reading() as conn:
                return conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"reading {self.path} failed: {exc}") from exc

    @property
    def db(self) -> Any:
        """sqlite-utils over the writer connection (imported on first use: most commands never need it)."""
        import sqlite_utils

        return sqlite_utils.Database(self.conn)

    def close(self) -> None:
        self._readers.close()
        self.conn.close()

    # -- what only SQLite does ---------------------------------------------------------------------------
    def tombstone_signed(self, *fields: Any) -> int:
        """The schema's `meetmem_tombstone_signed(tenant, ..., version)` (store/schema.py): 1 when the key
        `remove_meeting` holds right now signed exactly this tombstone, else 0."""
        key = self._deleting_with
        if key is None:
            return 0
        try:
            check_tombstone(key, Tombstone(*fields))
        except (ReceiptError, TypeError, ValueError):
            return 0
        return 1

    def remove_meeting(self, conn: Any, tombstone: Tombstone, key: ReceiptKey) -> list[str]:
        """Inside a session: write the tombstone (first: the triggers refuse the DELETEs of a meeting without
        one, and refuse the tombstone unless `key` signed it), then delete the meeting's rows and every row
        derived from it. Returns the sha256 of each audio file its rows named: the files go after the commit
        (`AudioStore.remove_files`), since a file removed before a rolled-back transaction could not come back.
        """
        t = tombstone
        key_args = (t.tenant, t.meeting_id)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        shas = ([r[0] for r in conn.execute("SELECT DISTINCT sha256 FROM meeting_audio WHERE tenant = ? AND "
                                             "meeting_id = ?", key_args)] if "meeting_audio" in tables else [])
        self._deleting_with = key
        try:
            self._insert_tombstone(conn, t)
        finally:
            self._deleting_with = None
        if "segment_vectors" in tables:
            conn.execute("DELETE FROM segment_vectors WHERE segment_id IN (SELECT segment_id FROM segments "
                         "WHERE tenant = ? AND meeting_id = ?)", key_args)
        for table in DERIVED_MEETING_TABLES:
            if table in tables:
                conn.execute(f"DELETE FROM {table} WHERE tenant = ? AND meeting_id = ?", key_args)
        for table in ("segments", "meeting_closures", "meeting_heads", "meetings"):
            conn.execute(f"DELETE FROM {table} WHERE tenant = ? AND meeting_id = ?", key_args)
        return shas

    def import_tombstone(self, conn: Any, tombstone: Tombstone) -> None:
        """Inside a session: keep another database's tombstone as signed (for a meeting not held here)."""
        self._insert_tombstone(conn, tombstone)

    @staticmethod
    def _insert_tombstone(conn: Any, t: Tombstone) -> None:
        conn.execute(f"INSERT INTO meeting_deletions ({TOMBSTONE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     (t.tenant, t.meeting_id, t.deleted_at, t.reason, t.segments, t.head_pos, t.head_hash,
                      t.key_id, t.sig, t.version))
