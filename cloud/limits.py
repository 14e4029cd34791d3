"""Limits that keep one client from holding the service: a body that never arrives, too many requests at once
from one address, too many requests for one token.

An ASGI middleware rather than a rate-limit library: slowapi (over `limits`) rates routes by decorator and
keys on the address, but the two problems found here are a body that trickles in (a timeout on each read of
the body, which no rate limiter has) and one token flooding the service from many addresses. A token
bucket per token and a counter per address are a few lines each, with no new dependency. Uvicorn's own
settings cover the whole process (`limit_concurrency`, `timeout_keep_alive` for idle connections), and
`header_timeout_protocol` adds the deadline on headers it lacks; `meetmem serve` sets all three.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException


@dataclass(frozen=True, slots=True)
class LimitOptions:
    """How much one client may take.

    Args:
        body_timeout: seconds the server waits for each next piece of a request body before answering 408.
        per_client: requests one address may have in progress at once (an event stream counts while open).
        rate: requests per second one token may make on average (0: no limit).
        burst: requests one token may make at once before `rate` applies.
    """

    body_timeout: float = 10.0
    per_client: int = 100
    rate: float = 50.0
    burst: int = 200


class TokenBuckets:
    """A token bucket per key: `take` says how long to wait (0: go ahead). A pure policy; the clock is injectable."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic,
                 max_keys: int = 100_000) -> None:
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self.max_keys = max_keys
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        """Spend one request of `key`'s bucket; returns 0, or the seconds until one is available."""
        if self.rate <= 0:
            return 0.0
        now = self.clock()
        with self._lock:
            level, then = self._buckets.get(key, (float(self.burst), now))
            level = min(float(self.burst), level + (now - then) * self.rate)
            if level < 1.0:
                self._buckets[key] = (level, now)
                return (1.0 - level) / self.rate
            if len(self._buckets) >= self.max_keys and key not in self._buckets:
                self._buckets.clear()  # a flood of made-up tokens must not grow memory without bound
            self._buckets[key] = (level - 1.0, now)
            return 0.0


class ClientLimits:
    """The ASGI middleware applying `LimitOptions` to every HTTP request (`/healthz` included)."""

    def __init__(self, app: Any, options: LimitOptions, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.app = app
        self.options = options
        self.buckets = TokenBuckets(options.rate, options.burst, clock)
        self._active: dict[str, int] = {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        client = (scope.get("client") or ("unknown", 0))[0]
        if self._active.get(client, 0) >= self.options.per_client:
            await _refuse(429, f"{client} has {self.options.per_client} requests in progress already; finish or "
                          "close some first", 1)(scope, receive, send)
            return
        token = next((v for k, v in scope.get("headers") or () if k == b"authorization"), None)
        if token is not None:
            wait = self.buckets.take(hashlib.sha256(token).hexdigest())
            if wait > 0:
                await _refuse(429, f"too many requests for this token: at most {self.options.rate:g} a second "
                              f"(bursts of {self.options.burst}); retry after the Retry-After seconds",
                              math.ceil(wait))(scope, receive, send)
                return
        timeout = self.options.body_timeout
        body_done = False

        async def timed() -> dict[str, Any]:
            # Only the body is timed: once it is all in, a receive waits for the client to go away (a stream
            # listening for the disconnect), which may rightly take hours.
            nonlocal body_done
            if body_done:
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), timeout=timeout)
            except TimeoutError:
                raise StarletteHTTPException(
                    408, f"the request body stopped arriving: nothing for {timeout:g} s (MEETMEM_BODY_TIMEOUT)",
                    headers={"Connection": "close"}) from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        self._active[client] = self._active.get(client, 0) + 1  # one event loop: no lock needed
        try:
            await self.app(scope, timed, send)
        finally:
            left = self._active[client] - 1
            if left:
                self._active[client] = left
            else:
                del self._active[client]


def _refuse(status: int, detail: str, retry_after: int) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status,
                        headers={"Retry-After": str(max(1, retry_after)), "Connection": "close"})


def header_timeout_protocol(seconds: float) -> type[asyncio.Protocol] | None:
    """uvicorn's HTTP/1.1 protocol (httptools) with a deadline on each request's headers.

    Uvicorn times out only an idle kept-alive connection: one that sends a request line and then trickles
    its headers (slowloris) is held forever, and the ASGI app never sees it. This closes the connection when
    a request's headers are not complete within `seconds` of its first byte (or of the connection opening).
    None when httptools is not installed (then uvicorn's default protocol runs without it).
    """
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return None

    class HeaderTimeoutProtocol(HttpToolsProtocol):
        _header_deadline: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            if self._header_deadline is None:
                self._header_deadline = self.loop.call_later(seconds, self._headers_too_slow)

        def _disarm(self) -> None:
            if self._header_deadline is not None:
                self._header_deadline.cancel()
                self._header_deadline = None

        def _headers_too_slow(self) -> None:
            self._header_deadline = None
            if not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._arm()

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return HeaderTimeoutProtocol
