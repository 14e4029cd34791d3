"""Limits that keep one client from holding the service: a body that never arrives or trickles in, too many
connections or requests at once from one address, too many requests for one token.

An ASGI middleware rather than a rate-limit library: slowapi (over `limits`) rates routes by decorator and
keys on the address, but the problems found here are a body that trickles in (a timeout on each read of the
body, an overall deadline and a minimum rate, which no rate limiter has) and one token flooding the service
from many addresses. A token bucket per token and a counter per address are a few lines each, with no new
dependency. Uvicorn's own settings cover the whole process (`limit_concurrency`, `timeout_keep_alive` for
idle connections), and `header_timeout_protocol` adds what it lacks before a request reaches the app: a
deadline on the headers, a cap on the connections one address holds, and, when the process is at its limit,
room for a complete request made by closing the connection slowest to send its own; `meetmem serve` sets them
all.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

logger = logging.getLogger(__name__)

#: A connection that has waited this long on its client (for a request's headers or body, or for its next
#: request) has had its chance: when the server is full, such connections are closed first, slowest first.
STALLED_AFTER = 1.0

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
    """uvicorn's HTTP/1.1 protocol (httptools) with a deadline on each request's headers, a cap on the
    connections one address may hold, and room made for a complete request when the server is full.

    Uvicorn times out only an idle kept-alive connection: one that sends a request line and then trickles
    its headers (slowloris) is held forever, and the ASGI app never sees it. This closes the connection when
    a request's headers are not complete within `seconds` of its first byte (or of the connection opening).

    Every open connection counts against uvicorn's `limit_concurrency`, whatever its stage, so one address
    opening connections faster than the deadline closes them would lock every other client out (503). With
    `per_client`, an address's connection past that many is answered 429 and closed at once, before it
    counts; connections from `trusted` networks (a reverse proxy speaking for many clients) are not capped
    here (None: every address is trusted), the app's own per-address limit then applies to the forwarded one.

    A flood from many addresses still fills `limit_concurrency`, each trickle held until its deadline and
    then reopened. So when a request's headers are complete and uvicorn would answer it 503, connections
    still waiting on their clients are closed first to make room (the slow are shed, not the new): those
    waiting `STALLED_AFTER` seconds or more, slowest (bytes a second) first, then the longest-waiting of the
    address holding the most connections. A request in the middle of a body gets 408. A request whose
    headers and body are in, and the app working on it, is never closed; with nothing else to close the new
    request gets uvicorn's 503 as before. nginx does the like when out of connections, closing kept-alive
    idle ones first (`ngx_drain_connections`).

    None when httptools is not installed (then uvicorn's default protocol runs without any of this).
    """
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return None
    networks = None if trusted is None else list(trusted)
    open_by_address: dict[str, int] = {}  # one event loop: no lock needed
    # The app tasks of connections closed to make room: told their client is gone, they end within a few
    # turns of the loop, and meanwhile must not count as work in progress (uvicorn's `tasks`).
    winding_down: set[asyncio.Task[Any]] = set()
    shed_tally = _ShedTally()

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
        _shed = False
        _task: asyncio.Task[Any] | None = None  # the app's task for the current request, while it runs

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # uvicorn decides 503 from `self.limit_concurrency` when a request's headers are complete; this
            # decides first (see `_make_room`) and sets it per request, so the configured value is kept here.
            self._capacity = self.limit_concurrency
            self._inner_app = self.app
            self.app = self._run_app
            self._waiting_since = self.loop.time()  # since the connection opened, or its last response
            self._received = 0  # bytes since then

        async def _run_app(self, scope: Any, receive: Any, send: Any) -> None:
            self._task = asyncio.current_task()
            try:
                await self._inner_app(scope, receive, send)
            finally:
                self._task = None

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

        def _waiting_on_client(self) -> bool:
            """Whether this connection waits on its client: for (the rest of) a request's headers, for the
            rest of its body, or for its next request. Not while the app works on a request it has whole."""
            if self._shed or self._refused or self.pipeline or self.transport.is_closing():
                return False
            cycle = self.cycle
            if cycle is None or cycle.response_complete:
                return self._task is None  # (an app still running after its response is at work)
            return cycle.more_body and not cycle.response_started

        def _in_use(self) -> tuple[int, int]:
            """What uvicorn counts for its 503 (connections, app tasks), less the tasks of connections already
            closed to make room."""
            return len(self.connections), len(self.tasks) - sum(1 for task in winding_down if task in self.tasks)

        def _make_room(self) -> bool:
            """Close connections waiting on their clients until this request fits; False if it cannot."""
            capacity: int = self._capacity  # type: ignore[assignment]
            connections, tasks = self._in_use()
            if connections < capacity and tasks < capacity:
                return True
            now = self.loop.time()
            held: dict[str | None, int] = {}
            for protocol in self.connections:
                address = protocol.client[0] if getattr(protocol, "client", None) else None
                held[address] = held.get(address, 0) + 1

            def order(protocol: HeaderTimeoutProtocol) -> tuple[int, float, float]:
                waited = now - protocol._waiting_since
                if waited >= STALLED_AFTER:
                    return 0, protocol._received / waited, -waited
                # Too new to judge by its rate: perhaps its bytes are on their way. The address holding
                # the most connections gives one up, so a flood from a few addresses sheds its own.
                return 1, -held.get(protocol.client[0] if protocol.client else None, 0), -waited

            waiting = [p for p in self.connections
                       if p is not self and isinstance(p, HeaderTimeoutProtocol) and p._waiting_on_client()]
            running = sum(1 for p in waiting if p._task is not None and not p._task.done())
            if connections - len(waiting) >= capacity or tasks - running >= capacity:
                return False  # closing them all would not make room: close none
            for protocol in sorted(waiting, key=order):
                protocol._close_to_make_room()
                connections, tasks = self._in_use()
                if connections < capacity and tasks < capacity:
                    return True
            return False

        def _close_to_make_room(self) -> None:
            self._shed = True
            self._disarm()
            self.connections.discard(self)  # counts no more, at once: its connection_lost comes a turn later
            task = self._task
            if task is not None and not task.done():
                winding_down.add(task)
                task.add_done_callback(winding_down.discard)
            if self._received or (self.cycle is not None and not self.cycle.response_complete):
                body = json.dumps({"detail": f"the service is at its connection limit ({self._capacity}, "
                                   "MEETMEM_MAX_CONNECTIONS) and this request was among the slowest to arrive, so "
                                   "it was closed to make room: send it faster, or retry"}).encode()
                self.transport.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
                                     b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body))
            self.transport.close()
            self.loop.call_later(1.0, self.transport.abort)  # a client that reads nothing cannot keep it open
            shed_tally.add(self._capacity)

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
            if not self._refused and not self._shed:
                self._received += len(data)
                super().data_received(data)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._arm()

        def on_headers_complete(self) -> None:
            self._disarm()
            if self._capacity is not None:  # (an upgrade is uvicorn's to refuse, as it was)
                room = not self.parser.should_upgrade() and self._make_room()
                self.limit_concurrency = None if room else self._capacity
            super().on_headers_complete()

        def on_response_complete(self) -> None:
            self._waiting_since = self.loop.time()
            self._received = 0
            super().on_response_complete()

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


class _ShedTally:
    """Counts the connections closed to make room, in a log line at most every `every` seconds."""

    def __init__(self, every: float = 10.0) -> None:
        self.every = every
        self.count = 0
        self.logged_at: float | None = None

    def add(self, capacity: int | None) -> None:
        self.count += 1
        now = time.monotonic()
        if self.logged_at is None:
            logger.warning("at the connection limit (%s, MEETMEM_MAX_CONNECTIONS): closing connections slow to send "
                           "their requests to make room for complete ones (counted at most every %g s)",
                           capacity, self.every)
        elif now - self.logged_at >= self.every:
            logger.warning("at the connection limit (%s, MEETMEM_MAX_CONNECTIONS): closed %d connections slow to send "
                           "their requests in the last %.0f s", capacity, self.count, now - self.logged_at)
        else:
            return
        self.count = 0
        self.logged_at = now
