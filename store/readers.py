"""The SQLite log's readers: a small pool of read-only connections to its file, borrowed one per read.

Readers on other threads than the writer's read on connections of their own: on the writer's connection they
would see a batch that is still inside its transaction (and might yet be rolled back). The pool is bounded and
a connection goes back to it after each read, so a server's changing worker threads never pile up open files
(a connection per thread leaked 128 handles in 800 requests; tests/store/test_log_handles.py).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import StoreError

#: Reader connections kept open between reads (more readers at once open one each and close it after).
READER_POOL_SIZE = 8


class ReaderPool:
    """Read-only connections (`PRAGMA query_only`) to one SQLite file, safe to share between threads.

    Args:
        path: the database file.
        size: idle connections kept open between reads.
    """

    def __init__(self, path: Path, *, size: int = READER_POOL_SIZE) -> None:
        self.path = path
        self._size = size
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        """A reader connection for one read: an idle one, else a new one; back to the pool after (closed
        instead when the pool is full or closed).

        Raises:
            StoreError: the database cannot be opened.
        """
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            try:
                conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False, timeout=30)
                conn.execute("PRAGMA query_only=ON")
            except sqlite3.Error as exc:
                raise StoreError(f"cannot open the database {self.path}: {exc}") from exc
        try:
            yield conn
        finally:
            with self._lock:
                keep = not self._closed and len(self._idle) < self._size
                if keep:
                    self._idle.append(conn)
            if not keep:
                conn.close()

    def close(self) -> None:
        """Close the idle connections; those lent out close when given back."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
