"""Background indexing: new segments are embedded and indexed off the request path.

An ingest request returns as soon as its batch is committed to the log; it only tells this worker which
meeting grew. The worker catches that meeting's index up (BM25 postings and vectors, cached in the
database). A search catches up on its own too, so a segment is searchable the moment it is acknowledged;
the worker just makes sure the search rarely has anything left to do.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from meetmem.store.errors import MeetingNotFound

log = logging.getLogger(__name__)

MeetingKey = tuple[str, str]


class BackgroundIndexer:
    """One worker thread that brings meetings' indexes up to date, coalescing repeated notices.

    Args:
        catch_up: brings one meeting's index up to date (`TranscriptSearch.meeting_index`), or whatever
            derived data this worker keeps (the summaries and ledger).
        name: the thread's name.
        pause: seconds the worker rests after each job, so notices that arrive meanwhile are coalesced
            (a summary need not be remade for every batch of a live meeting).
    """

    def __init__(self, catch_up: Callable[[str, str], object], *, name: str = "meetmem-indexer",
                 pause: float = 0.0) -> None:
        self._catch_up = catch_up
        self._name = name
        self._pause = pause
        self._pending: dict[MeetingKey, float] = {}  # meeting -> when it is due (monotonic seconds)
        self._cond = threading.Condition()
        self._stopping = False
        self._busy = False
        self._thread: threading.Thread | None = None
        self.indexed_batches = 0
        self.failures = 0

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()

    def notify(self, tenant: str, meeting_id: str, *, after: float = 0.0) -> None:
        """The meeting gained segments: index them soon, or `after` seconds from now (several notices before
        the worker runs are one, due at the earliest of their times)."""
        due = time.monotonic() + max(0.0, after)
        with self._cond:
            key = (tenant, meeting_id)
            self._pending[key] = min(due, self._pending.get(key, due))
            self._cond.notify()

    def pending(self) -> int:
        """Meetings waiting for this worker (due or not yet)."""
        with self._cond:
            return len(self._pending)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until nothing is pending or running (for benchmarks and shutdown); False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._pending or self._busy:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True

    def stop(self, timeout: float = 10.0) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopping:
                    if self._pending:
                        key, due = min(self._pending.items(), key=lambda item: item[1])
                        wait = due - time.monotonic()
                        if wait <= 0:
                            break
                        self._cond.wait(wait)
                    else:
                        self._cond.wait()
                if self._stopping:
                    return
                del self._pending[key]
                self._busy = True
            try:
                self._catch_up(*key)
                self.indexed_batches += 1
            except MeetingNotFound:
                pass
            except Exception:  # the worker must outlive one bad meeting; the search path will retry it
                self.failures += 1
                log.exception("%s: meeting %r of tenant %r failed", self._name, key[1], key[0])
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()
                    if self._pause > 0 and not self._stopping:
                        self._cond.wait_for(lambda: self._stopping, timeout=self._pause)
