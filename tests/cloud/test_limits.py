"""One client cannot hold the service (issue 16, item 6): bodies that trickle in, too many requests at once
from one address, too many requests for one token."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from meetmem.cloud.limits import TokenBuckets

#: The per-token rate reads its tokens from the store: on both. The slow-body, slot and header limits are the
#: HTTP server's, decided before a request reaches the store, so their real servers run on SQLite alone.
BACKENDS = ("sqlite", "postgres")


def _promise_a_body(url: str, token: str, sent: bytes = b'{"device_i') -> socket.socket:
    """A request that announces 100 kB of body and sends 10 bytes of it (the slow-body attack)."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    sock.sendall(b"POST /v1/meetings/m/segments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Authorization: Bearer " + token.encode() + b"\r\nContent-Length: 100000\r\n\r\n" + sent)
    return sock


def _read_response(sock: socket.socket) -> bytes:
    data = b""
    while True:
        chunk = sock.recv(65536)  # the socket's timeout is the deadline
        if not chunk:
            return data
        data += chunk


@pytest.fixture
def cloud(serve_factory: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    def start(**env: str) -> Any:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        serve = serve_factory()
        serve.start()
        return serve

    return start


def test_a_body_that_stops_arriving_gets_408_and_the_connection_closes(cloud: Callable[..., Any],
                                                                       token_maker: Any) -> None:
    serve = cloud(MEETMEM_BODY_TIMEOUT="1")
    sock = _promise_a_body(serve.url, token_maker(serve.db, "acme"))
    t0 = time.monotonic()
    with sock:
        answer = _read_response(sock)  # returns only once the server closes the connection
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b"stopped arriving" in answer and time.monotonic() - t0 < 20


def test_one_address_cannot_take_every_slot(cloud: Callable[..., Any], token_maker: Any) -> None:
    serve = cloud(MEETMEM_BODY_TIMEOUT="60", MEETMEM_PER_CLIENT_REQUESTS="4")
    token = token_maker(serve.db, "acme")
    held = [_promise_a_body(serve.url, token) for _ in range(4)]
    try:
        deadline = time.monotonic() + 20
        while True:  # the four connections are accepted by the server in its own time: poll, do not sleep
            r = httpx.get(f"{serve.url}/v1/meetings", headers={"Authorization": f"Bearer {token}"}, timeout=10)
            if r.status_code == 429 or time.monotonic() > deadline:
                break
        assert r.status_code == 429 and "in progress" in r.json()["detail"] and r.headers["retry-after"]
    finally:
        for sock in held:
            sock.close()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # closed connections give their slots back
        r = httpx.get(f"{serve.url}/v1/meetings", headers={"Authorization": f"Bearer {token}"}, timeout=10)
        if r.status_code == 200:
            break
    assert r.status_code == 200


def test_a_token_over_its_rate_gets_429_with_retry_after(make_api: Any) -> None:
    api = make_api(embedders=None, rate_limit=0.5, rate_burst=3)
    busy, other = api.headers(api.token("acme")), api.headers(api.token("acme"))
    assert [api.client.get("/v1/meetings", headers=busy).status_code for _ in range(3)] == [200, 200, 200]
    r = api.client.get("/v1/meetings", headers=busy)
    assert r.status_code == 429 and "at most 0.5 a second" in r.json()["detail"] and int(r.headers["retry-after"]) >= 1
    assert api.client.get("/v1/meetings", headers=other).status_code == 200  # per token, not per tenant


def test_token_buckets_refill_at_the_rate() -> None:
    now = [0.0]
    buckets = TokenBuckets(rate=2.0, burst=2, clock=lambda: now[0])
    assert [buckets.take("a"), buckets.take("a")] == [0.0, 0.0]
    assert buckets.take("a") == pytest.approx(0.5)
    assert buckets.take("b") == 0.0
    now[0] = 0.5
    assert buckets.take("a") == 0.0 and buckets.take("a") > 0
    assert TokenBuckets(rate=0, burst=1).take("a") == 0.0


def test_headers_that_trickle_in_lose_the_connection(cloud: Callable[..., Any]) -> None:
    """Slowloris: a request line and a header, then nothing. The server closes the connection."""
    serve = cloud(MEETMEM_HEADER_TIMEOUT="1")
    host, port = serve.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=20)
    t0 = time.monotonic()
    with sock:
        sock.sendall(b"GET /v1/meetings HTTP/1.1\r\nHost: x\r\n")
        assert _read_response(sock) == b""  # closed without an answer: nothing was asked yet
    assert time.monotonic() - t0 < 15
    # A request that completes its headers in time is served as before.
    assert httpx.get(f"{serve.url}/healthz", timeout=10).status_code == 200
