"""The cloud's work, apart from HTTP: ingest, reads, closing meetings, answering, and the background jobs.

The request path only appends to the log and reads from it; embedding and indexing run on the indexer
thread, summaries and the ledger on the summarizer thread (questions read what it stored and never wait
for it), model loading on a loader thread at start-up, and closing silent meetings on a reaper thread.
Routers call this class; it knows nothing of FastAPI, so the same behaviour is testable without a server.
What follows an append (indexing, digests, their deferral to the workers) is `cloud/scheduler.py`;
closing silent meetings and applying retention, `cloud/reaper.py`.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from meetmem.answers.sessions import session_store_for
from meetmem.store.errors import StoreError
from meetmem.store.log import TranscriptLog
from meetmem.store.meeting_meta import MeetingMeta
from meetmem.store.receipts import ReceiptKey
from meetmem.store.records import AppendResult, Closure, Segment, SegmentInput, segment_id_for
from meetmem.store.tombstones import Tombstone

from .live import LiveFeed
from .reaper import Reaper
from .scheduler import JobScheduler
from .voice import VoiceQuestions

if TYPE_CHECKING:
    from meetmem.answers.across import CrossHit, CrossMeetings
    from meetmem.answers.pipeline import Answerer
    from meetmem.answers.records import Answer
    from meetmem.store.index.search import TranscriptSearch
    from meetmem.store.index.search_types import Hit, SearchFilters
    from meetmem.store.records import MeetingDigest
    from meetmem.summarizers.digest import MeetingDigester

log = logging.getLogger(__name__)

State = Literal["loading", "ready", "failed"]


class NotReady(StoreError):
    """The models are still loading (or failed to load); the message says which."""


@dataclass(frozen=True, slots=True)
class ServiceOptions:
    """Background behaviour of the service.

    Args:
        close_after_silence: seconds without a new segment after which an open meeting is closed (0: never).
        reap_interval: how often the reaper looks for silent meetings, in seconds.
        warm_indexes: catch every stored meeting's index up at start-up, before reporting ready.
        summary_pause: seconds the summarizer rests between jobs, coalescing a live meeting's batches.
    """

    close_after_silence: float = 1800.0
    reap_interval: float = 30.0
    warm_indexes: bool = True
    summary_pause: float = 2.0
    #: Delete meetings older than this many days (by start, else last segment), unless the tenant's own
    #: retention setting says otherwise; None: keep (MEETMEM_RETENTION_DAYS). Checked every
    #: `retention_interval` seconds by the reaper, and once at start.
    retention_days: int | None = None
    retention_interval: float = 3600.0
    #: With a job queue (PostgreSQL): seconds after an append at which this process embeds and summarises
    #: the meeting itself if no `meetmem worker` has (0: at once, deferring no jobs).
    fallback_after: float = 30.0


@dataclass(frozen=True, slots=True)
class MeetingInfo:
    meeting_id: str
    segments: int
    duration: float
    closure: Closure | None
    meta: MeetingMeta | None = None


class MeetingService:
    """Meetings of every tenant in one database: the operations behind the HTTP endpoints.

    Args:
        log: the transcript log.
        search: the hybrid search over it (its models load on the loader thread).
        answerer: the answer path shared with the CLI (extractive, or a language model's with citations
            verified and the extractive one as its fallback).
        options: background behaviour.
        voice: the recogniser for spoken questions (none: spoken questions get 503).
        digester: keeps summaries and the ledger (none: overview questions use retrieval alone).
        clock: monotonic seconds (injectable so silence-closing is testable without waiting).
        feed: the live captions' wake-ups (`PgLiveFeed` across API processes on PostgreSQL; in-process else;
            `PgLiveFeed` is shared by every API process on the database).
        jobs: the job queue (`cloud.jobs.JobQueue`, PostgreSQL): after an append the meeting's indexing and
            digest are deferred to `meetmem worker` processes, and done here only if none has done them
            `options.fallback_after` seconds later. None: done here, on the service's own threads.
    """

    def __init__(
        self,
        log: TranscriptLog,
        search: TranscriptSearch,
        answerer: Answerer,
        options: ServiceOptions | None = None,
        *,
        voice: VoiceQuestions | None = None,
        digester: MeetingDigester | None = None,
        clock: Callable[[], float] = time.monotonic,
        receipt_key: ReceiptKey | None = None,
        feed: LiveFeed | None = None,
        jobs: Any = None,
    ) -> None:
        self.log = log
        self.search = search
        self.answerer = answerer
        self.sessions = session_store_for(log)
        self.options = options or ServiceOptions()
        self.clock = clock
        self.voice = voice or VoiceQuestions("none")
        self.feed = feed if feed is not None else LiveFeed()
        self.digester = digester
        self.receipt_key = receipt_key
        self.scheduler = JobScheduler(search, digester, self.options, jobs=jobs,
                                      ready=lambda: self.state == "ready")
        self.on_close: list[Callable[[str, str, Closure], None]] = []
        self.state: State = "loading"
        self.failure: str | None = None
        # The service's clock, whenever it is read (a test may set another).
        self.reaper = Reaper(log, self.options, clock=lambda: self.clock(), close=self.close, delete=self.delete,
                             receipt_key=receipt_key)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- life -------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the background threads; the service answers ingest at once and questions once ready."""
        self.reaper.seed_activity()
        self.scheduler.start()
        for target, name in ((self._load, "meetmem-loader"),
                             (functools.partial(self.reaper.reap_forever, self._stop), "meetmem-reaper")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        self.scheduler.stop()
        for thread in self._threads:
            thread.join(timeout=10)
        self._threads.clear()

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Block until the loader finished (ready or failed); True when ready."""
        for thread in self._threads:
            if thread.name == "meetmem-loader":
                thread.join(timeout)
        return self.state == "ready"

    def _load(self) -> None:
        started = time.perf_counter()
        try:
            routes = self.search.routes
            if routes is not None:
                for model in routes.by_name().values():
                    # Passages, not a query: a query alone may take a torch-free runtime
                    # (store/index/minilm_numpy.py), and the service must not load the passage model later,
                    # on a request's path.
                    model.encode(["warm-up"])
            if self.options.warm_indexes:
                for tenant, meeting_id in self.log.meetings():
                    if self._stop.is_set():
                        return
                    # With a job queue the workers embed what is missing (this process after `fallback_after`).
                    index = self.search.meeting_index(meeting_id, tenant=tenant, embed=self.scheduler.jobs is None)
                    if self.scheduler.jobs is not None and index.unembedded:
                        self.scheduler.indexer.notify(tenant, meeting_id)
        except Exception as exc:  # reported by /healthz; the process keeps taking segments into the log
            self.failure = f"{type(exc).__name__}: {exc}"
            self.state = "failed"
            log.exception("loading the models failed")
            return
        self.voice.load()  # a missing recogniser costs only spoken questions, not readiness
        self.state = "ready"
        if self.digester is not None:
            for tenant, meeting_id in self.log.meetings():
                if not self.digester.is_current(meeting_id, tenant=tenant):
                    self.scheduler.summarize_soon(tenant, meeting_id)
        log.info("ready in %.1f s", time.perf_counter() - started)

    def require_ready(self) -> None:
        if self.state == "loading":
            raise NotReady("the service is still loading its models; retry in a few seconds")
        if self.state == "failed":
            raise NotReady(f"the service could not load its models: {self.failure}")

    # -- ingest -----------------------------------------------------------------------------------------
    def ingest(
        self, tenant: str, meeting_id: str, device_id: str, segments: Sequence[SegmentInput],
        *, meta: MeetingMeta | None = None,
    ) -> tuple[AppendResult, list[str]]:
        """Append one device's batch, all or nothing; indexing and live captions follow in the background.

        Returns:
            what the append did, and the id of every segment of the batch in seq order.
        """
        result = self.log.append(meeting_id, device_id, segments, tenant=tenant, meta=meta)
        ids = [segment_id_for(tenant, meeting_id, device_id, seq) for seq in sorted({s.seq for s in segments})]
        key = (tenant, meeting_id)
        if not segments:
            return result, ids  # nothing stored, no meeting made: nothing for the reaper to close either
        self.reaper.heard(key)
        if result.added:
            self.scheduler.indexer.notify(tenant, meeting_id)
            self.feed.publish(key)
        elif meta is not None and not meta.empty and self.digester is not None and self.state == "ready":
            # A new date changes how "by Friday" resolves: the ledger is remade.
            self.digester.invalidate(meeting_id, tenant=tenant)
            self.scheduler.summarize_soon(tenant, meeting_id)
        return result, ids

    def pending_vectors(self, *, tenant: str | None = None) -> int | None:
        """Segments still waiting for their vectors (None without a model): on PostgreSQL, rows of the whole
        database; on SQLite, rows this process's indexes have not embedded yet; `tenant`'s alone when given."""
        if self.search.routes is None:
            return None
        return self.search.pending_vectors(tenant=tenant)

    # -- reads ------------------------------------------------------------------------------------------
    def segments(self, tenant: str, meeting_id: str, *, start: float | None = None,
                 end: float | None = None) -> list[Segment]:
        return self.log.segments(meeting_id, tenant=tenant, start=start, end=end)

    def chain_after(self, tenant: str, meeting_id: str, after_pos: int, limit: int = 200) -> list[Segment]:
        """Rows appended after a chain position, in arrival order (what a live stream sends next)."""
        return list(self.log.chain(meeting_id, tenant=tenant, after_pos=after_pos, limit=limit))

    def meeting(self, tenant: str, meeting_id: str) -> MeetingInfo:
        count, duration = self.log.meeting_stats(meeting_id, tenant=tenant)
        return MeetingInfo(meeting_id, count, duration, self.log.closure(meeting_id, tenant=tenant),
                           self.log.meta(meeting_id, tenant=tenant))

    def meetings(self, tenant: str) -> list[MeetingInfo]:
        return [self.meeting(tenant, meeting_id) for _, meeting_id in self.log.meetings(tenant=tenant)]

    def require_meeting(self, tenant: str, meeting_id: str) -> None:
        self.log.require_meeting(meeting_id, tenant=tenant)

    def digest(self, tenant: str, meeting_id: str) -> MeetingDigest:
        """The meeting's summaries and ledger for GET summary / ledger.

        A closed meeting's digest is brought up to date here if the summarizer has not reached it yet
        (its summaries are due at once); a live meeting's is what the summarizer stored last, made here
        only if it has made none yet.
        """
        self.log.require_meeting(meeting_id, tenant=tenant)
        self.require_ready()
        if self.digester is None:
            raise NotReady("summaries are not configured on this server")
        if self.log.closure(meeting_id, tenant=tenant) is not None:
            return self.digester.digest(meeting_id, tenant=tenant)
        stored = self.digester.stored(meeting_id, tenant=tenant)
        return stored if stored is not None else self.digester.update(meeting_id, tenant=tenant)

    def stored_digest(self, meeting_id: str, *, tenant: str) -> MeetingDigest | None:
        """What the summarizer stored last (the ask path's view: it never waits for a summary)."""
        return self.digester.stored(meeting_id, tenant=tenant) if self.digester is not None else None

    # -- speakers ---------------------------------------------------------------------------------------
    def speakers(self, tenant: str, meeting_id: str) -> dict[str, Any]:
        """The meeting's speaker map: each label, its name now (a user's or a suggestion) and the evidence."""
        from meetmem.answers.speaker_names import speaker_map
        from meetmem.store.speaker_map import read_current

        self.log.require_meeting(meeting_id, tenant=tenant)
        stored = read_current(self.log, meeting_id, tenant=tenant)
        return {"meeting_id": meeting_id,
                "speakers": speaker_map(self.log.segments(meeting_id, tenant=tenant), stored)}

    def owner_names(self, tenant: str, meeting_id: str, *, confirmed: bool = False) -> dict[str, str]:
        """Speaker label -> its name now (a user's or a suggestion; only a user's when `confirmed`), for the
        labels that have one: what the ledger's and the export's `owner_name` say."""
        return {entry["label"]: entry["name"] for entry in self.speakers(tenant, meeting_id)["speakers"]
                if entry["name"] and (entry["source"] == "user" or not confirmed)}

    def set_speakers(self, tenant: str, meeting_id: str, names: dict[str, str | None]) -> dict[str, Any]:
        """Name (or withdraw the name of) labels: a new version each, the segments untouched."""
        from meetmem.store.speaker_map import speaker_map_for

        speaker_map_for(self.log).set(meeting_id, names, tenant=tenant)
        return self.speakers(tenant, meeting_id)

    def speaker_history(self, tenant: str, meeting_id: str) -> list[dict[str, Any]]:
        from meetmem.store.speaker_map import speaker_map_for

        self.log.require_meeting(meeting_id, tenant=tenant)
        return [entry.public() for entry in speaker_map_for(self.log).history(meeting_id, tenant=tenant)]

    # -- questions --------------------------------------------------------------------------------------
    def ask(self, tenant: str, meeting_id: str, question: str, *, session_id: str | None = None,
            device_id: str | None = None) -> Answer:
        """Answer a question; questions with the same `session_id` (per tenant and meeting) are one
        conversation, each prompt showing the earlier rounds (only a language model uses them)."""
        self.log.require_meeting(meeting_id, tenant=tenant)
        self.require_ready()
        # Only a model's prompt shows a session's rounds: without one, no session is kept.
        session = self.sessions.get(tenant, meeting_id, session_id) if session_id and self.answerer.writer else None
        return self.answerer.ask(meeting_id, question, tenant=tenant, device_id=device_id, session=session)

    def ask_voice(self, tenant: str, meeting_id: str, audio: bytes, *, filename: str,
                  sample_rate: int | None = None, language: str | None = None) -> tuple[str, Answer]:
        """Transcribe a spoken question and answer it; returns the question's text and the answer."""
        self.log.require_meeting(meeting_id, tenant=tenant)
        self.require_ready()
        question = self.voice.transcribe(audio, filename=filename, sample_rate=sample_rate, language=language)
        return question, self.answerer.ask(meeting_id, question, tenant=tenant)

    def across(self) -> CrossMeetings:
        """Search and questions over all of a tenant's meetings (the answerer's routes in the chosen one)."""
        from meetmem.answers.across import CrossMeetings

        return CrossMeetings(self.search, self.answerer)

    def find_all(self, tenant: str, query: str, *, k: int = 10) -> list[CrossHit]:
        self.require_ready()
        return self.across().find(query, tenant=tenant, k=k)

    def ask_all(self, tenant: str, question: str, *, explain: bool = False) -> dict[str, Any]:
        self.require_ready()
        return self.across().ask(question, tenant=tenant).public(explain=explain)

    def find(self, tenant: str, meeting_id: str, query: str, *, k: int = 10,
             filters: SearchFilters | None = None) -> list[Hit]:
        self.log.require_meeting(meeting_id, tenant=tenant)
        self.require_ready()
        mode = "hybrid" if self.search.routes is not None else "bm25"
        return self.search.search(meeting_id, query, tenant=tenant, k=k, filters=filters, mode=mode)

    # -- closing ----------------------------------------------------------------------------------------
    def close(self, tenant: str, meeting_id: str, *, reason: str = "closed") -> Closure:
        """Record the meeting's end; later segments (a device catching up) reopen it."""
        closure = self.log.close_meeting(meeting_id, tenant=tenant, reason=reason)
        key = (tenant, meeting_id)
        self.reaper.closed(key)
        self.feed.publish(key)
        if self.digester is not None and self.state == "ready":
            self.scheduler.summarize_soon(tenant, meeting_id)
        for hook in self.on_close:
            try:
                hook(tenant, meeting_id, closure)
            except Exception:  # a failing hook (a summary job) must not undo or hide the closure
                log.exception("a close hook failed for meeting %r of tenant %r", meeting_id, tenant)
        return closure

    # -- deletion ---------------------------------------------------------------------------------------
    def delete(self, tenant: str, meeting_id: str, *, reason: str = "deleted by the tenant") -> Tombstone:
        """Delete the meeting (store/log.py `delete_meeting`): its rows in one transaction, then its audio
        files, then everything held in memory of it; its open event streams end.

        Raises:
            MeetingNotFound: the tenant has no such meeting (another tenant's is not seen).
        """
        if self.receipt_key is None:
            raise StoreError("this service has no receipt key to sign tombstones with")
        from meetmem.store.audio import AudioStore

        tombstone, shas = self.log.delete_meeting(meeting_id, tenant=tenant, reason=reason, key=self.receipt_key)
        key = (tenant, meeting_id)
        try:
            if shas:  # audio is kept beside the SQLite store only
                AudioStore(self.log).remove_files(meeting_id, shas, tenant=tenant)
        except Exception:  # the rows are gone for good; a file left behind is logged, not a failed deletion
            log.exception("removing the audio files of deleted meeting %r of tenant %r failed", meeting_id, tenant)
        self.reaper.deleted(key)
        self.search.forget(meeting_id, tenant=tenant)
        if self.digester is not None:
            self.digester.forget(meeting_id, tenant=tenant)
        self.sessions.forget(tenant, meeting_id)
        sources = getattr(self.answerer.writer, "sources", None)  # a language model's cached prompt contexts
        if sources is not None and hasattr(sources, "forget"):
            sources.forget(meeting_id, tenant=tenant)
        self.feed.forget(key)
        log.info("deleted meeting %r of tenant %r (%d segments): %s", meeting_id, tenant, tombstone.segments,
                 reason)
        return tombstone

    def tombstones(self, tenant: str) -> list[Tombstone]:
        return self.log.tombstones(tenant=tenant)
