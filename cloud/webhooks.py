"""Webhooks out: a meeting's events queued when its digest is saved, sent signed from threads of their own.

`WebhookEvents` is called by the digester whenever it stores a meeting's digest, in whichever process made
it (an API process, a `meetmem worker`, the CLI): a closed meeting's final digest queues `meeting.closed`
once per closure, and a ledger that differs from every earlier one queues `ledger.updated`. The delivery
rows (store/webhooks.py) hold the whole body, so what is sent is what the meeting was when the event happened.

`WebhookSender` runs in `meetmem serve`: it claims due deliveries from the database and posts each on a small
pool of threads, signed per Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`,
HMAC-SHA256 by the `standardwebhooks` package). An endpoint that is slow or down holds one of those threads
for at most `timeout_s`; ingest and asks never wait on it. A failed attempt is retried with backoff
(`RETRY_AFTER_S`), under the same id, until it succeeds or `MAX_ATTEMPTS` are spent.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from meetmem.store.webhooks import Delivery, Endpoint, WebhookStore

if TYPE_CHECKING:
    from meetmem.store.log import Log
    from meetmem.store.records import MeetingDigest

log = logging.getLogger(__name__)

USER_AGENT = "meetmem-webhooks/1"


def public_url(public: str | None, host: str, port: int) -> str:
    """Where people reach the service (`MEETMEM_PUBLIC_URL`), else the address `meetmem serve` listens on: the
    links in deliveries point there."""
    return public.rstrip("/") if public else f"http://{host}:{port}"


def meeting_link(base_url: str, meeting_id: str) -> str:
    """The meeting's page."""
    return f"{base_url.rstrip('/')}/#/m/{quote(meeting_id, safe='')}"


def event_payload(log: Log, tenant: str, digest: MeetingDigest, *, base_url: str) -> dict[str, Any]:
    """What a delivery says of a meeting: its metadata, its L2 summary, its current ledger, a link to its page."""
    meta = log.meta(digest.meeting_id, tenant=tenant)
    _, duration = log.meeting_stats(digest.meeting_id, tenant=tenant)  # one aggregate, not the rows
    summary = digest.summary_public()
    return {
        "meeting": {"meeting_id": digest.meeting_id, "title": meta.title or digest.meeting_id,
                    "started_at": meta.started_at, "participants": list(meta.participants or ()),
                    "duration": round(duration, 2), "status": "closed" if digest.final else "live",
                    "url": meeting_link(base_url, digest.meeting_id)},
        "summary": summary["l2"],
        "ledger": digest.ledger_public(),
    }


class WebhookEvents:
    """Turns a stored digest into the events the tenant's endpoints want (the digester's `on_saved`)."""

    def __init__(self, log: Log, *, base_url: str) -> None:
        self.log = log
        self.store = WebhookStore(log)
        self.base_url = base_url
        self.sender: WebhookSender | None = None  # woken when something was queued in this process

    def __call__(self, tenant: str, digest: MeetingDigest) -> int:
        try:
            return self._queue(tenant, digest)
        except Exception:  # an event is never worth failing the digest that was saved
            log.exception("queueing webhooks of meeting %r of tenant %r failed", digest.meeting_id, tenant)
            return 0

    def _queue(self, tenant: str, digest: MeetingDigest) -> int:
        wanted = {event for endpoint in self.store.list(tenant) for event in endpoint.events}
        if not wanted:
            return 0
        payload = event_payload(self.log, tenant, digest, base_url=self.base_url)
        added = 0
        if "meeting.closed" in wanted and digest.final:
            added += self.store.enqueue(tenant, "meeting.closed", digest.meeting_id, payload,
                                        key=f"closed@{digest.through_pos}")
        if "ledger.updated" in wanted and digest.ledger:
            version = hashlib.sha256(json.dumps(payload["ledger"], sort_keys=True).encode()).hexdigest()[:32]
            added += self.store.enqueue(tenant, "ledger.updated", digest.meeting_id, payload, key=version)
        if added and self.sender is not None:
            self.sender.wake()
        return added


