"""`meetmem bench faults --backend postgres`: faults of a PostgreSQL deployment, with real processes.

A deployment here is a real PostgreSQL with pgvector (`meetmem.store.pg.server`), migrated by `meetmem db
upgrade`, with `meetmem serve` processes on their own loopback ports and `meetmem worker` processes. Devices
post batches of segments to "their" API process and, when it fails them (a refused connection, a 5xx), send the
same batch to the next process, as an edge behind a load balancer does; askers ask questions all along.

- `api_killed_mid_ingest`: one of two API processes is SIGKILLed while devices post to it; they carry on
  against the other, and the killed one is started again.
- `postgres_restarted_under_load`: PostgreSQL itself is stopped (`immediate`: as a crash) while devices post
  and askers ask, kept down for a while, and started again. While it is down every API answer must be a 503
  that says what happened, with Retry-After, never a 500; once it is back the processes must recover by
  themselves: ingest and questions on every process, a live-caption stream on one process woken by a segment
  posted to another (LISTEN/NOTIFY), an ask session carried on, tokens checked, and a job run by the worker.
- `worker_killed_mid_job`: a worker is SIGKILLed while it embeds a meeting; another worker takes the job
  over and finishes it once.

After each step, from the database: every acknowledged segment stored (each receipt the devices got matches
the chain, checked by `meetmem verify --receipt`), no (device_id, seq) stored twice, every chain verified.
"""

from __future__ import annotations

import random
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .fault_checks import note, segment, wait_until
from .pg_deployment import TENANT, Askers, Deployment, Devices, Responses, tally
from .serve_pg import run_cli
from .serve_process import Server, Worker


def api_killed_mid_ingest(workdir: Path, *, devices: int = 4, batch: int = 20, seconds: float = 4.0,
                          quiet: bool = False) -> dict[str, Any]:
    """Two API processes; devices post to both; the first is SIGKILLed mid-ingest and started again."""
    t0 = time.monotonic()
    deployment = Deployment(workdir, api=2, workers=0)
    responses = Responses()
    try:
        deployment.start()
        load = Devices(deployment, responses, devices=devices, batch=batch)
        askers = Askers(deployment, responses, askers=1)
        load.start()
        wait_until(lambda: load.posted() >= devices * batch, 60, "devices posting")
        askers.start()  # once the meetings exist
        victim = deployment.servers[0]
        assert victim.process is not None
        victim.process.send_signal(signal.SIGKILL)
        victim.process.wait()
        note(quiet, "API process 1 killed mid-ingest")
        at_kill = load.posted()
        # The devices of the dead process carry on against the other one.
        wait_until(lambda: load.posted() >= at_kill + devices * batch, 60, "ingest through the other process")
        deployment.restart(victim)
        note(quiet, "API process 1 started again")
        at_restart = load.posted()
        wait_until(lambda: load.posted() >= at_restart + devices * batch, 60, "ingest after the restart")
        end = time.monotonic() + seconds
        wait_until(lambda: time.monotonic() >= end, seconds + 1, "the rest of the load", every=0.2)
        load.stop()
        askers.stop()
        result = tally(deployment, load)
    finally:
        deployment.close()
    return {"step": "api_killed_mid_ingest", "devices": devices, "batch": batch, "failovers": load.failovers,
            "answers": askers.answered, "device_errors": load.errors[:5], **responses.public(), **result,
            "wall_s": round(time.monotonic() - t0, 1)}


def _live_event(deployment: Deployment, listen: Server, post: Server, meeting: str, timeout: float) -> float | None:
    """Seconds from posting a segment to `post` until a stream of the meeting opened on `listen` sends it
    (None: not within `timeout`). The meeting must exist (a stream of an unknown meeting is a 404)."""
    import httpx

    got = threading.Event()
    opened = threading.Event()
    marker = f"live check {random.randrange(10**9)}"

    def follow() -> None:
        try:
            with httpx.stream("GET", f"{listen.url}/v1/meetings/{meeting}/events", headers=deployment.headers,
                              params={"after": 0}, timeout=httpx.Timeout(30, read=timeout + 5)) as stream:
                for line in stream.iter_lines():
                    if line.startswith(":"):
                        opened.set()
                    elif line.startswith("data:") and marker in line:
                        got.set()
                        return
        except httpx.HTTPError:
            return

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    if not opened.wait(timeout):
        return None
    time.sleep(0.3)  # the stream has read the log and waits for a wake-up now
    body = {"device_id": "live-check", "segments": [{"seq": int(time.time() * 1000), "start": 0.0, "end": 1.0,
                                                      "text": marker}]}
    sent = time.monotonic()
    r = httpx.post(f"{post.url}/v1/meetings/{meeting}/segments", json=body, headers=deployment.headers, timeout=30)
    if r.status_code != 200:
        return None
    found = got.wait(timeout)
    reader.join(1)
    return round(time.monotonic() - sent, 2) if found else None


