"""Issue 30, the transport findings, replayed on real `meetmem serve` processes and real stores:

- 2: a body trickled a byte at a time (plain or chunked) held its connection forever, and a flood of such
  connections (or of connections still sending their headers) locked every other client out;
- 10: the per-token rate limit keyed on the raw `Authorization` header (`bearer`, `BEARER` ... each a fresh
  bucket), and `X-Forwarded-For` was believed from any loopback peer;
- 13: `token create --expires 99999999999w` printed a traceback; `Last-Event-ID: 1_000` was read as 1000;
- 14: `/healthz` answered 200 while PostgreSQL was down and counted every tenant's pending vectors for
  anyone; a worker kept every meeting's index in memory;
- and no 5xx detail names the database's address.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from meetmem.store.backends import open_log
from meetmem.store.index.search import TranscriptSearch

BACKENDS = ("sqlite", "postgres")

SEGMENTS = {"device_id": "d1", "segments": [
    {"seq": i, "start": float(i), "end": i + 0.9, "speaker": "A", "text": f"we ship on March {i + 1}"}
    for i in range(3)]}


# -- real servers ------------------------------------------------------------------------------------------
@dataclass
class Served:
    url: str
    token: Callable[[str], str]
    database_url: str | None
    log: Path

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.url.removeprefix("http://").split(":")
        return host, int(port)


@pytest.fixture
def serve(serve_factory: Callable[..., Any], meetmem_cli: Callable[..., Any], cloud_backend: str | None,
          monkeypatch: pytest.MonkeyPatch) -> Callable[..., Served]:
    """`serve(**env)`: `meetmem serve` on the test's store (SQLite or a fresh PostgreSQL database) with
    these `MEETMEM_*` variables, started."""

    def start(**env: str) -> Served:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        process = serve_factory(database_url=cloud_backend)
        process.start()
        extra = ("--database", cloud_backend) if cloud_backend else ()

        def token(tenant: str) -> str:
            result = meetmem_cli("token", "create", "--tenant", tenant, *extra, db=process.db)
            assert result.returncode == 0, result.stderr
            return result.stdout.strip()

        return Served(process.url, token, cloud_backend, process.log_path)

    return start


def _connect(served: Served, source: str = "127.0.0.1") -> socket.socket:
    """A raw connection from `source` (any of 127/8 reaches a loopback server: a second client address)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(20)
    sock.bind((source, 0))
    sock.connect(served.address)
    return sock


def _trickle(sock: socket.socket, head: bytes, pieces: Iterator[bytes], every: float, limit: float) -> bytes:
    """Send `head`, then a piece every `every` seconds until the server answers and closes (returns what it
    said) or `limit` seconds pass (returns b"": still held)."""
    sock.sendall(head)
    answer = b""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        readable, _, _ = select.select([sock], [], [], every)
        if readable:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                return answer
            if not chunk:
                return answer
            answer += chunk
            continue
        try:
            sock.sendall(next(pieces))
        except (BrokenPipeError, ConnectionResetError):
            continue  # closed under us: read what it said
    return b""


def _post_head(token: str, *, chunked: bool) -> bytes:
    framing = b"Transfer-Encoding: chunked" if chunked else b"Content-Length: 100000"
    return (b"POST /v1/meetings/m/segments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + token.encode() + b"\r\n" + framing + b"\r\n\r\n")


def _bytes(chunked: bool) -> Iterator[bytes]:
    while True:
        yield b"1\r\n \r\n" if chunked else b" "


@pytest.mark.backends("sqlite")  # decided before a request reaches the store
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_body_trickled_a_byte_at_a_time_gets_408_at_the_minimum_rate(serve: Callable[..., Served],
                                                                       chunked: bool) -> None:
    # A byte every 0.3 s: never 1 s without one, so the per-read timeout alone never fires.
    served = serve(MEETMEM_BODY_TIMEOUT="1", MEETMEM_BODY_MIN_RATE="100")
    t0 = time.monotonic()
    with _connect(served) as sock:
        answer = _trickle(sock, _post_head(served.token("acme"), chunked=chunked), _bytes(chunked), 0.3, 15)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:300] or "still held after 15 s"
    assert b"arriving too slowly" in answer and b"MEETMEM_BODY_MIN_RATE" in answer
    assert b"connection: close" in answer.lower() and time.monotonic() - t0 < 10


