"""The service's reaper: meetings that fell silent are closed, and meetings past retention deleted.

A meeting with no new segment for `ServiceOptions.close_after_silence` seconds is closed with the reason
`silence`, as if a device had closed it (its digest and close hooks follow); after a restart, open meetings
count their silence from their newest segment's arrival. Every `retention_interval` seconds (and once at
start) the retention policy (store/retention.py) is applied: each meeting past its tenant's retention is
deleted, leaving a tombstone whose reason names the policy. Both run on one thread, every `reap_interval`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from meetmem.store.errors import MeetingNotFound, StoreError
from meetmem.store.retention import Expired, RetentionPolicy

if TYPE_CHECKING:
    from meetmem.store.receipts import ReceiptKey
    from meetmem.store.records import Closure
    from meetmem.store.tombstones import Tombstone

    from .service import ServiceOptions

log = logging.getLogger(__name__)


class Reaper:
    """When each open meeting last heard a segment, and what to close or delete because of it.

    Args:
        log: the transcript log (its open meetings, its meetings' ages, the retention settings).
        options: the service's options (`close_after_silence`, `reap_interval`, `retention_days`,
            `retention_interval`).
        clock: monotonic seconds.
        close: closes a meeting (`MeetingService.close`, so its digest and close hooks follow).
        delete: deletes a meeting (`MeetingService.delete`, so its audio, caches and streams go with it).
        receipt_key: signs tombstones; without one, retention deletes nothing.
    """

    def __init__(self, log: Any, options: ServiceOptions, *, clock: Callable[[], float],
                 close: Callable[..., Closure], delete: Callable[..., Tombstone],
                 receipt_key: ReceiptKey | None) -> None:
        self.log = log
        self.options = options
        self.clock = clock
        self.close = close
        self.delete = delete
        self.receipt_key = receipt_key
        self._retention = RetentionPolicy(log, default_days=self.options.retention_days)
        self._retention_due = 0.0
        self._activity: dict[tuple[str, str], float] = {}
        self._activity_lock = threading.Lock()
        self._reap_failed: set[tuple[str, str]] = set()

    def heard(self, key: tuple[str, str]) -> None:
        """The meeting stored a segment now: its silence starts again."""
        with self._activity_lock:
            self._activity[key] = self.clock()

    def closed(self, key: tuple[str, str]) -> None:
        """The meeting was closed: nothing to close until a segment reopens it."""
        with self._activity_lock:
            self._activity.pop(key, None)

    def deleted(self, key: tuple[str, str]) -> None:
        """The meeting was deleted: nothing of it is kept."""
        with self._activity_lock:
            self._activity.pop(key, None)
        self._reap_failed.discard(key)

    def close_silent(self, now: float | None = None) -> list[tuple[str, str]]:
        """Close every open meeting that has had no new segment for `close_after_silence` seconds."""
        limit = self.options.close_after_silence
        if limit <= 0:
            return []
        now = self.clock() if now is None else now
        with self._activity_lock:
            silent = [key for key, last in self._activity.items() if now - last >= limit]
        closed = []
        for key in silent:
            tenant, meeting_id = key
            try:
                self.close(tenant, meeting_id, reason="silence")
                closed.append(key)
                self._reap_failed.discard(key)
            except MeetingNotFound:
                # Nothing to close (no segment was ever stored): forget it, and say so once.
                with self._activity_lock:
                    self._activity.pop(key, None)
                log.warning("not closing meeting %r of tenant %r: it holds no segments", meeting_id, tenant)
            except StoreError as exc:
                # Kept, to try again next round (a locked or full database may recover), but logged once:
                # a reaper that logs every pass buries every other message.
                if key not in self._reap_failed:
                    self._reap_failed.add(key)
                    log.warning("closing silent meeting %r of tenant %r failed (retrying quietly): %s",
                                meeting_id, tenant, exc)
        return closed

    def apply_retention(self) -> list[Expired]:
        """Delete every meeting past its tenant's retention; returns those deleted."""
        done = []
        for item in self._retention.expired():
            try:
                self.delete(item.tenant, item.meeting_id,
                            reason=f"retention: older than {item.days} days (by {item.basis} {item.since})")
                done.append(item)
            except MeetingNotFound:
                pass  # deleted meanwhile
        return done

    def _retention_round(self) -> None:
        now = self.clock()
        if now < self._retention_due or self.receipt_key is None:
            return
        self._retention_due = now + max(1.0, self.options.retention_interval)
        try:
            self.apply_retention()
        except Exception:  # the next round tries again
            log.exception("applying the retention policy failed")

    def seed_activity(self) -> None:
        """After a restart, open meetings count their silence from their newest segment's arrival."""
        now_wall = datetime.now(UTC)
        now = self.clock()
        for tenant, meeting_id, received_at in self.log.open_meetings():
            try:
                age = (now_wall - datetime.fromisoformat(received_at)).total_seconds() if received_at else 0.0
            except ValueError:
                age = 0.0
            self._activity[(tenant, meeting_id)] = now - max(age, 0.0)

    def reap_forever(self, stop: threading.Event) -> None:
        """Close silent meetings and apply retention every `reap_interval` seconds until `stop` is set."""
        interval = max(0.05, self.options.reap_interval)
        while not stop.wait(interval):
            try:
                self.close_silent()
            except Exception:  # keep reaping; the next round tries again
                log.exception("closing silent meetings failed")
            self._retention_round()
