"""A PostgreSQL deployment under load, for `meetmem bench faults --backend postgres` (pg_faults.py): a real
PostgreSQL with pgvector (`meetmem.store.pg.server`) migrated by `meetmem db upgrade`, `meetmem serve` processes
on their own loopback ports and `meetmem worker` processes; devices posting batches to "their" API process and
to the next one when it fails them, as an edge behind a load balancer does; askers asking all along; and the
count afterwards, from the database and `meetmem verify --receipt`."""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .fault_checks import segment
from .serve_pg import run_cli
from .serve_process import Server, Worker, environment, free_port

TENANT = "faults"


@dataclass
class Responses:
    """Every API answer the clients got, by status; what a 5xx said, and whether it said when to retry."""

    statuses: Counter[str] = field(default_factory=Counter)
    unavailable: Counter[str] = field(default_factory=Counter)  # 503 details, by their first words
    unavailable_example: str = ""
    without_retry_after: int = 0
    server_errors: list[str] = field(default_factory=list)  # 500s (and other 5xx but 503): each is a bug
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, kind: str, response: Any) -> None:
        with self.lock:
            self.statuses[f"{kind} {response.status_code}"] += 1
            if response.status_code == 503:
                try:
                    detail = str(response.json().get("detail", ""))
                except ValueError:
                    detail = response.text
                self.unavailable[detail.split("(")[0].split(":")[0].strip()[:120]] += 1
                self.unavailable_example = self.unavailable_example or detail
                if "retry-after" not in response.headers:
                    self.without_retry_after += 1
            elif response.status_code >= 500:
                self.server_errors.append(f"{kind} {response.status_code}: {response.text[:300]}")

    def public(self) -> dict[str, Any]:
        return {"statuses": dict(self.statuses), "unavailable_details": dict(self.unavailable),
                "unavailable_example": self.unavailable_example[:500],
                "unavailable_without_retry_after": self.without_retry_after,
                "server_error_500": len(self.server_errors), "server_errors": self.server_errors[:5]}


class Deployment:
    """A PostgreSQL cluster, one database, N API processes and M workers in `workdir`."""

    def __init__(self, workdir: Path, *, api: int, workers: int, embedder: str = "none",
                 env: dict[str, str] | None = None) -> None:
        from meetmem.store.pg.server import LocalPostgres

        self.workdir = workdir
        self.cluster = LocalPostgres(workdir / "pg")
        self.cluster.start()
        self.url = self.cluster.create_database("faults")
        run_cli("db", "upgrade", "--database", self.url)
        self.key_home = workdir / "keys.db"
        self.token = run_cli("token", "create", "--tenant", TENANT, "--database", self.url, "--db",
                             str(self.key_home))["token"]
        self.env = env or {}
        self.servers = [Server(self.key_home, free_port(), embedder, workdir / f"api-{i + 1}.log",
                               database_url=self.url)
                        for i in range(api)]
        self.workers = [Worker(self.url, embedder, workdir / f"worker-{i + 1}.log")
                        for i in range(workers)]

    def start(self) -> None:
        with environment(self.env):
            for worker in self.workers:
                worker.start()
            for server in self.servers:
                server.start()
        for server in self.servers:
            server.wait_ready(300)

    def restart(self, server: Server) -> None:
        with environment(self.env):
            server.start()
        server.wait_ready(300)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def close(self) -> None:
        for server in self.servers:
            server.stop()
        for worker in self.workers:
            worker.stop()
        self.cluster.remove()


