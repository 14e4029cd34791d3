"""`meetmem bench faults`: the fault campaign, run with real processes on a loopback port.

Each step breaks something on purpose and then counts, from the database itself: how many segments the
cloud acknowledged, how many it stored, how many acknowledged ones are missing, how many are stored twice,
how many batches were stored in part, and whether every meeting's hash chain (with its head) verifies.

- `server_killed_mid_batch`: devices post batches while `meetmem serve` is SIGKILLed and restarted; each
  device resends what was not acknowledged, as the edge's uploader does.
- `cloud_down_mid_meeting`: the edge's outbox and uploader (`meetmem.edge.sync`) take a meeting while the
  cloud is stopped for a stretch and started again.
- `cli_killed_mid_ingest`: `meetmem ingest` of a large file is SIGKILLed at random points; a file is all
  or nothing, then ingested whole.
- `disk_full`: `meetmem serve` on a database capped in size (`MEETMEM_MAX_DB_BYTES`) takes batches until it
  is full: the batch that does not fit is refused whole (503), nothing acknowledged is lost.
- `corrupted_outbox`: `meetmem edge run` on an outbox damaged while it held unsent segments: a one-line
  error naming it, and the file moved aside byte for byte, not discarded.

- `edge_killed_mid_meeting`: `meetmem edge run` on the packaged demo meeting's speech (tiny.en) SIGKILLed at
  random points and restarted on its outbox, then run to the end; compared with a run never killed.
- The audio steps (audio_faults.py, issue 30), each reporting the serve process's peak RSS and CPU seconds:
  `racing_chunk_uploads`, `ten_day_gap` (four clients at once) and `trickle_flood`.

`--backend postgres` runs the faults of a PostgreSQL deployment instead (pg_faults.py): an API process
SIGKILLed mid-ingest, PostgreSQL restarted under load, a worker SIGKILLed mid-job.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from meetmem.cli.options import JSON, QUIET, flags
from meetmem.cli.output import emit_figures

from .audio_faults import racing_chunk_uploads, ten_day_gap, trickle_flood
from .edge_faults import cloud_down_mid_meeting, corrupted_outbox, edge_killed_mid_meeting
from .fault_checks import create_token, note, segment, tally, wait_up
from .serve_process import Server, free_port


def server_killed_mid_batch(workdir: Path, *, kills: int, devices: int, batches: int, batch: int,
                            rng: random.Random, quiet: bool) -> dict[str, Any]:
    import httpx

    db = workdir / "killed.db"
    token = create_token(db, "faults")
    server = Server(db, free_port(), "none", workdir / "killed.log")
    server.start()
    wait_up(server)
    acknowledged: dict[tuple[str, str], set[int]] = {}
    groups: dict[tuple[str, str], list[list[int]]] = {}
    lock = threading.Lock()
    done = threading.Event()  # every kill made: devices stop after their planned batches
    errors: list[str] = []

    def device(number: int) -> None:
        key = ("killed-mid-batch", f"device-{number}")
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
            b = -1
            while True:  # at least `batches`, and on until every kill was made: each kill lands mid-load
                b += 1
                if b >= batches and done.is_set():
                    break
                seqs = list(range(b * batch, (b + 1) * batch))
                with lock:
                    groups.setdefault(key, []).append(seqs)
                body = {"device_id": key[1], "segments": [segment(number, s) for s in seqs]}
                deadline = time.monotonic() + 300
                while True:  # resend until acknowledged, as the edge's uploader does
                    try:
                        r = client.post(f"/v1/meetings/{key[0]}/segments", json=body)
                        if r.status_code == 200:
                            with lock:
                                acknowledged.setdefault(key, set()).update(seqs)
                            break
                        if r.status_code < 500 and r.status_code != 429:
                            errors.append(f"HTTP {r.status_code}: {r.text[:200]}")
                            return
                    except httpx.HTTPError:
                        pass
                    if time.monotonic() > deadline:
                        errors.append(f"{key[1]}: batch {b} not acknowledged within 300 s")
                        return
                    time.sleep(0.05)  # the server is down: poll again shortly

    threads = [threading.Thread(target=device, args=(n,), daemon=True) for n in range(devices)]
    t0 = time.monotonic()
    for thread in threads:
        thread.start()
    killed = 0
    while killed < kills:
        time.sleep(rng.uniform(0.2, 1.0))  # a random point of the load
        assert server.process is not None
        server.process.send_signal(signal.SIGKILL)
        server.process.wait()
        killed += 1
        note(quiet, f"server killed mid-batch ({killed}/{kills})")
        server.start()
        wait_up(server)
    done.set()
    for thread in threads:
        thread.join(timeout=600)
    server.stop()
    result = tally(db, "faults", acknowledged, groups)
    return {"step": "server_killed_mid_batch", "kills": killed, "devices": devices, "batch": batch,
            "wall_s": round(time.monotonic() - t0, 1), "errors": errors[:5], **result}


def cli_killed_mid_ingest(workdir: Path, *, kills: int, lines: int, rng: random.Random,
                          cli: list[str], quiet: bool) -> dict[str, Any]:
    db = workdir / "ingest.db"
    path = workdir / "meeting.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for i in range(lines):
            out.write(json.dumps({k: v for k, v in segment(0, i).items() if k != "seq"}) + "\n")
    env = {**os.environ, "MEETMEM_EMBEDDER": "none", "HF_HUB_OFFLINE": "1", "MEETMEM_THREADS": "1"}
    outcomes = {"killed_with_nothing_stored": 0, "killed_with_all_stored": 0, "finished_before_kill": 0,
                "half_written": 0}
    t0 = time.monotonic()
    from meetmem.store.log import TranscriptLog

    # One whole ingest first, timed, so the kills land all through one (reading, the append, indexing).
    timing = time.monotonic()
    whole = subprocess.run([*cli, "ingest", "ingest-timing", str(path), "--db", str(db), "--quiet", "--json"],
                           env=env, capture_output=True, text=True, timeout=600, check=True)
    whole_s = time.monotonic() - timing
    acknowledged: dict[tuple[str, str], set[int]] = {
        ("ingest-timing", json.loads(whole.stdout)["device_id"]): set(range(1, lines + 1))}
    for k in range(kills):
        meeting = f"ingest-{k}"
        proc = subprocess.Popen([*cli, "ingest", meeting, str(path), "--db", str(db), "--quiet"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            proc.wait(timeout=rng.uniform(0.2, 1.0) * whole_s)
            outcomes["finished_before_kill"] += 1
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            with TranscriptLog(db) as transcript_log:
                held = len(list(transcript_log.chain(meeting))) if transcript_log.has_meeting(meeting) else 0
            if held == 0:
                outcomes["killed_with_nothing_stored"] += 1
            elif held == lines:
                outcomes["killed_with_all_stored"] += 1
            else:
                outcomes["half_written"] += 1
        note(quiet, f"ingest killed ({k + 1}/{kills})")
    for k in range(kills):  # each file ingested to the end afterwards: its exit status is the acknowledgement
        finished = subprocess.run([*cli, "ingest", f"ingest-{k}", str(path), "--db", str(db), "--quiet", "--json"],
                                  env=env, capture_output=True, text=True, timeout=600)
        if finished.returncode == 0:
            device = json.loads(finished.stdout)["device_id"]
            acknowledged[(f"ingest-{k}", device)] = set(range(1, lines + 1))
    result = tally(db, "local", acknowledged)
    return {"step": "cli_killed_mid_ingest", "kills": kills, "lines": lines, "whole_ingest_s": round(whole_s, 1),
            "wall_s": round(time.monotonic() - t0, 1), **outcomes, **result}


def disk_full(workdir: Path, *, batch: int, cap_mb: float, quiet: bool) -> dict[str, Any]:
    import httpx

    db = workdir / "full.db"
    token = create_token(db, "faults")
    server = Server(db, free_port(), "none", workdir / "full.log")
    os.environ["MEETMEM_MAX_DB_BYTES"] = str(int(cap_mb * 1_048_576))
    try:
        server.start()
    finally:
        del os.environ["MEETMEM_MAX_DB_BYTES"]
    wait_up(server)
    t0 = time.monotonic()
    acknowledged: dict[tuple[str, str], set[int]] = {}
    groups: dict[tuple[str, str], list[list[int]]] = {}
    statuses: dict[str, int] = {}
    key = ("disk-full", "device-0")
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
        refused = 0
        b = 0
        while refused < 3 and b < 10_000:
            seqs = list(range(b * batch, (b + 1) * batch))
            groups.setdefault(key, []).append(seqs)
            body = {"device_id": key[1], "segments": [{**segment(0, s), "text": segment(0, s)["text"] * 8}
                                                      for s in seqs]}
            r = client.post(f"/v1/meetings/{key[0]}/segments", json=body)
            statuses[str(r.status_code)] = statuses.get(str(r.status_code), 0) + 1
            if r.status_code == 200:
                acknowledged.setdefault(key, set()).update(seqs)
                b += 1
            else:
                refused += 1
        healthy = client.get("/healthz").status_code == 200
    server.stop()
    note(quiet, f"database full after {b} batches")
    result = tally(db, "faults", acknowledged, groups)
    return {"step": "disk_full", "cap_mb": cap_mb, "batch": batch, "statuses": statuses,
            "server_error_500": statuses.get("500", 0), "healthy_when_full": healthy,
            "wall_s": round(time.monotonic() - t0, 1), **result}


def _cli() -> list[str]:
    exe = Path(sys.executable).with_name("meetmem")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "meetmem.cli"]


STEP_NAMES = {"server killed mid-batch": "server_killed_mid_batch", "cloud down mid-meeting": "cloud_down_mid_meeting",
              "CLI killed mid-ingest": "cli_killed_mid_ingest", "disk full": "disk_full",
              "corrupted outbox": "corrupted_outbox", "edge killed mid-meeting": "edge_killed_mid_meeting",
              "racing chunk uploads": "racing_chunk_uploads", "ten-day gap": "ten_day_gap",
              "trickle flood": "trickle_flood"}
#: The audio steps' names, whose serve process's memory the report sums up.
AUDIO_STEPS = ("racing_chunk_uploads", "ten_day_gap", "trickle_flood")
#: The serve process stays under this through the audio steps (issue 30).
AUDIO_RSS_LIMIT_MB = 600.0


def run_postgres(args: argparse.Namespace, ctx: Any) -> int:
    """The PostgreSQL campaign (pg_faults.py): an API process killed, PostgreSQL restarted, a worker killed."""
    from .pg_faults import STEPS, run_steps

    names = [name for name in STEPS if not args.step or name in args.step]
    unknown = [name for name in args.step or () if name not in STEPS]
    if unknown:
        sys.stderr.write(f"meetmem bench faults: {', '.join(unknown)} runs on SQLite only; on PostgreSQL the steps "
                         f"are {', '.join(STEPS)}\n")
        return 2
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="meetmem-faults-pg-") as tmp:
        steps = run_steps(names, Path(tmp), short=args.short, quiet=ctx.quiet)
    totals = {name: sum(int(s.get(name, 0)) for s in steps) for name in
              ("acknowledged", "stored", "acknowledged_lost", "duplicated", "chains_broken", "server_error_500",
               "unavailable_without_retry_after", "rows_twice")}
    recovered = [s for s in steps if s["step"] == "postgres_restarted_under_load"]
    totals["not_recovered"] = sum(
        sum(1 for v in s["after_restart"].values() if v != 200) + (s["live_after_s"] is None)
        + (s["worker_job_after_s"] is None) for s in recovered)
    report = {"benchmark": "faults", "backend": "postgres", "short": args.short, "steps": steps, "totals": totals,
              "wall_s": round(time.perf_counter() - started, 1),
              "loadavg_at_end": [round(x, 2) for x in os.getloadavg()]}
    emit_figures(report, as_json=args.json)
    bad = any(totals[name] for name in ("acknowledged_lost", "duplicated", "chains_broken", "server_error_500",
                                         "unavailable_without_retry_after", "rows_twice", "not_recovered"))
    return 1 if bad else 0


def run(args: argparse.Namespace, ctx: Any) -> int:
    if args.backend == "postgres":
        return run_postgres(args, ctx)
    rng = random.Random(args.seed)
    quiet = ctx.quiet
    short = args.short
    kills = args.kills if args.kills is not None else (2 if short else 20)
    started = time.perf_counter()
    steps: list[dict[str, Any]] = []
    plan: list[tuple[str, Callable[[Path], dict[str, Any]]]] = [
        ("server killed mid-batch", lambda d: server_killed_mid_batch(
            d, kills=kills, devices=4 if short else 8, batches=30 if short else 60, batch=100, rng=rng, quiet=quiet)),
        ("cloud down mid-meeting", lambda d: cloud_down_mid_meeting(
            d, segments=60 if short else 600, down_s=1.0 if short else 10.0, quiet=quiet)),
        ("CLI killed mid-ingest", lambda d: cli_killed_mid_ingest(
            d, kills=kills, lines=3000 if short else 20000, rng=rng, cli=_cli(), quiet=quiet)),
        ("disk full", lambda d: disk_full(d, batch=50, cap_mb=0.5 if short else 4.0, quiet=quiet)),
        ("corrupted outbox", lambda d: corrupted_outbox(d, cli=_cli(), quiet=quiet)),
        ("edge killed mid-meeting", lambda d: edge_killed_mid_meeting(
            d, kills=args.edge_kills if args.edge_kills is not None else (3 if short else 20),
            seconds=60.0 if short else None, rng=rng, cli=_cli(), quiet=quiet)),
        ("racing chunk uploads", lambda d: racing_chunk_uploads(d, pairs=6 if short else 30, quiet=quiet)),
        ("ten-day gap", lambda d: ten_day_gap(d, stretch_s=600.0 if short else 3600.0, clients=4, quiet=quiet)),
        ("trickle flood", lambda d: trickle_flood(d, connections=60, max_connections=40,
                                                  seconds=25.0 if short else 75.0, quiet=quiet)),
    ]
    if args.step:
        plan = [(name, step) for name, step in plan if STEP_NAMES[name] in args.step]
        if not plan:
            sys.stderr.write("meetmem bench faults: those steps run on PostgreSQL: add --backend postgres\n")
            return 2
    with tempfile.TemporaryDirectory(prefix="meetmem-faults-") as tmp:
        for name, step in plan:
            note(quiet, f"{name} ...")
            steps.append(step(Path(tmp)))
    totals = {name: sum(int(s.get(name, 0)) for s in steps) for name in
              ("acknowledged", "stored", "acknowledged_lost", "duplicated", "partial_batches", "chains_broken")}
    totals["half_written_ingests"] = sum(int(s.get("half_written", 0)) for s in steps)
    totals["server_error_500"] = sum(int(s.get("server_error_500", 0)) for s in steps)
    totals["discarded_from_outbox"] = sum(int(s.get("discarded", 0)) for s in steps)
    totals["speech_missing"] = sum(int(s.get("speech_missing", 0)) for s in steps)
    totals["left_in_outbox"] = sum(int(s.get("still_in_outbox", 0)) for s in steps)
    audio = [s for s in steps if s["step"] in AUDIO_STEPS]
    totals["audio_peak_rss_mb"] = max((float(s.get("peak_rss_mb") or 0) for s in audio), default=0.0)
    totals["raced_pairs_not_200_409"] = sum(int(s["pairs"]) - int(s["pairs_200_409"]) for s in audio
                                            if s["step"] == "racing_chunk_uploads")
    totals["orphan_audio_files"] = sum(int(s["orphan_files"]) + int(s["files_after_delete"]) for s in audio
                                       if s["step"] == "racing_chunk_uploads")
    totals["trickle_normal_refused"] = sum(int(s["normal_refused"]) for s in audio if s["step"] == "trickle_flood")
    report = {"benchmark": "faults", "short": short, "seed": args.seed, "steps": steps, "totals": totals,
              "wall_s": round(time.perf_counter() - started, 1),
              "loadavg_at_end": [round(x, 2) for x in os.getloadavg()]}
    emit_figures(report, as_json=args.json)
    bad = (totals["acknowledged_lost"] or totals["duplicated"] or totals["partial_batches"]
           or totals["chains_broken"] or totals["half_written_ingests"] or totals["server_error_500"]
           or totals["discarded_from_outbox"] or totals["speech_missing"] or totals["left_in_outbox"]
           or totals["raced_pairs_not_200_409"] or totals["orphan_audio_files"]
           or totals["audio_peak_rss_mb"] > AUDIO_RSS_LIMIT_MB or totals["trickle_normal_refused"])
    return 1 if bad else 0


def add_parser(bench_sub: argparse._SubParsersAction) -> None:
    p = bench_sub.add_parser(
        "faults", parents=flags(JSON, QUIET),
        help="the fault campaign: kills, outages, a full disk; counts what survived",
        description="Break the service on purpose with real processes on a loopback port (the server SIGKILLed "
        "mid-batch, the cloud down mid-meeting, `meetmem ingest` SIGKILLed, a size-capped database filling up, "
        "a damaged edge outbox, `meetmem edge run` SIGKILLed mid-meeting on real speech and restarted; then audio: "
        "racing chunk uploads, a ten-day gap asked for by four clients at once, a flood of trickled bodies) "
        "and report per step what was acknowledged, stored, lost, duplicated, and whether every chain verifies, "
        "and for the audio steps the server's peak RSS and CPU seconds. Prints the figures (one JSON object with "
        "--json); exits 1 when "
        "anything acknowledged was lost or doubled, a raced chunk was not 200 + 409 or left a file, the server "
        "passed 600 MB in the audio steps, or the normal client was refused during the trickle flood.",
    )
    p.add_argument("--short", action="store_true", help="the short campaign CI runs (2 kills, small meetings)")
    p.add_argument("--kills", type=int, default=None, help="kills per killing step (default 20; 2 with --short)")
    p.add_argument("--edge-kills", type=int, default=None,
                   help="SIGKILLs of `meetmem edge run` mid-meeting (default 20; 3 with --short)")
    p.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite",
                   help="sqlite (default): the campaign above; postgres: a real PostgreSQL with two `meetmem serve` "
                        "processes and a worker: an API process SIGKILLed mid-ingest, PostgreSQL stopped and started "
                        "under load (503 with Retry-After while down, never 500; everything recovers by itself), a "
                        "worker SIGKILLed mid-job")
    p.add_argument("--step", action="append", default=None,
                   choices=sorted([*STEP_NAMES.values(), "api_killed_mid_ingest", "postgres_restarted_under_load",
                                   "worker_killed_mid_job"]),
                   help="run only this step (repeatable; default: every step of the backend)")
    p.add_argument("--seed", type=int, default=16, help="seed of the random kill points (default 16)")
    p.set_defaults(func=run)
