"""Limits that keep one client from holding the service: a body that never arrives or trickles in, too many
connections or requests at once from one address, too many requests for one token.

An ASGI middleware rather than a rate-limit library: slowapi (over `limits`) rates routes by decorator and
keys on the address, but the problems found here are a body that trickles in (a timeout on each read of the
body, an overall deadline and a minimum rate, which no rate limiter has) and one token flooding the service
from many addresses. A token bucket per token and a counter per address are a few lines each, with no new
dependency. Uvicorn's own settings cover the whole process (`limit_concurrency`, `timeout_keep_alive` for
idle connections), and `header_timeout_protocol` adds what it lacks before a request reaches the app: a
deadline on the headers and a cap on the connections one address holds; `meetmem serve` sets them all.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

#: Where `ClientLimits` leaves `(token, its stored record or None)` in the request's state, for the routes'
#: token check to reuse (one lookup per request).
TOKEN_STATE = "meetmem.token"


@dataclass(frozen=True, slots=True)
class LimitOptions:
    """How much one client may take.

    Args:
        body_timeout: seconds the server waits for each next piece of a request body before answering 408.
        body_deadline: seconds a whole request body may take to arrive (0: no deadline).
        body_min_rate: bytes per second a body must average once it has had `body_timeout` seconds (0: any
            rate). With the deadline, a body sent a byte at a time cannot hold a connection for long.
        per_client: requests one address may have in progress at once (an event stream counts while open).
        rate: requests per second one token may make on average (0: no limit).
        burst: requests one token may make at once before `rate` applies.
    """

    body_timeout: float = 10.0
    body_deadline: float = 120.0
    body_min_rate: float = 1024.0
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
    """The ASGI middleware applying `LimitOptions` to every HTTP request (`/healthz` included).

    Args:
        lookup: the stored record of a working token (anything with a `token_id`), or None; called in a
            thread. A valid token's requests share the bucket of its record's id, however its header is
            spelled; any other `Authorization` header shares its address's bucket, so made-up tokens cannot
            multiply buckets. Without it, every token shares its address's bucket.
    """

    def __init__(self, app: Any, options: LimitOptions, *, clock: Callable[[], float] = time.monotonic,
                 lookup: Callable[[str], Any] | None = None) -> None:
        self.app = app
        self.options = options
        self.clock = clock
        self.lookup = lookup
        self.buckets = TokenBuckets(options.rate, options.burst, clock)
        self._active: dict[str, int] = {}

    async def _rate_key(self, scope: dict[str, Any], header: bytes, client: str) -> str:
        from .auth import parse_bearer

        token = parse_bearer(header)
        if token is None or self.lookup is None:
            return f"address {client}"
        try:
            record = await run_in_threadpool(self.lookup, token)
        except Exception:  # the database is down: the route's own lookup answers with the outage
            return f"address {client}"
        scope.setdefault("state", {})[TOKEN_STATE] = (token, record)
        return f"token {record.token_id}" if record is not None else f"address {client}"

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        client = (scope.get("client") or ("unknown", 0))[0]
        if self._active.get(client, 0) >= self.options.per_client:
            await _refuse(429, f"{client} has {self.options.per_client} requests in progress already; finish or "
                          "close some first", 1)(scope, receive, send)
            return
        header = next((v for k, v in scope.get("headers") or () if k == b"authorization"), None)
        if header is not None and self.options.rate > 0:
            wait = self.buckets.take(await self._rate_key(scope, header, client))
            if wait > 0:
                await _refuse(429, f"too many requests for this token: at most {self.options.rate:g} a second "
                              f"(bursts of {self.options.burst}); retry after the Retry-After seconds",
                              math.ceil(wait))(scope, receive, send)
                return
        self._active[client] = self._active.get(client, 0) + 1  # one event loop: no lock needed
        try:
            await self.app(scope, self._timed(receive), send)
        finally:
            left = self._active[client] - 1
            if left:
                self._active[client] = left
            else:
                del self._active[client]

    def _timed(self, receive: Any) -> Callable[[], Any]:
        """`receive`, with the body's deadlines: each piece within `body_timeout`, the whole within
        `body_deadline`, and on average `body_min_rate` bytes a second after the first `body_timeout`."""
        opts, clock = self.options, self.clock
        started: float | None = None
        last = 0.0  # when the last piece arrived (or the body was first asked for)
        received = 0
        body_done = False

        async def timed() -> dict[str, Any]:
            # Only the body is timed: once it is all in, a receive waits for the client to go away (a stream
            # listening for the disconnect), which may rightly take hours.
            nonlocal body_done, started, last, received
            if body_done:
                return await receive()
            now = clock()
            if started is None:
                started = last = now
            wait, why = opts.body_timeout, "timeout"
            if opts.body_deadline > 0 and started + opts.body_deadline - now < wait:
                wait, why = started + opts.body_deadline - now, "deadline"
            if opts.body_min_rate > 0:
                # Without another byte, the average falls under the floor at `received / body_min_rate`.
                falls_at = started + max(opts.body_timeout, received / opts.body_min_rate)
                if falls_at - now < wait:
                    wait, why = falls_at - now, "rate"
            try:
                if wait <= 0:
                    raise TimeoutError
                message = await asyncio.wait_for(receive(), timeout=wait)
            except TimeoutError:
                now = clock()
                if now - last >= 0.9 * opts.body_timeout:
                    why = "timeout"  # (about) nothing came for body_timeout: the plainest reason to give
                raise StarletteHTTPException(408, _too_slow(why, opts, received, now - started),
                                             headers={"Connection": "close"}) from None
            last = clock()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        return timed


def _too_slow(why: str, opts: LimitOptions, received: int, elapsed: float) -> str:
    if why == "deadline":
        return (f"the request body did not arrive within {opts.body_deadline:g} s (MEETMEM_BODY_DEADLINE): send it "
                "faster, or in smaller requests")
    if why == "rate":
        return (f"the request body is arriving too slowly: {received} bytes in {elapsed:.0f} s, under the "
                f"{opts.body_min_rate:g} bytes a second the service needs (MEETMEM_BODY_MIN_RATE)")
    return f"the request body stopped arriving: nothing for {opts.body_timeout:g} s (MEETMEM_BODY_TIMEOUT)"


def _refuse(status: int, detail: str, retry_after: int) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status,
                        headers={"Retry-After": str(max(1, retry_after)), "Connection": "close"})


def trusted_networks(addresses: str | None) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network] | None:
    """The networks of `MEETMEM_FORWARDED_ALLOW_IPS` (comma-separated addresses or networks); None for `*`."""
    if addresses is not None and addresses.strip() == "*":
        return None
    networks = []
    for part in (addresses or "").split(","):
        try:
            networks.append(ipaddress.ip_network(part.strip(), strict=False))
        except ValueError:  # a name uvicorn accepts for a unix socket: no TCP peer has it
            continue
    return networks


def header_timeout_protocol(seconds: float, *, per_client: int | None = None,
                            trusted: Iterable[ipaddress.IPv4Network | ipaddress.IPv6Network] | None = ()
                            ) -> type[asyncio.Protocol] | None:
    """uvicorn's HTTP/1.1 protocol (httptools) with a deadline on each request's headers and a cap on the
    connections one address may hold.

    Uvicorn times out only an idle kept-alive connection: one that sends a request line and then trickles
    its headers (slowloris) is held forever, and the ASGI app never sees it. This closes the connection when
    a request's headers are not complete within `seconds` of its first byte (or of the connection opening).

    Every open connection counts against uvicorn's `limit_concurrency`, whatever its stage, so one address
    opening connections faster than the deadline closes them would lock every other client out (503). With
    `per_client`, an address's connection past that many is answered 429 and closed at once, before it
    counts; connections from `trusted` networks (a reverse proxy speaking for many clients) are not capped
    here (None: every address is trusted), the app's own per-address limit then applies to the forwarded one.

    None when httptools is not installed (then uvicorn's default protocol runs without either).
    """
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return None
    networks = None if trusted is None else list(trusted)
    open_by_address: dict[str, int] = {}  # one event loop: no lock needed

    def capped(address: str) -> bool:
        if not per_client or networks is None:
            return False
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return True
        return not any(ip in network for network in networks)

    class HeaderTimeoutProtocol(HttpToolsProtocol):
        _header_deadline: asyncio.TimerHandle | None = None
        _counted: str | None = None
        _refused = False

        def _arm(self) -> None:
            if self._header_deadline is None and not self._refused:
                self._header_deadline = self.loop.call_later(seconds, self._headers_too_slow)

        def _disarm(self) -> None:
            if self._header_deadline is not None:
                self._header_deadline.cancel()
                self._header_deadline = None

        def _headers_too_slow(self) -> None:
            self._header_deadline = None
            if not self.transport.is_closing():
                self.transport.close()

        def _refuse(self, address: str) -> None:
            # Answered before the request is read, then half-closed: a client still sending its request
            # reads the answer instead of a reset. It stops counting against limit_concurrency at once.
            self._refused = True
            self.connections.discard(self)
            body = json.dumps({"detail": f"{address} has {per_client} connections in progress already; finish or "
                               "close some first"}).encode()
            self.transport.write(b"HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n"
                                 b"content-length: %d\r\nretry-after: 1\r\nconnection: close\r\n\r\n%s"
                                 % (len(body), body))
            if self.transport.can_write_eof():
                self.transport.write_eof()
            self.loop.call_later(1.0, self.transport.close)

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            address = self.client[0] if self.client else None
            if address is not None and capped(address):
                if open_by_address.get(address, 0) >= per_client:  # type: ignore[operator]
                    self._refuse(address)
                    return
                open_by_address[address] = open_by_address.get(address, 0) + 1
                self._counted = address
            self._arm()

        def data_received(self, data: bytes) -> None:
            if not self._refused:
                super().data_received(data)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._arm()

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            if self._counted is not None:
                left = open_by_address[self._counted] - 1
                if left:
                    open_by_address[self._counted] = left
                else:
                    del open_by_address[self._counted]
                self._counted = None
            super().connection_lost(exc)

    return HeaderTimeoutProtocol
