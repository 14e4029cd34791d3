"""The audio steps of `meetmem bench faults` (issue 30), each against a fresh `meetmem serve` process on SQLite,
reporting the process's peak RSS (VmHWM, MB) and the CPU seconds it spent on the step.

- `racing_chunk_uploads`: pairs of uploads with different bytes under one (device, chunk seq), sent at the same
  instant: each pair should end 200 + 409, with no file left beside the stored rows, nor any after the
  meeting's deletion.
- `ten_day_gap`: a chunk at the start and one ten days in; four clients at once ask for the whole meeting
  (refused: longer than a render may be), then four at once for the last stretch (one render, shared).
- `trickle_flood`: connections that promise a body and send it a byte every 8 s, spread over ten loopback
  addresses, more of them than a lowered `MEETMEM_MAX_CONNECTIONS` and each reopened as the server closes it,
  while a normal client keeps asking on a new connection each time: was it ever refused, and what became of
  the trickles.
"""

from __future__ import annotations

import selectors
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .fault_checks import create_token, note, wait_up
from .serve_process import Server, environment, free_port, proc_figures

TEN_DAYS = 10 * 24 * 3600.0


def _tone(path: Path, seconds: float, freq: float) -> bytes:
    import numpy as np

    from meetmem.edge.recording import OggOpusWriter

    t = np.arange(int(seconds * 16000)) / 16000
    with OggOpusWriter(path) as writer:
        writer.write((np.sin(2 * np.pi * freq * t) * 8000).astype(np.int16))
    return path.read_bytes()


@contextmanager
def _server(workdir: Path, name: str, env: dict[str, str] | None = None) -> Iterator[tuple[Server, str]]:
    """A fresh `meetmem serve` on its own database that keeps uploaded audio, and a token for it."""
    db = workdir / f"{name}.db"
    token = create_token(db, "faults")
    server = Server(db, free_port(), "none", workdir / f"{name}.log")
    extra = {"MEETMEM_AUDIO_UPLOAD": "true", **(env or {})}
    with environment(extra):
        server.start()
    try:
        wait_up(server)
        yield server, token
    finally:
        server.stop()


def _figures(server: Server, cpu_before: float) -> dict[str, Any]:
    assert server.process is not None
    now = proc_figures(server.process.pid)
    return {"peak_rss_mb": now.get("VmHWM"), "cpu_s": round(now.get("cpu_s", 0.0) - cpu_before, 1)}


def _meeting(client: Any, meeting: str) -> None:
    body = {"device_id": "glasses", "segments": [{"seq": 0, "start": 0, "end": 1, "text": "hello"}]}
    r = client.post(f"/v1/meetings/{meeting}/segments", json=body)
    if r.status_code != 200:
        raise RuntimeError(f"the meeting could not be made: {r.status_code} {r.text[:300]}")


def racing_chunk_uploads(workdir: Path, *, pairs: int, quiet: bool) -> dict[str, Any]:
    import httpx

    a = [_tone(workdir / f"race-a{i}.ogg", 2.0, 300 + 7 * i) for i in range(pairs)]
    b = [_tone(workdir / f"race-b{i}.ogg", 2.0, 900 + 7 * i) for i in range(pairs)]
    t0 = time.monotonic()
    with _server(workdir, "race") as (server, token):
        cpu0 = proc_figures(server.process.pid).get("cpu_s", 0.0) if server.process else 0.0
        headers = {"Authorization": f"Bearer {token}"}
        outcomes: dict[str, int] = {}
        with httpx.Client(base_url=server.url, headers=headers, timeout=60) as client:
            _meeting(client, "race")
            for i in range(pairs):
                barrier = threading.Barrier(2)
                got: list[int] = []

                def put(data: bytes, seq: int = i, barrier: threading.Barrier = barrier, got: list[int] = got) -> None:
                    barrier.wait()
                    try:
                        got.append(client.put(f"/v1/meetings/race/audio/chunks/glasses/{seq}?start={2 * seq}",
                                              content=data, headers={"Content-Type": "audio/ogg"}).status_code)
                    except httpx.HTTPError:
                        got.append(0)

                threads = [threading.Thread(target=put, args=(data,)) for data in (a[i], b[i])]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                key = "+".join(str(s) for s in sorted(got))
                outcomes[key] = outcomes.get(key, 0) + 1
            rows = len(client.get("/v1/meetings/race/audio/chunks").json())
            folder = server.db.with_name(server.db.name + ".audio")
            files = [f for f in folder.rglob("*.ogg") if "rendered" not in f.parts] if folder.exists() else []
            deleted = client.delete("/v1/meetings/race").status_code
            left = [f for f in folder.rglob("*") if f.is_file()] if folder.exists() else []
        figures = _figures(server, cpu0)
    note(quiet, f"racing uploads: {outcomes}")
    return {"step": "racing_chunk_uploads", "pairs": pairs, "outcomes": outcomes,
            "pairs_200_409": outcomes.get("200+409", 0), "pairs_both_200": outcomes.get("200+200", 0),
            "rows": rows, "files": len(files), "orphan_files": max(len(files) - rows, 0),
            "delete_status": deleted, "files_after_delete": len(left),
            "server_error_500": sum(n for k, n in outcomes.items() if "500" in k.split("+")),
            "wall_s": round(time.monotonic() - t0, 1), **figures}