@pytest.mark.backends("sqlite")
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_body_past_its_deadline_gets_408_whatever_its_rate(serve: Callable[..., Served], chunked: bool) -> None:
    served = serve(MEETMEM_BODY_TIMEOUT="1", MEETMEM_BODY_MIN_RATE="0", MEETMEM_BODY_DEADLINE="2")
    t0 = time.monotonic()
    with _connect(served) as sock:
        answer = _trickle(sock, _post_head(served.token("acme"), chunked=chunked), _bytes(chunked), 0.3, 15)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:300] or "still held after 15 s"
    assert b"did not arrive within 2 s" in answer and b"MEETMEM_BODY_DEADLINE" in answer
    assert 1.5 < time.monotonic() - t0 < 10


@pytest.mark.backends("sqlite")
def test_a_body_at_a_fair_rate_is_taken(serve: Callable[..., Served]) -> None:
    """The floor is far under any real client: a batch sent in pieces over 2 s is stored."""
    served = serve(MEETMEM_BODY_TIMEOUT="1", MEETMEM_BODY_MIN_RATE="100")
    import json

    body = json.dumps(SEGMENTS).encode()
    pieces = iter([body[i : i + 60] for i in range(0, len(body), 60)])
    head = (b"POST /v1/meetings/m/segments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + served.token("acme").encode() + b"\r\nConnection: close\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
    with _connect(served) as sock:
        answer = _trickle(sock, head, pieces, 0.2, 15)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:300]


@pytest.mark.backends("sqlite")
def test_a_flood_from_one_address_leaves_room_for_everyone_else(serve: Callable[..., Served]) -> None:
    """Connections still sending their headers count against MEETMEM_MAX_CONNECTIONS: 25 of them from one
    address took all 20 slots, and every other client got 503 (each lives MEETMEM_HEADER_TIMEOUT, and the
    flood opens new ones as fast). Now one address holds at most MEETMEM_PER_CLIENT_REQUESTS connections; the
    rest are answered 429 and closed at once."""
    served = serve(MEETMEM_MAX_CONNECTIONS="20", MEETMEM_PER_CLIENT_REQUESTS="5")
    token = served.token("acme")
    flood = [_connect(served, "127.0.0.2") for _ in range(25)]
    try:
        for sock in flood:
            sock.sendall(b"GET /v1/meetings HTTP/1.1\r\nHost: x\r\n")  # and the rest of the headers, never
        # Another address is served while the flood holds what it may (the server accepts in arrival order).
        with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.1")) as client:
            r = client.get(f"{served.url}/v1/meetings", headers={"Authorization": f"Bearer {token}"}, timeout=10)
        assert r.status_code == 200, r.text
        refused = 0
        deadline = time.monotonic() + 10
        while refused < 20 and time.monotonic() < deadline:  # the refusals are answered at once: poll them
            readable, _, _ = select.select([s for s in flood if s.fileno() != -1], [], [], 0.2)
            for sock in readable:
                answer = sock.recv(65536)
                assert answer.startswith(b"HTTP/1.1 429") and b"127.0.0.2 has 5 connections" in answer, answer
                sock.close()
                refused += 1
        assert refused == 20
    finally:
        for sock in flood:
            sock.close()