def postgres_restarted_under_load(workdir: Path, *, devices: int = 4, batch: int = 10, askers: int = 2,
                                  down_s: float = 3.0, quiet: bool = False) -> dict[str, Any]:
    """PostgreSQL stopped as by a crash while devices post and askers ask, then started again."""
    import httpx

    t0 = time.monotonic()
    # Streams look again only every 60 s: a live segment sooner than that was carried by a notification.
    deployment = Deployment(workdir, api=2, workers=1, env={"MEETMEM_SSE_KEEPALIVE": "60"})
    responses = Responses()
    out: dict[str, Any] = {"step": "postgres_restarted_under_load", "devices": devices, "batch": batch,
                           "askers": askers, "down_s": down_s}
    try:
        deployment.start()
        one, two = deployment.servers
        first = {"device_id": "live-check", "segments": [{"seq": 0, "start": 0.0, "end": 1.0,
                                                          "text": "The deadline is March 12th."}]}
        httpx.post(f"{one.url}/v1/meetings/live/segments", json=first, headers=deployment.headers,
                   timeout=30).raise_for_status()
        out["live_before_s"] = _live_event(deployment, two, one, "live", 20)
        with httpx.Client(headers=deployment.headers, timeout=60) as client:
            asked = client.post(f"{one.url}/v1/meetings/live/ask", json={"question": "what was the live check?",
                                                                         "session_id": "fault-session"})
            out["session_before"] = asked.status_code
        load = Devices(deployment, responses, devices=devices, batch=batch)
        asking = Askers(deployment, responses, askers=askers)
        load.start()
        wait_until(lambda: load.posted() >= devices * batch, 60, "devices posting")
        asking.start()  # once the meetings exist
        down_from = responses.statuses.copy()
        deployment.cluster.stop(mode="immediate")
        note(quiet, f"PostgreSQL stopped (immediate) under load; down for {down_s:g} s")
        end = time.monotonic() + down_s
        wait_until(lambda: time.monotonic() >= end, down_s + 1, "the outage", every=0.1)
        deployment.cluster.start()
        back = time.monotonic()
        out["statuses_while_down"] = dict(responses.statuses - down_from)  # from the stop to the start's end
        note(quiet, "PostgreSQL started again")
        at_restart = load.posted()
        wait_until(lambda: load.posted() >= at_restart + devices * batch, 120, "ingest after PostgreSQL came back")
        out["ingest_recovered_s"] = round(time.monotonic() - back, 2)
        load.stop()
        asking.stop()
        with httpx.Client(headers=deployment.headers, timeout=60) as client:
            recovered = {}
            for number, server in enumerate(deployment.servers, start=1):
                asked = client.post(f"{server.url}/v1/meetings/meeting-0/ask",
                                    json={"question": "how many units did device 0 order?"})
                responses.record("ask", asked)
                recovered[f"api_{number}_ask"] = asked.status_code
                healthz = client.get(f"{server.url}/healthz")
                recovered[f"api_{number}_healthz"] = healthz.status_code
            session = client.post(f"{two.url}/v1/meetings/live/ask",
                                  json={"question": "and who said it?", "session_id": "fault-session"})
            responses.record("ask", session)
            recovered["session_after"] = session.status_code
        out["after_restart"] = recovered
        out["live_after_s"] = _live_event(deployment, two, one, "live", 20)
        out["worker_job_after_s"] = _job_after_restart(deployment)
        out["answers"] = asking.answered
        out["device_errors"] = load.errors[:5]
        out.update(responses.public())
        out.update(tally(deployment, load))
        everyone = [*deployment.servers, *deployment.workers]
        out["processes_alive"] = sum(p.process is not None and p.process.poll() is None for p in everyone)
        # What a process that died said last (the assertion on processes_alive shows it).
        out["processes_dead"] = [{"process": type(p).__name__, "returncode": p.process.returncode,
                                  "log_tail": p.log_tail(12)}
                                 for p in everyone if p.process is not None and p.process.poll() is not None]
    finally:
        deployment.close()
    out["wall_s"] = round(time.monotonic() - t0, 1)
    return out


def _job_after_restart(deployment: Deployment, timeout: float = 60) -> float | None:
    """Seconds until the worker has finished an index job after the restart (None: not within `timeout`).

    One is deferred here; the queue keeps at most one waiting per meeting, so when the API processes have
    deferred that meeting's job already, theirs is the one to finish. Only index jobs that succeed from now
    count: digests and jobs retried after failing in the outage may keep the queue busy longer.
    """
    import psycopg

    from meetmem.cloud.jobs import INDEX_TASK, JobQueue

    with psycopg.connect(deployment.url, autocommit=True) as conn:
        since = conn.execute("SELECT now()").fetchone()[0]
    queue = JobQueue(deployment.url)
    try:
        queue.index(TENANT, "meeting-1")
    finally:
        queue.close()

    def done() -> bool:
        with psycopg.connect(deployment.url, autocommit=True) as conn:
            return conn.execute(
                "SELECT 1 FROM procrastinate_events e JOIN procrastinate_jobs j ON j.id = e.job_id "
                "WHERE e.type = 'succeeded' AND e.at >= %s AND j.task_name = %s", (since, INDEX_TASK)).fetchone() \
                is not None

    try:
        return round(wait_until(done, timeout, "an index job finished after the restart", every=0.2), 2)
    except RuntimeError:
        return None


