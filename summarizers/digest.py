"""Keeps a meeting's digest (topic sections, L1 per section, L2, the ledger) in step with its log.

The I/O around the pure parts: it reads the meeting's current segments and their stored embeddings, cuts
sections (`sections.TopicSegmenter`), summarizes each newly closed section once from its raw segments
(L1), remakes L2 from all the L1s, re-extracts the ledger from the log, and writes the result whole.
A section's L1 is kept by the section's key, so a live meeting summarizes each section once however often
it is updated, and a rebuild from the log gives the same digest as the incremental path.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from meetmem.store.derived import DerivedStore, derived_store_for
from meetmem.store.log import DEFAULT_TENANT, TranscriptLog
from meetmem.store.records import LedgerItem, MeetingDigest, Section, SectionSummary, Segment

from .base import Summarizer
from .sections import SectionOptions, TopicSegmenter

if TYPE_CHECKING:
    import numpy as np

    from meetmem.store.index.search import TranscriptSearch

log = logging.getLogger(__name__)

LedgerExtractor = Callable[..., list[LedgerItem]]


@dataclass(frozen=True, slots=True)
class DigestOptions:
    """How a meeting is digested: where sections are cut."""

    sections: SectionOptions = field(default_factory=SectionOptions)


@dataclass
class _LiveState:
    """The segmenter of a meeting still in progress, with the segments it has been fed."""

    segmenter: TopicSegmenter
    fed: list[str] = field(default_factory=list)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class MeetingDigester:
    """Builds and stores meetings' digests from the log.

    Args:
        log: the transcript log (the truth).
        search: the meeting search, whose stored embeddings place the topic cuts (None: pauses only).
        summarizer: makes L1 and L2, or a function that makes the summarizer and the ledger's extractor when a
            digest is first made (`backends.make_digest_parts` deferred): a process that only reads stored
            digests, as `meetmem ask` on a closed meeting does, then never loads the ledger's rules or models.
        store: where digests are kept (made on the log when not given).
        extract_ledger: the ledger's extractor (the rules', read incrementally: `ledger.IncrementalLedger`);
            with a function for `summarizer`, the one it makes unless this is given.
        options: section settings.
        max_live: live meetings whose segmenter is kept between updates, the least recently used dropped
            first (None: all); a `meetmem worker` sees every meeting in turn and bounds it.
    """

    def __init__(
        self,
        log: TranscriptLog,
        search: TranscriptSearch | None,
        summarizer: Summarizer | Callable[[], tuple[Summarizer, LedgerExtractor]],
        *,
        store: DerivedStore | None = None,
        extract_ledger: LedgerExtractor | None = None,
        options: DigestOptions | None = None,
        max_live: int | None = None,
    ) -> None:
        self.log = log
        self.search = search
        deferred = not hasattr(summarizer, "summarize_section")  # a Summarizer, or the function that makes one
        self._make_parts: Callable[[], tuple[Summarizer, LedgerExtractor]] | None = (
            summarizer if deferred else None)  # type: ignore[assignment]
        self._summarizer: Summarizer | None = None if deferred else summarizer  # type: ignore[assignment]
        self._extract_ledger = extract_ledger
        self._parts_lock = threading.Lock()
        self.store = store or derived_store_for(log)
        self.options = options or DigestOptions()
        self._live: dict[tuple[str, str], _LiveState] = {}  # least recently used first
        self.max_live = max_live
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self.timings: dict[str, float] = {}
        self._stale: set[tuple[str, str]] = set()
        #: Called with (tenant, digest) after each digest is stored (the service queues webhooks there).
        self.on_saved: list[Callable[[str, MeetingDigest], object]] = []

    @property
    def summarizer(self) -> Summarizer:
        """What makes L1 and L2 (made now if it was deferred)."""
        if self._summarizer is None:
            self._parts()
        assert self._summarizer is not None
        return self._summarizer

    @property
    def extract_ledger(self) -> LedgerExtractor:
        """The ledger's extractor (made now if it was deferred)."""
        if self._extract_ledger is None:
            self._parts()
        assert self._extract_ledger is not None
        return self._extract_ledger

    def _parts(self) -> None:
        with self._parts_lock:
            if self._make_parts is not None:
                summarizer, ledger = self._make_parts()
                self._summarizer = self._summarizer or summarizer
                self._extract_ledger = self._extract_ledger or ledger
                self._make_parts = None
            if self._extract_ledger is None:
                from .ledger import IncrementalLedger

                self._extract_ledger = IncrementalLedger()

    def _lock(self, key: tuple[str, str]) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(key, threading.Lock())

    def forget(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> None:
        """Drop what is held in memory for the meeting (after it was deleted)."""
        key = (tenant, meeting_id)
        self._live.pop(key, None)
        self._stale.discard(key)
        with self._locks_guard:
            self._locks.pop(key, None)

    def invalidate(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> None:
        """Mark the stored digest out of date although no row changed (the meeting's date did)."""
        self._stale.add((tenant, meeting_id))

    def is_current(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> bool:
        """Whether the stored digest already covers every row and the meeting's open/closed state."""
        if (tenant, meeting_id) in self._stale:
            return False
        stored = self.store.through_pos(tenant, meeting_id)
        if stored is None:
            return False
        through = self.log.last_chain_pos(meeting_id, tenant=tenant)
        final = self.log.closure(meeting_id, tenant=tenant) is not None
        return stored == (through, final)

    def digest(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> MeetingDigest:
        """The meeting's digest: the stored one when current, else brought up to date first.

        Raises:
            MeetingNotFound: the tenant has no such meeting.
        """
        self.log.require_meeting(meeting_id, tenant=tenant)
        if self.is_current(meeting_id, tenant=tenant):
            stored = self.store.load(tenant, meeting_id)
            if stored is not None:
                return stored
        return self.update(meeting_id, tenant=tenant)

    def stored(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> MeetingDigest | None:
        """What is stored now, current or not (the live path reads this and never waits)."""
        self.log.require_meeting(meeting_id, tenant=tenant)
        return self.store.load(tenant, meeting_id)

    def stamp(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> tuple[int, bool, str] | None:
        """Identifies the stored digest without reading it (it changes whenever the digest is remade)."""
        return self.store.stamp(tenant, meeting_id)

    def update(self, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> MeetingDigest:
        """Bring the meeting's digest up to date with its log and store it; returns it."""
        key = (tenant, meeting_id)
        with self._lock(key):
            self._stale.discard(key)
            started = time.perf_counter()
            through = self.log.last_chain_pos(meeting_id, tenant=tenant)
            final = self.log.closure(meeting_id, tenant=tenant) is not None
            segments = self.log.segments(meeting_id, tenant=tenant)
            sections, open_from = self._sections(key, segments, final=final)
            cut = time.perf_counter()
            by_id = {s.segment_id: s for s in segments}
            cached = self.store.sections(tenant, meeting_id)
            l1: list[SectionSummary] = []
            for section in sections:
                old = cached.get(section.key)
                # An L1 is made once per section; a model's rejected attempt (kept with its note and the
                # extractive lines) is not retried on every update either.
                if old is not None and (old.backend == self.summarizer.name or old.note is not None):
                    l1.append(replace(old, section=section))
                else:
                    l1.append(self.summarizer.summarize_section(section, [by_id[i] for i in section.segment_ids]))
            summarized = time.perf_counter()
            l2 = self.summarizer.summarize_meeting(l1, by_id) if l1 else ()
            l2_note = getattr(self.summarizer, "last_l2_note", None) if l1 else None
            l2_backend = self.summarizer.name if l1 and not l2_note else "extractive"
            merged = time.perf_counter()
            ledger = tuple(self.extract_ledger(segments, meeting_date=self._meeting_date(meeting_id, tenant)))
            notes = tuple(getattr(self.extract_ledger, "last_notes", None) or ())
            digest = MeetingDigest(
                meeting_id=meeting_id, sections=tuple(l1), l2=l2, ledger=ledger, through_pos=through, final=final,
                open_from=open_from, l2_backend=l2_backend, l2_note=l2_note, made_at=_now(), ledger_notes=notes,
            )
            self.store.save(tenant, digest)
            for hook in self.on_saved:
                hook(tenant, digest)
            done = time.perf_counter()
            self.timings = {"sections_s": cut - started, "l1_s": summarized - cut, "l2_s": merged - summarized,
                            "ledger_s": done - merged, "total_s": done - started}
            return digest

    def rebuild(self) -> int:
        """Forget every digest and make each meeting's again from the log; returns how many were made."""
        self.store.clear()
        self._live.clear()
        made = 0
        for tenant, meeting_id in self.log.meetings():
            self.update(meeting_id, tenant=tenant)
            made += 1
        return made

    # -- parts ------------------------------------------------------------------------------------------
    def _sections(self, key: tuple[str, str], segments: Sequence[Segment], *,
                  final: bool) -> tuple[list[Section], float | None]:
        """Closed sections and where the open one starts, feeding a live meeting's segmenter only what is new.

        The segmenter of a live meeting is kept between updates; when the log's order changed under it (a
        late device's earlier segments, a correction) it starts again from the first segment. Either way
        the sections are the same, since a closed section depends only on the segments around its cuts.
        """
        ids = [s.segment_id for s in segments]
        state = self._live.get(key)
        if state is None or ids[: len(state.fed)] != state.fed:
            state = _LiveState(TopicSegmenter(self.options.sections))
        new = segments[len(state.fed):]
        if new:
            vectors = self._vectors(key, [s.segment_id for s in new])
            state.segmenter.insert_many(zip(new, vectors, strict=True))
            state.fed.extend(s.segment_id for s in new)
        if final:
            state.segmenter.finish()
            self._live.pop(key, None)  # a finished segmenter takes no more segments
        else:
            self._live.pop(key, None)
            self._live[key] = state  # the most recently used; a dropped one starts again from the first segment
            while self.max_live is not None and len(self._live) > self.max_live:
                del self._live[next(iter(self._live))]
        return state.segmenter.sections, state.segmenter.open_from

    def _vectors(self, key: tuple[str, str], segment_ids: Sequence[str]) -> list[np.ndarray | None]:
        if self.search is None or self.search.routes is None:
            return [None] * len(segment_ids)
        tenant, meeting_id = key
        return self.search.segment_vectors(meeting_id, segment_ids, tenant=tenant)

    def _meeting_date(self, meeting_id: str, tenant: str) -> dt.date | None:
        """The day the meeting was held, the anchor for "Friday" or "下周五" (None when unknown).

        Its `started_at` (that day in the meeting's own time zone) when given; else, for a meeting heard
        live, the wall clock of its first segment (its arrival less its position in the meeting). A file
        ingested without a date has no known day: resolving against the day of ingest would give a wrong
        date with confidence, so `due_date` stays null and `due` keeps the words as said.
        """
        return meeting_day(self.log, meeting_id, tenant=tenant)


def meeting_day(log: TranscriptLog, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> dt.date | None:
    """The meeting's day: see `MeetingDigester._meeting_date`."""
    start = meeting_wall_start(log, meeting_id, tenant=tenant)
    return None if start is None else start.date()


def meeting_wall_start(log: TranscriptLog, meeting_id: str, *, tenant: str = DEFAULT_TENANT) -> dt.datetime | None:
    """When the meeting started on the wall clock (aware), from `started_at` or a live device's first segment."""
    from meetmem.store.records import FILE_DEVICE_PREFIX

    meta = log.meta(meeting_id, tenant=tenant)
    started = meta.start_datetime()
    if started is not None:
        return started
    first = next(iter(log.chain(meeting_id, tenant=tenant, limit=1)), None)
    if first is None or first.device_id.startswith(FILE_DEVICE_PREFIX) or not first.received_at:
        return None
    try:
        arrived = dt.datetime.fromisoformat(first.received_at)
    except ValueError:
        return None
    return arrived - dt.timedelta(seconds=float(first.start))
