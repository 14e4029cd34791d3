"""What follows a change to a meeting's log, off the request path: its indexing and its digest.

Without a job queue (SQLite, or `MEETMEM_INDEX_FALLBACK_AFTER=0`) both are done in this process: the new rows
are embedded on the indexer thread, the summaries and ledger remade on the summarizer thread. With one
(PostgreSQL), both are deferred to `meetmem worker` processes as jobs, and this process does them itself, on
its fallback thread, only if no worker has `ServiceOptions.fallback_after` seconds later.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .indexer import BackgroundIndexer

if TYPE_CHECKING:
    from meetmem.store.index.search import TranscriptSearch
    from meetmem.summarizers.digest import MeetingDigester

    from .service import ServiceOptions

log = logging.getLogger(__name__)


class JobScheduler:
    """The service's background work on meetings: here on its own threads, or deferred to the workers.

    Args:
        search: the hybrid search whose indexes the indexer keeps up.
        digester: keeps summaries and the ledger (none: no digests are made).
        options: the service's options (`fallback_after`, `summary_pause`).
        jobs: the job queue (`cloud.jobs.JobQueue`, PostgreSQL), or None; not used when `fallback_after` is 0.
        ready: whether the service has loaded its models (no digest is made before).
    """

    def __init__(self, search: TranscriptSearch, digester: MeetingDigester | None, options: ServiceOptions, *,
                 jobs: Any = None, ready: Callable[[], bool]) -> None:
        self.search = search
        self.digester = digester
        self.options = options
        self._ready = ready
        self.summaries = BackgroundIndexer(self._summarize, name="meetmem-summarizer",
                                           pause=self.options.summary_pause)
        self.indexer = BackgroundIndexer(self._index)
        self.jobs = jobs if self.options.fallback_after > 0 else None
        # What no worker did in time, done here (`ServiceOptions.fallback_after`).
        self.fallback = BackgroundIndexer(self._index_here, name="meetmem-fallback")

    def start(self) -> None:
        self.indexer.start()
        self.summaries.start()
        self.fallback.start()

    def stop(self) -> None:
        self.indexer.stop()
        self.summaries.stop()
        self.fallback.stop()

    def _index(self, tenant: str, meeting_id: str) -> None:
        """The indexer's job after an append: the work itself, or with a job queue, the jobs deferred to the
        workers (the lexical rows are added here at once: cheap, and what the pending count reads)."""
        if self.jobs is None:
            self._index_here(tenant, meeting_id)
            return
        self.fallback.notify(tenant, meeting_id, after=self.options.fallback_after)
        rows = getattr(self.search, "rows", None)
        if rows is not None:
            rows.catch_up(tenant, meeting_id)
        self.jobs.index(tenant, meeting_id)
        if self.digester is not None and self._ready():
            self._defer_digest(tenant, meeting_id)

    def _index_here(self, tenant: str, meeting_id: str) -> None:
        """Embed the meeting's rows still lacking vectors and bring its digest up to date, in this process
        (with a job queue: the fallback, taking only vectors and a digest no worker made meanwhile)."""
        exclusive = getattr(self.search, "exclusive", None) if self.jobs is not None else None
        if exclusive is not None:
            with exclusive(tenant, meeting_id) as mine:
                if not mine:  # another API process is at it: look again later
                    self.fallback.notify(tenant, meeting_id, after=self.options.fallback_after)
                    return
                self.search.meeting_index(meeting_id, tenant=tenant, embed=True)
        else:
            self.search.meeting_index(meeting_id, tenant=tenant, embed=True)
        if self.digester is not None and self._ready():
            self.summaries.notify(tenant, meeting_id)

    def summarize_soon(self, tenant: str, meeting_id: str) -> None:
        """Have the meeting's digest remade: by a worker (here only if none has after `fallback_after`), or
        by the summarizer thread."""
        if self.jobs is None:
            self.summaries.notify(tenant, meeting_id)
            return
        self.fallback.notify(tenant, meeting_id, after=self.options.fallback_after)
        self._defer_digest(tenant, meeting_id)

    def _defer_digest(self, tenant: str, meeting_id: str) -> None:
        """Queue the meeting's digest for a worker. The caller has set the fallback first, so a queue that
        refuses the job costs only the wait: the digest is made here after `fallback_after` seconds."""
        try:
            self.jobs.digest(tenant, meeting_id)
        except Exception:  # the fallback does it later
            log.exception("deferring the digest of meeting %r of tenant %r failed", meeting_id, tenant)

    def _summarize(self, tenant: str, meeting_id: str) -> None:
        assert self.digester is not None
        if not self.digester.is_current(meeting_id, tenant=tenant):
            # Its topic sections read the segments' vectors: embed what arrived since the indexer's pass.
            self.search.meeting_index(meeting_id, tenant=tenant, embed=True)
            self.digester.update(meeting_id, tenant=tenant)