class Devices:
    """Threads posting batches of segments, each to its API process first and to the next on a failure."""

    def __init__(self, deployment: Deployment, responses: Responses, *, devices: int, batch: int,
                 meetings: int = 2, pace: float = 0.05) -> None:
        self.deployment = deployment
        self.responses = responses
        self.batch = batch
        self.pace = pace
        self.keys = [(f"meeting-{d % meetings}", f"device-{d}") for d in range(devices)]
        self.acknowledged: dict[tuple[str, str], set[int]] = {key: set() for key in self.keys}
        self.receipts: dict[str, list[dict[str, Any]]] = {}
        self.failovers = 0
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._device, args=(d,), daemon=True) for d in range(devices)]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self, timeout: float = 300) -> None:
        """Stop after each device's batch in hand is acknowledged (a device never drops what it holds)."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout)

    def posted(self) -> int:
        with self._lock:
            return sum(len(s) for s in self.acknowledged.values())

    def _device(self, number: int) -> None:
        import httpx

        meeting, device = self.keys[number]
        servers = self.deployment.servers
        target = number % len(servers)
        b = 0
        with httpx.Client(headers=self.deployment.headers, timeout=30) as client:
            while not self._stop.is_set():
                seqs = list(range(b * self.batch, (b + 1) * self.batch))
                body = {"device_id": device, "segments": [segment(number, s) for s in seqs]}
                deadline = time.monotonic() + 300
                while True:  # the same batch until acknowledged, as the edge's uploader does
                    try:
                        r = client.post(f"{servers[target].url}/v1/meetings/{meeting}/segments", json=body)
                        self.responses.record("ingest", r)
                        if r.status_code == 200:
                            with self._lock:
                                self.acknowledged[(meeting, device)].update(seqs)
                                self.receipts.setdefault(meeting, []).append(r.json()["receipt"])
                            break
                        if r.status_code < 500 and r.status_code != 429:
                            self.errors.append(f"{device}: HTTP {r.status_code}: {r.text[:200]}")
                            return
                    except httpx.HTTPError:
                        pass
                    if time.monotonic() > deadline:
                        self.errors.append(f"{device}: batch {b} not acknowledged within 300 s")
                        return
                    if len(servers) > 1:  # the balancer sends the retry to the next process
                        target = (target + 1) % len(servers)
                        with self._lock:
                            self.failovers += 1
                    time.sleep(0.05)  # a failed request: try again shortly
                b += 1
                self._stop.wait(self.pace)


class Askers:
    """Threads asking about the meetings the devices fill, round-robin over the API processes."""

    def __init__(self, deployment: Deployment, responses: Responses, *, askers: int, meetings: int = 2) -> None:
        self.deployment = deployment
        self.responses = responses
        self.meetings = meetings
        self.answered = 0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._asker, args=(a,), daemon=True) for a in range(askers)]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(120)

    def _asker(self, number: int) -> None:
        import httpx

        rng = random.Random(number)
        servers = self.deployment.servers
        with httpx.Client(headers=self.deployment.headers, timeout=60) as client:
            k = number
            while not self._stop.is_set():
                server = servers[k % len(servers)]
                k += 1
                meeting = f"meeting-{rng.randrange(self.meetings)}"
                try:
                    r = client.post(f"{server.url}/v1/meetings/{meeting}/ask",
                                    json={"question": f"how many units did device {rng.randrange(4)} order?"})
                    self.responses.record("ask", r)
                    self.answered += r.status_code == 200
                except httpx.HTTPError:
                    pass  # a process being killed or restarted
                self._stop.wait(0.05)


def tally(deployment: Deployment, devices: Devices) -> dict[str, Any]:
    """What the database holds against what the devices were acknowledged; `meetmem verify` on every meeting
    with every receipt the devices got for it."""
    from meetmem.store.pg.log import PgTranscriptLog

    stored = lost = duplicated = 0
    verified = broken = receipts_checked = 0
    problems: list[str] = []
    with PgTranscriptLog(deployment.url) as transcript_log:
        meetings = sorted({m for m, _ in devices.keys})
        for meeting in meetings:
            if not transcript_log.has_meeting(meeting, tenant=TENANT):
                continue
            rows = list(transcript_log.chain(meeting, tenant=TENANT))
            stored += len(rows)
            seen = Counter((row.device_id, row.seq) for row in rows)
            duplicated += sum(n - 1 for n in seen.values() if n > 1)
            for (m, device), seqs in devices.acknowledged.items():
                if m == meeting:
                    lost += len({s for s in seqs if (device, s) not in seen})
    def verify(meeting: str) -> dict[str, Any]:
        path = deployment.workdir / f"receipts-{meeting}.json"
        path.write_text(json.dumps(devices.receipts.get(meeting, [])))
        args = ["verify", meeting, "--tenant", TENANT, "--database", deployment.url, "--db", str(deployment.key_home)]
        if devices.receipts.get(meeting):
            args += ["--receipt", str(path)]
        try:
            return run_cli(*args)
        except Exception as exc:  # a broken chain exits 1: counted, with what it said
            return {"ok": False, "problem": str(exc)[:300]}

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, len(meetings))) as pool:  # one `meetmem verify` per meeting
        for report in pool.map(verify, meetings):
            verified += bool(report["ok"])
            broken += not report["ok"]
            receipts_checked += int(report.get("receipts") or 0)
            if "problem" in report:
                problems.append(report["problem"])
    return {"acknowledged": sum(len(s) for s in devices.acknowledged.values()), "stored": stored,
            "acknowledged_lost": lost, "duplicated": duplicated, "chains_verified": verified,
            "chains_broken": broken, "receipts_checked": receipts_checked, "verify_problems": problems}