class _Flood:
    """`count` trickling connections spread over ten loopback addresses (127.0.0.10-19), each reopened as soon
    as the server closes it, in a thread: half stop partway through their headers, half send whole headers
    promising a body and then a byte a second. `answers` counts what the server said as it closed them."""

    def __init__(self, served: Served, token: str, count: int) -> None:
        self.served = served
        self.heads = [b"POST /v1/meetings/m/segments HTTP/1.1\r\nHost: x\r\n",
                      _post_head(token, chunked=False) + b"{"]
        self.count = count
        self.answers: dict[str, int] = {}
        self.shed = 0  # of them, 408s saying they were closed to make room at MEETMEM_MAX_CONNECTIONS
        self.answered = threading.Event()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _open(self, n: int) -> socket.socket | None:
        try:
            sock = _connect(self.served, f"127.0.0.{10 + n % 10}")
            sock.sendall(self.heads[n % 2])
        except OSError:
            return None
        return sock

    def _run(self) -> None:
        socks = {n: self._open(n) for n in range(self.count)}
        next_byte = time.monotonic() + 1.0
        while not self.stop.is_set():
            live = {s: n for n, s in socks.items() if s is not None}
            readable, _, _ = select.select(list(live), [], [], 0.1)
            for sock in readable:
                try:
                    answer = sock.recv(65536)
                except OSError:
                    answer = b""
                status = answer.split(b" ", 2)[1].decode() if answer.startswith(b"HTTP/1.1 ") else "closed"
                self.answers[status] = self.answers.get(status, 0) + 1
                self.shed += status == "408" and b"MEETMEM_MAX_CONNECTIONS" in answer
                self.answered.set()
                sock.close()
                socks[live[sock]] = self._open(live[sock])  # straight back
            for n, sock in socks.items():
                if sock is None:
                    socks[n] = self._open(n)
                elif n % 2 and time.monotonic() >= next_byte:
                    try:
                        sock.sendall(b" ")
                    except OSError:
                        pass  # closed under us: the select reads what it said
            if time.monotonic() >= next_byte:
                next_byte += 1.0
        for sock in socks.values():
            if sock is not None:
                sock.close()

    def __enter__(self) -> _Flood:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


@pytest.mark.backends("sqlite")
def test_a_trickle_flood_from_many_addresses_sheds_the_slowest_not_the_new_client(
        serve: Callable[..., Served]) -> None:
    """30 trickles from ten addresses (3 each, under the per-address cap) filled all 20 of
    MEETMEM_MAX_CONNECTIONS, and every other client got 503 until they timed out, then again as the flood came
    straight back. Now a complete request makes room by closing the connection that is slowest to send its own,
    so a normal client is served every time, and the trickles are told why they were closed."""
    served = serve(MEETMEM_MAX_CONNECTIONS="20")
    token = served.token("acme")
    with _Flood(served, served.token("flood"), 30) as flood:  # a token of its own: its rate is not acme's
        # Until the server answers a trickle (the 503 of a full server, or one closed to make room), the flood
        # has not yet filled it.
        assert flood.answered.wait(10), "the flood never filled the server"
        statuses = []
        for _ in range(20):  # a new connection each time: the new client is the one that needs a slot
            with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.1")) as client:
                r = client.get(f"{served.url}/v1/meetings", headers={"Authorization": f"Bearer {token}"},
                               timeout=10)
            statuses.append(r.status_code)
            assert r.status_code == 200, (statuses, r.text, flood.answers)
            time.sleep(0.1)  # a client asking now and then, not a flood of its own
    assert flood.shed > 0 and "503" not in flood.answers, flood.answers
    log = served.log.read_text(errors="replace")
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log[-3000:]


# -- tokens and addresses ----------------------------------------------------------------------------------
@pytest.mark.parametrize("spelling", ["Bearer {}", "bearer {}", "BEARER {}", "BeArEr {}", "Bearer   {}",
                                      "bearer\t{}"])
def test_a_token_has_one_rate_bucket_however_its_header_is_spelled(make_api: Any, spelling: str) -> None:
    api = make_api(embedders=None, rate_limit=0.5, rate_burst=3)
    token = api.token("acme")
    ok = [api.client.get("/v1/meetings", headers={"Authorization": "Bearer " + token}).status_code
          for _ in range(3)]
    assert ok == [200, 200, 200]
    r = api.client.get("/v1/meetings", headers={"Authorization": spelling.format(token)})
    assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1, r.text
    # Each spelling is the same token to the routes too (another token: a bucket of its own).
    other = api.token("acme")
    assert api.client.get("/v1/meetings", headers={"Authorization": spelling.format(other)}).status_code == 200


