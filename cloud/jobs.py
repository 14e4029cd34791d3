"""Background work on PostgreSQL: indexing, embedding and digests as jobs in a queue kept in the database.

The queue is procrastinate's (tables `procrastinate_*`, made by the Alembic revision b20s02_jobs). An API
process defers a job after it appends segments and goes on; any number of `meetmem worker` processes run
them. Nothing here is needed for correctness: with no worker, searches still find new segments by their
words (the search catches up its lexical rows itself) and digests are made on demand, only later.

Each job is safe to run twice and to die halfway:

* `index_meeting` adds the meeting's lexical rows (`ON CONFLICT DO NOTHING`) and embeds the rows that have
  no vector yet, a batch per transaction: a worker killed mid-job leaves whole batches, and the retry
  embeds only what is left;
* `digest_meeting` writes the digest in one transaction (`DerivedStore.save`): a reader sees the old one
  or the new one, never half of it.

A job whose worker dies (kill -9, a lost machine) stays "doing" in the queue; every worker looks for jobs
whose worker stopped beating (`WorkerOptions.stalled_after`) and puts them back, so another runs them.
Jobs per meeting are serialised by a procrastinate lock, and at most one waits per meeting (queueing lock):
a job reads the log when it runs, so one waiting job covers every append made before it starts.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

INDEX_TASK = "meetmem.index_meeting"
DIGEST_TASK = "meetmem.digest_meeting"
QUEUE = "meetmem"


class JobsUnavailable(RuntimeError):
    """The job queue cannot be used (procrastinate missing, or its tables not migrated)."""


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    """How a worker runs.

    Args:
        concurrency: jobs run at once (each in a thread; the embedding model is the bottleneck on 2 cores).
        heartbeat: seconds between the worker's heartbeats in the queue's tables.
        stalled_after: a job whose worker has not beaten for this long is put back in the queue.
        max_attempts: a job that raises is retried up to this many runs in all, with growing waits.
    """

    concurrency: int = 1
    heartbeat: float = 5.0
    stalled_after: float = 30.0
    max_attempts: int = 5


def _procrastinate() -> Any:
    try:
        import procrastinate
    except ImportError as exc:
        raise JobsUnavailable("the job queue needs procrastinate: pip install 'meetmem[postgres]'") from exc
    return procrastinate


def meeting_lock(tenant: str, meeting_id: str) -> str:
    """The lock (and queueing lock) of a meeting's jobs of one kind."""
    return f"{tenant}\x1f{meeting_id}"


def job_app(url: str, work: JobWork | None = None, *, options: WorkerOptions | None = None,
            sync: bool = False) -> Any:
    """A procrastinate App on `url` with meetmem's tasks.

    Args:
        work: what the tasks do (a worker's); None in a process that only defers jobs.
        sync: a synchronous connector (an API process deferring from its threads); else the async one a
            worker runs on.
    """
    procrastinate = _procrastinate()
    opts = options or WorkerOptions()
    connector = procrastinate.SyncPsycopgConnector(conninfo=url) if sync else procrastinate.PsycopgConnector(
        conninfo=url)
    app = procrastinate.App(connector=connector)
    retry = procrastinate.RetryStrategy(max_attempts=opts.max_attempts, exponential_wait=2)

    def need_work() -> JobWork:
        if work is None:
            raise JobsUnavailable("this process defers jobs and runs none")
        return work

    @app.task(name=INDEX_TASK, queue=QUEUE, retry=retry)
    def index_meeting(tenant: str, meeting_id: str) -> dict[str, int]:
        return need_work().index(tenant, meeting_id)

    @app.task(name=DIGEST_TASK, queue=QUEUE, retry=retry)
    def digest_meeting(tenant: str, meeting_id: str) -> dict[str, int]:
        return need_work().digest(tenant, meeting_id)

    return app


