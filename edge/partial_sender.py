"""Partial captions to the cloud's live stream: the latest one only, on a thread of its own, best effort.

A partial is worth something for a second: the capture hands each one over (`offer`) and never waits; the
sender posts the newest it holds (`POST /v1/meetings/{id}/partials`) and drops any it had not sent yet.
A failed post is not retried (the next partial, or the final segment through the outbox, follows); the
last error is kept for the status line. Nothing here touches the outbox: finals go through `sync`.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from .partials import Partial

log = logging.getLogger(__name__)


class PartialSender:
    """Posts the newest partial caption of a meeting to the cloud.

    Args:
        url, token: the cloud and its bearer token (as the uploader's).
        meeting_id, device_id: whose caption it is.
        timeout: seconds a post may take before it is given up.
        transport: an httpx transport (tests); None: the network.
    """

    def __init__(self, url: str, token: str, meeting_id: str, device_id: str, *, timeout: float = 2.0,
                 transport: Any = None) -> None:
        try:
            import httpx
        except ImportError as exc:  # pragma: no cover - httpx is in the edge extra
            from .errors import ModelUnavailable

            raise ModelUnavailable("httpx", "the HTTP client is not installed") from exc
        self._httpx = httpx
        self._client = httpx.Client(base_url=url.rstrip("/"), headers={"Authorization": f"Bearer {token}"},
                                    timeout=timeout, transport=transport)
        self.path = f"/v1/meetings/{meeting_id}/partials"
        self.device_id = device_id
        self.sent = 0
        self.dropped = 0  # replaced by a newer partial before they were sent
        self.last_error: str | None = None
        self._newest: Partial | None = None
        self._cond = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="meetmem-partials", daemon=True)

    def start(self) -> PartialSender:
        self._thread.start()
        return self

    def offer(self, partial: Partial) -> None:
        """Hand over the newest partial (never blocks); an unsent older one is dropped."""
        with self._cond:
            if self._newest is not None:
                self.dropped += 1
            self._newest = partial
            self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join(timeout=5.0)
        self._client.close()

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._newest is not None or self._stopping)
                if self._stopping:
                    return
                partial, self._newest = self._newest, None
            assert partial is not None
            try:
                response = self._client.post(self.path, json={"device_id": self.device_id, **partial.public()})
                if response.status_code >= 400:
                    self.last_error = f"{response.status_code}: {response.text[:200]}"
                    log.debug("partial refused: %s", self.last_error)
                else:
                    self.sent += 1
                    self.last_error = None
            except self._httpx.HTTPError as exc:
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.debug("partial not sent: %s", self.last_error)