def test_made_up_tokens_share_their_address_bucket(make_api: Any) -> None:
    api = make_api(embedders=None, rate_limit=0.5, rate_burst=3)
    made_up = [f"mm_{i:012x}_{'A' * 43}" for i in range(3)] + ["nonsense"]
    assert [api.client.get("/v1/meetings", headers={"Authorization": f"Bearer {t}"}).status_code
            for t in made_up] == [401, 401, 401, 429]
    # A real token from the same address keeps its own bucket.
    assert api.client.get("/v1/meetings", headers=api.headers(api.token("acme"))).status_code == 200


@pytest.mark.backends("sqlite")
def test_forwarded_for_is_believed_only_from_configured_proxies(serve: Callable[..., Served]) -> None:
    """Made-up tokens share their address's bucket; a made-up X-Forwarded-For must not give each a new
    address (uvicorn's default believes any loopback peer, so a proxy on the host passed it through)."""
    def statuses(url: str) -> list[int]:
        return [httpx.get(f"{url}/v1/meetings", timeout=10, headers={
            "Authorization": f"Bearer mm_{i:012x}_{'A' * 43}", "X-Forwarded-For": f"10.0.0.{i}"}).status_code
            for i in range(4)]

    served = serve(MEETMEM_RATE_LIMIT="0.1", MEETMEM_RATE_BURST="2")
    assert statuses(served.url) == [401, 401, 429, 429]
    proxied = serve(MEETMEM_RATE_LIMIT="0.1", MEETMEM_RATE_BURST="2", MEETMEM_FORWARDED_ALLOW_IPS="127.0.0.1")
    assert statuses(proxied.url) == [401, 401, 401, 401]  # each a client of its own behind the proxy


# -- minor (13) ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("expires", ["99999999999w", "9999-12-31T23:00:00-05:00"])
def test_token_create_with_an_expiry_past_the_calendar_is_a_one_line_error(meetmem_cli: Any, tmp_path: Path,
                                                                           expires: str) -> None:
    result = meetmem_cli("token", "create", "--tenant", "acme", "--expires", expires, db=tmp_path / "t.db")
    assert result.returncode != 0 and result.stdout == ""
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "--expires" in result.stderr and "9999" in result.stderr


def test_last_event_id_is_ascii_digits_only(serve: Callable[..., Served]) -> None:
    served = serve()
    headers = {"Authorization": f"Bearer {served.token('acme')}"}
    assert httpx.post(f"{served.url}/v1/meetings/m/segments", json=SEGMENTS, headers=headers,
                      timeout=10).status_code == 200

    def status(**kwargs: Any) -> tuple[int, bytes]:
        # A stream would start (200) and never end: read its status and let go.
        with httpx.stream("GET", f"{served.url}/v1/meetings/m/events", timeout=10, **kwargs) as r:
            return r.status_code, (r.read() if r.status_code != 200 else b"")

    for last_event_id in ("1_000", "+1", "\u0661", "1 0"):
        code, body = status(headers={**headers, "Last-Event-ID": last_event_id.encode()})
        assert code == 422 and b"Last-Event-ID" in body and b"digits" in body, (last_event_id, code)
    assert status(headers=headers, params={"after": "1_0"})[0] == 422  # the query's resume point, read alike
    assert status(headers={**headers, "Last-Event-ID": "1"})[0] == 200


# -- health (14) --------------------------------------------------------------------------------------------
def test_health_counts_pending_vectors_only_for_a_token(make_api: Any) -> None:
    api = make_api()
    token = api.token("acme")
    assert api.client.post("/v1/meetings/m/segments", json=SEGMENTS, headers=api.headers(token)).status_code == 200
    anonymous = api.client.get("/healthz")
    assert anonymous.status_code == 200 and anonymous.json()["status"] == "ready"
    assert anonymous.json()["pending_vectors"] is None  # no token: nothing about anyone's meetings
    counted = api.client.get("/healthz", headers=api.headers(token)).json()["pending_vectors"]
    assert isinstance(counted, int) and 0 <= counted <= len(SEGMENTS["segments"])
    other = api.client.get("/healthz", headers=api.headers(api.token("globex"))).json()["pending_vectors"]
    assert other == 0  # another tenant's count holds none of acme's