class WebhookSender:
    """Posts due deliveries, signed, on `workers` threads; looks for due ones every `poll_s` seconds (and at
    once when this process queued one).

    Args:
        store: the endpoints and deliveries.
        workers: deliveries in flight at once (one slow endpoint holds one).
        timeout_s: how long one attempt may take (connect, send, answer) before it counts as failed.
        lease_s: how long a claimed delivery is this sender's before another may take it (longer than
            `timeout_s`: a sender killed mid-attempt leaves it to the next after this).
    """

    def __init__(self, store: WebhookStore, *, workers: int = 4, poll_s: float = 1.0, timeout_s: float = 10.0,
                 lease_s: float = 60.0) -> None:
        self.store = store
        self.workers = workers
        self.poll_s = poll_s
        self.timeout_s = timeout_s
        self.lease_s = max(lease_s, 2 * timeout_s)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._in_flight = 0
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._thread: threading.Thread | None = None
        self._client: Any = None

    def start(self) -> None:
        import httpx

        self._client = httpx.Client(timeout=httpx.Timeout(self.timeout_s), follow_redirects=False,
                                    headers={"User-Agent": USER_AGENT})
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="meetmem-webhook")
        self._thread = threading.Thread(target=self._run, name="meetmem-webhooks", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        if self._client is not None:
            self._client.close()

    def wake(self) -> None:
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.send_due()
            except Exception:  # the database away for a moment: look again on the next round
                log.warning("looking for due webhook deliveries failed", exc_info=True)
            self._wake.wait(self.poll_s)
            self._wake.clear()

    def send_due(self) -> int:
        """Claim what is due (as many as there are free threads) and start sending it; returns how many."""
        assert self._pool is not None
        with self._lock:
            free = self.workers - self._in_flight
        if free <= 0:
            return 0
        claimed = self.store.due(limit=free, lease_s=self.lease_s)
        for delivery, endpoint in claimed:
            with self._lock:
                self._in_flight += 1
            self._pool.submit(self._attempt, delivery, endpoint)
        return len(claimed)

    def _attempt(self, delivery: Delivery, endpoint: Endpoint) -> None:
        try:
            status, error = self.post(delivery, endpoint)
            outcome = self.store.finish(delivery, status=status, error=error)
            log.info("webhook %s (%s, %s) to %s: %s -> %s", delivery.delivery_id, delivery.event,
                     delivery.meeting_id, endpoint.url, status or error, outcome)
        except Exception:
            log.exception("webhook delivery %s failed unexpectedly", delivery.delivery_id)
        finally:
            with self._lock:
                self._in_flight -= 1
            self._wake.set()  # a thread is free: more may be due

    def post(self, delivery: Delivery, endpoint: Endpoint) -> tuple[int | None, str | None]:
        """One attempt: (HTTP status, None) when the endpoint answered, (None, why) when it did not."""
        import httpx

        body = delivery.payload.encode("utf-8")
        headers = signed_headers(endpoint.secret, delivery.delivery_id, body)
        try:
            response = self._client.post(endpoint.url, content=body, headers=headers)
        except httpx.TimeoutException:
            return None, f"no answer within {self.timeout_s:g} s"
        except httpx.HTTPError as exc:
            return None, f"{type(exc).__name__}: {exc}"[:300]
        return response.status_code, None if response.is_success else f"HTTP {response.status_code}"


def signed_headers(secret: str, message_id: str, body: bytes, *, now: datetime | None = None) -> dict[str, str]:
    """The Standard Webhooks headers of one attempt: its id, its time, and the HMAC-SHA256 signature of both
    with the body (`standardwebhooks.Webhook.sign`), beside the JSON content type."""
    from standardwebhooks import Webhook

    when = (now or datetime.now(UTC)).replace(microsecond=0)
    signature = Webhook(secret).sign(message_id, when, body)
    return {"webhook-id": message_id, "webhook-timestamp": str(int(when.timestamp())),
            "webhook-signature": signature, "content-type": "application/json"}