def ten_day_gap(workdir: Path, *, stretch_s: float, clients: int, quiet: bool) -> dict[str, Any]:
    import httpx

    tone = _tone(workdir / "gap.ogg", 2.0, 440.0)
    t0 = time.monotonic()
    with _server(workdir, "gap") as (server, token):
        cpu0 = proc_figures(server.process.pid).get("cpu_s", 0.0) if server.process else 0.0
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=server.url, headers=headers, timeout=600) as client:
            _meeting(client, "gap")
            ogg = {"Content-Type": "audio/ogg"}
            late = TEN_DAYS - 2.0
            uploads = [client.put("/v1/meetings/gap/audio/chunks/glasses/0?start=0", content=tone,
                                  headers=ogg).status_code,
                       client.put(f"/v1/meetings/gap/audio/chunks/glasses/1?start={late}", content=tone,
                                  headers=ogg).status_code]

            def at_once(url: str) -> tuple[list[int], list[int], float]:
                barrier = threading.Barrier(clients)
                statuses: list[int] = []
                sizes: list[int] = []

                def ask() -> None:
                    barrier.wait()
                    try:
                        r = client.get(url)
                        statuses.append(r.status_code)
                        sizes.append(len(r.content))
                    except httpx.HTTPError:
                        statuses.append(0)

                started = time.monotonic()
                threads = [threading.Thread(target=ask) for _ in range(clients)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                return sorted(statuses), sorted(set(sizes)), round(time.monotonic() - started, 1)

            whole, _, whole_s = at_once("/v1/meetings/gap/audio")
            refusal = client.get("/v1/meetings/gap/audio").json().get("detail", "")
            stretch, sizes, stretch_s_took = at_once(f"/v1/meetings/gap/audio?start={TEN_DAYS - stretch_s}"
                                                     f"&end={TEN_DAYS}")
            ranged = client.get(f"/v1/meetings/gap/audio?start={TEN_DAYS - stretch_s}&end={TEN_DAYS}",
                                headers={"Range": "bytes=0-65535"}).status_code
        figures = _figures(server, cpu0)
    note(quiet, f"ten-day gap: whole {whole}, stretch {stretch}")
    statuses = whole + stretch
    return {"step": "ten_day_gap", "clients": clients, "uploads": uploads, "whole_meeting": whole,
            "whole_meeting_s": whole_s, "refusal": refusal[:200], "stretch_s": stretch_s, "stretch": stretch,
            "stretch_took_s": stretch_s_took, "stretch_sizes": sizes, "stretch_range": ranged,
            "server_error_500": statuses.count(500), "wall_s": round(time.monotonic() - t0, 1), **figures}


def trickle_flood(workdir: Path, *, connections: int, seconds: float, max_connections: int | None = None,
                  quiet: bool) -> dict[str, Any]:
    """`connections` bodies trickled a byte every 8 s from ten loopback addresses, each reopened when the server
    closes it (a patient attacker), while a normal client (from 127.0.0.1) asks for its meetings twice a second,
    each time on a new connection (one that must find a slot). `max_connections` sets `MEETMEM_MAX_CONNECTIONS`
    (None: the server's default); more trickles than that fill the server."""
    import httpx

    t0 = time.monotonic()
    env = {"MEETMEM_MAX_CONNECTIONS": str(max_connections)} if max_connections else {}
    with _server(workdir, "trickle", env) as (server, token):
        cpu0 = proc_figures(server.process.pid).get("cpu_s", 0.0) if server.process else 0.0
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
            _meeting(client, "trickle")
        selector = selectors.DefaultSelector()
        request = (f"POST /v1/meetings/trickle/segments HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                   f"{token}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{{").encode()
        opened = 0
        not_opened = 0

        def open_one(n: int) -> None:
            nonlocal opened, not_opened
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.bind((f"127.0.0.{10 + n % 10}", 0))
                sock.connect(("127.0.0.1", server.port))
                sock.sendall(request)
            except OSError:
                sock.close()
                not_opened += 1
                return
            opened += 1
            selector.register(sock, selectors.EVENT_READ, (n, time.monotonic()))

        answers: dict[str, int] = {}  # what the server said to the trickles it closed
        shed = 0  # of them, closed to make room for a complete request (a 408 naming the connection limit)
        held: list[float] = []  # how long each closed trickle held its connection
        normal: dict[str, int] = {}
        first_refusal: float | None = None
        stop = threading.Event()

        def normal_client() -> None:
            nonlocal first_refusal
            transport = httpx.HTTPTransport(local_address="127.0.0.1")
            with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}", "Connection": "close"},
                              timeout=10, transport=transport) as c:
                while not stop.is_set():
                    try:
                        status = str(c.get("/v1/meetings").status_code)
                    except httpx.HTTPError as exc:
                        status = type(exc).__name__
                    normal[status] = normal.get(status, 0) + 1
                    if status != "200" and first_refusal is None:
                        first_refusal = round(time.monotonic() - t0, 1)
                    stop.wait(0.5)

        def closed(key: selectors.SelectorKey, status: str) -> None:
            n, since = key.data
            answers[status] = answers.get(status, 0) + 1
            held.append(time.monotonic() - since)
            selector.unregister(key.fileobj)
            key.fileobj.close()  # type: ignore[union-attr]
            if time.monotonic() < end - 1.0:
                open_one(n)  # the attacker comes straight back

        end = time.monotonic() + seconds
        for n in range(connections):
            open_one(n)
        asker = threading.Thread(target=normal_client, daemon=True)
        asker.start()
        next_byte = time.monotonic() + 8.0
        while time.monotonic() < end:
            for key, _ in selector.select(timeout=min(1.0, max(end - time.monotonic(), 0.01))):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                try:
                    data = sock.recv(4096)
                except OSError:
                    data = b""
                shed += data.startswith(b"HTTP/1.1 408") and b"MEETMEM_MAX_CONNECTIONS" in data
                closed(key, data.split(b" ", 2)[1].decode(errors="replace") if data.startswith(b"HTTP/")
                       else "closed")
            if time.monotonic() >= next_byte:
                next_byte += 8.0
                for key in list(selector.get_map().values()):
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    try:
                        sock.send(b" ")
                    except OSError:
                        closed(key, "reset")
        still_open = len(selector.get_map())
        for key in list(selector.get_map().values()):
            held.append(time.monotonic() - key.data[1])
            selector.unregister(key.fileobj)
            key.fileobj.close()  # type: ignore[union-attr]
        stop.set()
        asker.join(timeout=15)
        figures = _figures(server, cpu0)
    refused = sum(n for status, n in normal.items() if status != "200")
    note(quiet, f"trickle flood: normal client {normal}, trickles answered {answers} ({shed} closed to make "
         f"room), {still_open} still open")
    return {"step": "trickle_flood", "connections": connections, "opened": opened, "not_opened": not_opened,
            "max_connections": max_connections or "default", "seconds": seconds, "normal_client": normal,
            "normal_refused": refused, "normal_first_refused_at_s": first_refusal, "trickles_answered": answers,
            "trickles_shed": shed,
            "trickle_longest_held_s": round(max(held, default=0.0), 1), "trickles_open_at_end": still_open,
            "server_error_500": normal.get("500", 0), "wall_s": round(time.monotonic() - t0, 1), **figures}