@pytest.fixture
def refuse_connections(pg_cluster: Any) -> Iterator[Callable[[str], None]]:
    """`refuse_connections(url)`: that database takes no connection and its open ones are ended, as when
    its server went down; allowed again at the end."""
    import psycopg
    from psycopg import sql

    names: list[str] = []

    def refuse(url: str) -> None:
        name = url.rsplit("/", 1)[1]
        names.append(name)
        with psycopg.connect(pg_cluster.server.url(), autocommit=True) as conn:
            conn.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(sql.Identifier(name)))
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))

    yield refuse
    with psycopg.connect(pg_cluster.server.url(), autocommit=True) as conn:
        for name in names:
            conn.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS true").format(sql.Identifier(name)))


@pytest.mark.backends("postgres")
def test_health_is_503_while_the_database_is_down_and_names_no_address(
        make_api: Any, refuse_connections: Callable[[str], None]) -> None:
    api = make_api(embedders=None)
    assert api.client.get("/healthz").status_code == 200
    refuse_connections(api.settings.database_url)
    r = api.client.get("/healthz")
    assert r.status_code == 503 and r.json()["status"] == "unavailable", r.text
    assert "cannot be reached" in r.json()["detail"] and r.headers["retry-after"]
    _assert_no_address(r.json()["detail"], api.settings.database_url)


def _assert_no_address(detail: str, url: str | None) -> None:
    from urllib.parse import urlsplit

    assert "://" not in detail, detail
    if url:
        where = urlsplit(url)
        assert f"{where.hostname}:{where.port}" not in detail and f'"{where.hostname}"' not in detail, detail
        assert f"port {where.port}" not in detail, detail


@pytest.mark.backends("postgres")
def test_a_database_refusal_answers_503_without_the_database_address(make_api: Any, pg_cluster: Any) -> None:
    """Any statement PostgreSQL refuses (a NUL in a meeting id did, before the id check caught it; here the
    app's role lost its grant on a table) answered a retryable 503 whose detail named the database's URL,
    host and port."""
    import psycopg

    api = make_api(embedders=None)
    headers = api.headers(api.token("acme"))
    assert api.client.post("/v1/meetings/m/segments", json=SEGMENTS, headers=headers).status_code == 200
    owner = pg_cluster.server.url().rsplit("/", 1)[0] + "/" + api.settings.database_url.rsplit("/", 1)[1]
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute("REVOKE SELECT ON meetings FROM meetmem_app")
    r = api.client.get("/v1/meetings", headers=headers)
    assert r.status_code == 503 and r.headers["retry-after"], r.text
    assert "could not take the request" in r.json()["detail"] and "permission denied" in r.json()["detail"]
    _assert_no_address(r.json()["detail"], api.settings.database_url)


def test_a_503_detail_keeps_no_database_address() -> None:
    from meetmem.cloud.app import public_detail

    said = ('the database postgresql://meetmem_app:***@db.internal:5433/meetmem refused: connection to server at '
            '"db.internal" (10.0.0.5), port 5433 failed: FATAL: too many clients; [fe80::1]:5433 and 10.0.0.5:5433')
    clean = public_detail(said, ("db.internal:5433", '"db.internal"'))
    assert "db.internal" not in clean and "10.0.0.5" not in clean and "5433" not in clean and "://" not in clean
    assert clean.startswith("the database refused:") and "too many clients" in clean


# -- the worker's memory (14) -------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["sqlite"])
def test_the_meeting_indexes_kept_in_memory_are_bounded(tmp_path: Path, backend: str) -> None:
    from meetmem.store.records import SegmentInput

    log = open_log(tmp_path / "t.db")
    try:
        for i in range(6):
            log.append(f"m{i}", "d", [SegmentInput(seq=0, start=0.0, end=1.0, text=f"meeting {i} words")])
        search = TranscriptSearch(log, None, max_meetings=3)
        for i in range(6):
            search.meeting_index(f"m{i}")
        search.meeting_index("m3")  # used again: kept before m4 and m5
        search.meeting_index("m0")  # rebuilt from the log, not lost
        assert [meeting for _, meeting in search._meetings] == ["m5", "m3", "m0"]
        assert [hit.segment.meeting_id for hit in search.search("m1", "words", k=1)] == ["m1"]
        assert len(search._meetings) == 3
    finally:
        log.close()