class JobWork:
    """What a worker's tasks do, on the worker's own connections and models.

    Args:
        url: the database.
        embedder: the embedding model (or routes), or None for lexical indexing alone.
        digester: makes and stores a meeting's digest (`(tenant, meeting_id) -> digest`), or None when this
            worker makes none.
    """

    def __init__(self, url: str, embedder: Any = None, *,
                 digester: Callable[[str, str], Any] | None = None) -> None:
        from meetmem.store.pg.search import PgSearch, connect_pool

        self.pool = connect_pool(url, max_size=2)
        self.search = PgSearch(self.pool, embedder)
        self.digester = digester

    def index(self, tenant: str, meeting_id: str) -> dict[str, int]:
        """Catch the meeting's search rows up with its log and embed what has no vector yet."""
        added = self.search.catch_up(tenant, meeting_id)
        embedded = self.search.embed_pending(tenant, meeting_id)
        log.info("indexed %s/%s: %d rows added, %d embedded", tenant, meeting_id, added, embedded)
        return {"added": added, "embedded": embedded}

    def digest(self, tenant: str, meeting_id: str) -> dict[str, int]:
        """Make and store the meeting's digest (one transaction)."""
        if self.digester is None:
            raise JobsUnavailable("this worker makes no digests")
        digest = self.digester(tenant, meeting_id)
        return {"through_pos": int(getattr(digest, "through_pos", -1))}

    def close(self) -> None:
        self.pool.close()


class JobQueue:
    """The API side: defers a meeting's jobs, at most one waiting per meeting and kind."""

    def __init__(self, url: str) -> None:
        self.app = job_app(url, sync=True)
        self.app.open()

    def defer(self, task: str, tenant: str, meeting_id: str) -> bool:
        """Queue the task for the meeting; False when one is already waiting (it will see these rows too)."""
        procrastinate = _procrastinate()
        lock = meeting_lock(tenant, meeting_id)
        try:
            self.app.tasks[task].configure(lock=f"{task}:{lock}", queueing_lock=f"{task}:{lock}").defer(
                tenant=tenant, meeting_id=meeting_id)
        except procrastinate.exceptions.AlreadyEnqueued:
            return False
        return True

    def index(self, tenant: str, meeting_id: str) -> bool:
        return self.defer(INDEX_TASK, tenant, meeting_id)

    def digest(self, tenant: str, meeting_id: str) -> bool:
        return self.defer(DIGEST_TASK, tenant, meeting_id)

    def close(self) -> None:
        self.app.close()


def run_worker(url: str, work: JobWork, options: WorkerOptions | None = None) -> None:
    """Run jobs until SIGINT/SIGTERM (a graceful stop: the job in hand finishes first)."""
    opts = options or WorkerOptions()
    app = job_app(url, work, options=opts)
    asyncio.run(_work(app, opts))


#: Seconds a worker that lost the database waits before it connects again.
RECONNECT_PAUSE = 2.0


async def _work(app: Any, opts: WorkerOptions) -> None:
    """Run jobs until a signal stops the worker; when the database goes away under it (a restart, a
    failover), connect again once it is back instead of exiting: the job it held is put back by the
    stalled-job rescue or retried."""
    while True:
        try:
            async with app.open_async():
                rescue = asyncio.create_task(_rescue_stalled(app, opts))
                try:
                    await app.run_worker_async(queues=[QUEUE], concurrency=opts.concurrency,
                                               name="meetmem-worker", update_heartbeat_interval=opts.heartbeat,
                                               stalled_worker_timeout=opts.stalled_after,
                                               install_signal_handlers=True)
                    return  # stopped by SIGINT/SIGTERM
                finally:
                    rescue.cancel()
        except Exception as exc:  # psycopg's OperationalError or procrastinate's ConnectorException
            log.warning("the worker lost the database (%s); connecting again in %.0f s", exc, RECONNECT_PAUSE)
            await asyncio.sleep(RECONNECT_PAUSE)


async def _rescue_stalled(app: Any, opts: WorkerOptions) -> None:
    """Put back the jobs of workers that stopped beating (killed mid-job), so one of the living runs them."""
    while True:
        try:
            for job in await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=opts.stalled_after):
                log.warning("job %s (%s) was left by a dead worker: retrying it", job.id, job.task_name)
                await app.job_manager.retry_job(job)
        except Exception:  # a failed look is tried again at the next tick; the worker keeps running jobs
            log.exception("looking for stalled jobs failed")
        await asyncio.sleep(max(0.5, opts.stalled_after / 3))
