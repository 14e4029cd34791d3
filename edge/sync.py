"""Sync: send the outbox to the cloud in batches, exactly once, without ever holding up capture.

The uploader runs on its own thread. It takes the oldest pending segments, posts them as one batch, and
removes them from the outbox only when the cloud acknowledges the batch. A lost acknowledgement means a
resend, which the cloud ignores (`(device_id, seq)` is stored once), so every segment arrives exactly once.
Network failures and 5xx answers back off exponentially with full jitter (AWS Architecture Blog,
"Exponential Backoff And Jitter", 2015) so that many devices coming back at once do not stampede.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import CloudError
from .outbox import Outbox

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SyncOptions:
    """How the uploader batches and retries.

    Args:
        batch: the most segments per request.
        backoff_base, backoff_max: seconds; the n-th consecutive failure waits a random time in
            [0, min(backoff_max, backoff_base * 2**n)].
        timeout: seconds for one request.
    """

    batch: int = 50
    backoff_base: float = 0.25
    backoff_max: float = 30.0
    timeout: float = 20.0


class Backoff:
    """Exponential backoff with full jitter; a pure policy (the random source is injectable)."""

    def __init__(self, base: float, cap: float, rand: Callable[[], float] = random.random) -> None:
        self.base = base
        self.cap = cap
        self.rand = rand
        self.failures = 0

    def next_delay(self) -> float:
        delay = self.rand() * min(self.cap, self.base * (2 ** min(self.failures, 30)))
        self.failures += 1
        return delay

    def reset(self) -> None:
        self.failures = 0


class CloudClient:
    """The few cloud endpoints the edge uses, over httpx (imported here: the `edge` extra has it)."""

    def __init__(self, url: str, token: str, *, timeout: float = 20.0, transport: Any = None) -> None:
        try:
            import httpx
        except ImportError as exc:  # pragma: no cover - httpx is in the edge extra
            from .errors import ModelUnavailable

            raise ModelUnavailable("httpx", "the HTTP client is not installed") from exc
        self._httpx = httpx
        self.url = url.rstrip("/")
        self._client = httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token}"},
                                    timeout=timeout, transport=transport)

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._client.request(method, path, **kwargs)
        except self._httpx.HTTPError as exc:
            raise CloudError(None, f"{self.url}: {type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            try:
                detail = response.json().get("detail", response.text)
            except ValueError:
                detail = response.text[:300]
            raise CloudError(response.status_code, str(detail))
        return response.json()

    def post_segments(self, meeting_id: str, device_id: str, segments: list[dict[str, Any]]) -> dict[str, Any]:
        return self._call("POST", f"/v1/meetings/{meeting_id}/segments",
                          json={"device_id": device_id, "segments": segments})

    def ask(self, meeting_id: str, question: str, *, explain: bool = False) -> dict[str, Any]:
        return self._call("POST", f"/v1/meetings/{meeting_id}/ask", json={"question": question, "explain": explain})

    def glossary(self, meeting_id: str) -> list[str]:
        """The meeting's glossary as the cloud's ledger holds it (people, products, terms): ASR hotwords for
        a device joining or resuming the meeting. An unknown meeting has none yet."""
        try:
            ledger = self._call("GET", f"/v1/meetings/{meeting_id}/ledger")
        except CloudError as exc:
            if exc.status == 404:
                return []
            raise
        return [item["text"] for item in ledger.get("glossary", []) if item.get("status") == "current"]

    def put_audio_chunk(self, meeting_id: str, device_id: str, chunk_seq: int, start: float,
                        data: bytes) -> dict[str, Any]:
        """Upload one Ogg Opus chunk of the device's recording (idempotent by device and chunk seq)."""
        return self._call("PUT", f"/v1/meetings/{meeting_id}/audio/chunks/{device_id}/{chunk_seq}",
                          params={"start": start}, content=data, headers={"Content-Type": "audio/ogg"})

    def close_meeting(self, meeting_id: str) -> dict[str, Any]:
        return self._call("POST", f"/v1/meetings/{meeting_id}/close")

    def close(self) -> None:
        self._client.close()