def worker_killed_mid_job(workdir: Path, *, segments: int = 1500, quiet: bool = False) -> dict[str, Any]:
    """A worker SIGKILLed while it embeds a meeting; a second worker takes the job over and finishes it once."""
    import psycopg

    from meetmem.cloud.jobs import INDEX_TASK, JobQueue
    from meetmem.store.pg.log import PgTranscriptLog
    from meetmem.store.records import SegmentInput

    t0 = time.monotonic()
    deployment = Deployment(workdir, api=0, workers=0)
    out: dict[str, Any] = {"step": "worker_killed_mid_job", "segments": segments}

    def count(sql: str, params: tuple[Any, ...] = ()) -> int:
        with psycopg.connect(deployment.url, autocommit=True) as conn:
            return int(conn.execute(sql, params).fetchone()[0])

    workers: list[Worker] = []
    try:
        with PgTranscriptLog(deployment.url) as transcript_log:  # the one write path, as the API appends
            for first in range(0, segments, 500):
                batch = [SegmentInput(seq=i, start=2.0 * i, end=2.0 * i + 1.5, text=segment(0, i)["text"],
                                      speaker="S0") for i in range(first, min(segments, first + 500))]
                transcript_log.append("embedded", "device-0", batch, tenant=TENANT)
        queue = JobQueue(deployment.url)
        try:
            queue.index(TENANT, "embedded")
        finally:
            queue.close()
        embedded = "SELECT count(*) FROM segment_search WHERE embedding IS NOT NULL"
        for number in (1, 2):
            workers.append(Worker(deployment.url, "minilm", workdir / f"worker-{number}.log",
                                  options=("--heartbeat", "1", "--stalled-after", "4")))
        first_worker, second_worker = workers
        first_worker.start()
        wait_until(lambda: count(embedded) > 0 or first_worker.process.poll() is not None, 600,
                   "the first worker's first vectors")
        assert first_worker.process is not None
        first_worker.process.send_signal(signal.SIGKILL)
        first_worker.process.wait()
        out["embedded_at_kill"] = count(embedded)
        out["killed_mid_job"] = 0 < out["embedded_at_kill"] < segments
        note(quiet, f"worker killed after {out['embedded_at_kill']} of {segments} vectors")
        second_worker.start()
        out["taken_over_s"] = round(wait_until(
            lambda: count("SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'") == 1, 600,
            "the second worker to finish the job"), 1)
        out["jobs"] = count("SELECT count(*) FROM procrastinate_jobs WHERE task_name = %s", (INDEX_TASK,))
        out["jobs_succeeded"] = count("SELECT count(*) FROM procrastinate_events WHERE type = 'succeeded'")
        out["search_rows"] = count("SELECT count(*) FROM segment_search")
        out["vectors"] = count(embedded)
        out["rows_twice"] = count("SELECT count(*) - count(DISTINCT segment_id) FROM segment_search")
        verified = run_cli("verify", "embedded", "--tenant", TENANT, "--database", deployment.url, "--db",
                           str(deployment.key_home))
        out.update({"acknowledged": segments, "stored": count("SELECT count(*) FROM segments"),
                    "chains_verified": int(verified["ok"]), "chains_broken": int(not verified["ok"])})
    finally:
        for worker in workers:
            worker.stop()
        deployment.close()
    out["wall_s"] = round(time.monotonic() - t0, 1)
    return out


STEPS: dict[str, Callable[..., dict[str, Any]]] = {
    "api_killed_mid_ingest": api_killed_mid_ingest,
    "postgres_restarted_under_load": postgres_restarted_under_load,
    "worker_killed_mid_job": worker_killed_mid_job,
}


def run_steps(names: list[str], workdir: Path, *, short: bool, quiet: bool) -> list[dict[str, Any]]:
    steps = []
    for name in names:
        step_dir = workdir / name
        step_dir.mkdir(parents=True, exist_ok=True)
        note(quiet, f"{name} ...")
        if name == "api_killed_mid_ingest":
            steps.append(api_killed_mid_ingest(step_dir, devices=4 if short else 16, batch=20 if short else 50,
                                               seconds=2.0 if short else 30.0, quiet=quiet))
        elif name == "postgres_restarted_under_load":
            steps.append(postgres_restarted_under_load(step_dir, devices=4 if short else 16, batch=10 if short else 25,
                                                       askers=2 if short else 6, down_s=3.0 if short else 15.0,
                                                       quiet=quiet))
        elif name == "worker_killed_mid_job":
            steps.append(worker_killed_mid_job(step_dir, segments=1500 if short else 6000, quiet=quiet))
    return steps