class Uploader:
    """Drains the outbox to the cloud on a background thread.

    Args:
        outbox: the durable outbox.
        client: the cloud client.
        options: batching and retry.
        on_ack: called with (segments acknowledged, seconds since they were stored) after each batch.
    """

    def __init__(self, outbox: Outbox, client: CloudClient, options: SyncOptions | None = None, *,
                 sleep: Callable[[float], None] | None = None, audio: Any = None) -> None:
        self.outbox = outbox
        self.audio = audio  # an AudioKeeper whose finished chunks go up once the segments are all sent
        self.client = client
        self.options = options or SyncOptions()
        self.backoff = Backoff(self.options.backoff_base, self.options.backoff_max)
        self.sent = 0
        self.last_error: CloudError | None = None
        self.fatal: CloudError | None = None
        self.ack_times: list[float] = []  # monotonic time of each acknowledgement, for latency figures
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._idle = threading.Condition()
        self._thread: threading.Thread | None = None
        self._sleep = sleep

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="meetmem-sync", daemon=True)
            self._thread.start()

    def notify(self) -> None:
        """New segments are in the outbox: send them now rather than at the next retry."""
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=self.options.timeout + 5)
            self._thread = None

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until the outbox is empty (True) or `timeout` passes, or sync hits a fatal error (False)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._idle:
            while self.outbox.stats().pending and self.fatal is None:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._wake.set()
                self._idle.wait(min(remaining, 0.5) if remaining is not None else 0.5)
        return self.outbox.stats().pending == 0

    def send_once(self) -> int:
        """Send one batch; returns how many segments the cloud acknowledged (0 when nothing was pending).

        Raises:
            CloudError: the batch was not acknowledged (it stays in the outbox unless refused for good).
        """
        batch = self.outbox.pending(self.options.batch)
        if not batch:
            return 0
        meeting_id = batch[0].meeting_id
        try:
            answer = self.client.post_segments(meeting_id, self.outbox.device_id, [s.payload() for s in batch])
        except CloudError as exc:
            if exc.status in (409, 422):
                # The cloud will never take these as they are; keep them aside, and say so loudly.
                self.outbox.reject(batch, f"HTTP {exc.status}: {exc.detail}")
            raise
        receipt = answer.get("receipt") if isinstance(answer, dict) else None
        self.outbox.ack(meeting_id, [s.seq for s in batch], receipt=receipt if isinstance(receipt, dict) else None)
        self.sent += len(batch)
        now = time.monotonic()
        self.ack_times.extend([now] * len(batch))
        return len(batch)

    def _run(self) -> None:
        while not self._stop.is_set():
            # Cleared before looking at the outbox: a notify from here on is either seen by this look or
            # leaves the event set, so the wait below returns at once (none is lost between wait and clear).
            self._wake.clear()
            try:
                sent = self.send_once()
            except CloudError as exc:
                self.last_error = exc
                if exc.status in (401, 403, 404):
                    # A bad or revoked token: retrying cannot help. Everything stays in the outbox.
                    self.fatal = exc
                    log.error("sync stopped: %s; the segments are safe in the outbox %s", exc, self.outbox.path)
                    self._notify_idle()
                    return
                if exc.status in (409, 422):
                    continue
                delay = self.backoff.next_delay()
                log.warning("sync: %s; retrying in %.1f s (%d segments waiting)", exc, delay,
                            self.outbox.stats().pending)
                self._wait(delay)
                continue
            except Exception:  # the thread must survive anything; the outbox keeps the segments
                log.exception("sync failed unexpectedly; retrying")
                self._wait(self.backoff.next_delay())
                continue
            if sent == 0 and self.audio is not None:
                try:
                    from .recording import upload_pending

                    upload_pending(self.audio, self.client, self.outbox.device_id)
                except CloudError as exc:
                    self.last_error = exc
                    delay = self.backoff.next_delay()
                    log.warning("sync: audio: %s; retrying in %.1f s", exc, delay)
                    self._wait(delay)
                    continue
            self.last_error = None
            self.backoff.reset()
            if sent == 0:
                self._notify_idle()
                self._wake.wait(1.0)

    def _wait(self, seconds: float) -> None:
        if self._sleep is not None:
            self._sleep(seconds)
            return
        self._stop.wait(seconds)

    def _notify_idle(self) -> None:
        with self._idle:
            self._idle.notify_all()
