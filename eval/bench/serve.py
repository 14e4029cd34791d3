"""`meetmem bench serve`: the cloud service under the load of a day at the office, on loopback.

* Preparation: a database holding `--hours` hours of generated meetings (one hour each, store_corpus's seeded
  utterances with names, numbers, dates and product codes), appended through `TranscriptLog.append` and
  embedded through `TranscriptSearch.meeting_index` (which caches the vectors in the database), and a bearer
  token. With `--work-db` that database is kept and reused: the first run builds and embeds it, later runs
  copy it (so every run starts from the same ten hours, never from the previous run's live meetings).
* Run: the real server (`meetmem serve`, one model thread) as a subprocess; once /healthz says ready,
  `--devices` glasses post one segment per request at speaking pace to live meetings (`--per-meeting` wearers
  share a meeting, each posting its own speech), `--askers` people ask the verbatim questions that the
  preloaded and the live segments answer, and a share of the posted segments carries a unique marker word
  and is searched for until it is the top hit (ingest-to-searchable latency, from the POST's acknowledgement).
* Report: request latencies, errors by kind, requests/s, the server's RSS and CPU, the generator's own CPU,
  the database size, and the issue's targets as pass/fail; where the answers' time went (`ask_time_by_part`,
  from each answer's Server-Timing header). With `--compare-ingest` the same askers first run alone for
  `--duration` on the same server, and `compare_ingest` gives ask p50/p95 of both phases and their ratio.
* `--backend postgres` (serve_pg.py): the same load on a real PostgreSQL the bench starts, with
  `--api-processes` `meetmem serve` processes on their own ports (devices and askers spread over them as a load
  balancer would; a probe searches on another process than the one its segment was posted to) and `--workers`
  `meetmem worker` processes; CPU seconds are reported per process and for PostgreSQL's own processes.

Prints its figures on stdout (one JSON object with --json); progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import math
import os
import shutil
import signal
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from meetmem.cli.options import JSON, MODEL, QUIET, TENANT, flags
from meetmem.cli.output import emit_figures

from ..harness import checkout, db_bytes, guarded, machine_info
from .serve_load import LiveMeeting, LoadPlan, Question, Tally, live_speakers, run_load
from .serve_pg import PgDeployment, index_search_rows
from .serve_prepare import preloaded_meetings, prepare
from .serve_process import ServeBenchError, Server, Worker, create_token, create_token_pg, free_port, machine_cpu_ticks
from .serve_report import compared, load_report
from .serve_webhook import WebhookEndpoint
from .store_corpus import Corpus, generate_corpus

log = logging.getLogger(__name__)

DEFAULT_SEED = 20250304


def _note(ctx: Any, message: str) -> None:
    if not ctx.quiet:
        from meetmem.cli.progress import note

        note(message)


# ------------------------------------------------------------------------------------------------------
# The run: the server started, loaded, and stopped whatever happens.
# ------------------------------------------------------------------------------------------------------


async def _sample(servers: list[Server], stop: asyncio.Event, every: float = 1.0, trace_every: float = 30.0) -> None:
    """Each server's RSS every second (for the peak), and every `trace_every` seconds into its trace."""
    t0 = time.perf_counter()
    next_trace = 0.0
    while not stop.is_set():
        elapsed = time.perf_counter() - t0
        traced = elapsed >= next_trace
        for server in servers:
            rss = server.figures().get("VmRSS")
            if traced and rss is not None:
                server.rss_trace.append((round(elapsed), rss))
        if traced:
            next_trace += trace_every
        try:
            await asyncio.wait_for(stop.wait(), timeout=every)
        except TimeoutError:
            pass


async def _load_with_sampling(servers: list[Server], plan: LoadPlan, quiet: bool,
                              baseline: LoadPlan | None = None) -> tuple[Tally, float, Tally | None]:
    stop = asyncio.Event()
    sampler = asyncio.create_task(_sample(servers, stop))
    try:
        # The same askers first without the devices, then with them: one server, one machine state.
        before = (await run_load(baseline, quiet=quiet))[0] if baseline is not None else None
        tally, load_s = await run_load(plan, quiet=quiet)
        return tally, load_s, before
    finally:
        stop.set()
        await sampler


# ------------------------------------------------------------------------------------------------------
# The command.
# ------------------------------------------------------------------------------------------------------


def _interrupted(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _live_meetings(args: argparse.Namespace, stamp: str) -> list[LiveMeeting]:
    count = math.ceil(args.devices / args.per_meeting)
    # Enough utterances for every wearer of the meeting to talk the whole run without repeating.
    size = max(50, int(args.per_meeting * args.duration / args.pace * 1.5))
    return [LiveMeeting(f"live-{stamp}-{m + 1:02d}", generate_corpus(size, args.seed + 10_000 + m),
                        live_speakers(args.seed, m, args.per_meeting)) for m in range(count)]

def _wait_workers(deployment: PgDeployment, url: str, workers: list[Worker], timeout: float) -> float:
    """Seconds until every worker has beaten in the queue's table; raises if one exits or the time passes."""
    t0 = time.perf_counter()
    while deployment.workers_seen(url) < len(workers):
        for worker in workers:
            if worker.process is not None and worker.process.poll() is not None:
                raise ServeBenchError(f"a worker exited with status {worker.process.returncode}:\n{worker.log_tail()}")
        if time.perf_counter() - t0 > timeout:
            raise ServeBenchError(f"the workers did not start within {timeout:g} s:\n{workers[0].log_tail()}")
        time.sleep(0.25)  # polling processes we do not control; the deadline bounds it
    return time.perf_counter() - t0


def _cpu(servers: list[Server], workers: list[Worker], deployment: PgDeployment | None) -> dict[str, Any]:
    return {"api": [s.figures().get("cpu_s", 0.0) for s in servers],
            "worker": [w.figures().get("cpu_s", 0.0) for w in workers],
            "postgres": deployment.cpu_s() if deployment is not None else None}


def measure(ctx: Any, servers: list[Server], plan: LoadPlan, ready_timeout: float, compare: bool = False, *,
            workers: list[Worker] | None = None, deployment: PgDeployment | None = None,
            database_url: str | None = None) -> dict[str, Any]:
    """Start the workers and API processes, run the load once they are ready, stop them whatever happens."""
    workers = workers or []
    out: dict[str, Any] = {}
    # A `kill` of the benchmark unwinds like Ctrl-C, so the processes are stopped on the way out.
    previous = signal.signal(signal.SIGTERM, _interrupted)
    stops: dict[str, Any] = {}
    try:
        t0 = time.perf_counter()
        for worker in workers:
            worker.start()
        for server in servers:
            _note(ctx, f"starting the server on port {server.port} ...")
            server.start()
        if workers and deployment is not None and database_url is not None:
            out["workers_ready_s"] = round(_wait_workers(deployment, database_url, workers, ready_timeout), 2)
        for server in servers:
            server.wait_ready(max(1.0, ready_timeout - (time.perf_counter() - t0)))
        out["start_to_ready_s"] = round(time.perf_counter() - t0, 2)
        at_ready = [s.figures() for s in servers]
        cpu_ready = _cpu(servers, workers, deployment)
        _note(ctx, f"ready after {out['start_to_ready_s']} s; {plan.devices} devices and {plan.askers} askers "
              f"for {plan.duration:g} s ...")
        cpu0, machine0 = time.process_time(), machine_cpu_ticks()
        baseline = dataclasses.replace(plan, devices=0, probe_fraction=0.0) if compare else None
        if baseline is not None:
            _note(ctx, f"first {plan.askers} askers alone for {plan.duration:g} s (no segments posted) ...")
        tally, load_s, before = asyncio.run(_load_with_sampling(servers, plan, ctx.quiet, baseline))
        generator_cpu = time.process_time() - cpu0
        at_end, machine1 = [s.figures() for s in servers], machine_cpu_ticks()
        cpu_end = _cpu(servers, workers, deployment)
    finally:
        stops["api"] = [server.stop() for server in servers]
        stops["worker"] = [worker.stop() for worker in workers]
        signal.signal(signal.SIGTERM, previous)
    api_cpu = [round(b - a, 1) for a, b in zip(cpu_ready["api"], cpu_end["api"], strict=True)]
    worker_cpu = [round(b - a, 1) for a, b in zip(cpu_ready["worker"], cpu_end["worker"], strict=True)]
    pg_cpu = round(cpu_end["postgres"] - cpu_ready["postgres"], 1) if deployment is not None else None
    processes = []
    for number, (server, ready, end, cpu) in enumerate(zip(servers, at_ready, at_end, api_cpu, strict=True)):
        processes.append({
            "role": "api", "number": number + 1, "port": server.port,
            "rss_at_ready_mb": ready.get("VmRSS"), "peak_rss_mb": end.get("VmHWM"),
            "peak_rss_sampled_mb": server.peak_rss_sampled,
            "rss_mb_during_load": [[t, rss] for t, rss in server.rss_trace] + [[round(load_s), end.get("VmRSS")]],
            "rss_at_end_mb": end.get("VmRSS"), "cpu_s_during_load": cpu, "stop": stops["api"][number],
            "log_problems": server.log_problems()})
    for number, (worker, cpu) in enumerate(zip(workers, worker_cpu, strict=True)):
        processes.append({"role": "worker", "number": number + 1, "cpu_s_during_load": cpu,
                          "rss_at_end_mb": None, "stop": stops["worker"][number],
                          "log_problems": worker.log_problems()})
    first = processes[0]
    # One server's figures where a single-process report kept them (SQLite, and the first API process).
    out.update({k: first[k] for k in ("rss_at_ready_mb", "peak_rss_mb", "peak_rss_sampled_mb", "rss_mb_during_load",
                                      "rss_at_end_mb", "cpu_s_during_load", "log_problems")})
    out["stop"] = first["stop"]
    cpu_s = {"api": round(sum(api_cpu), 1), "worker": round(sum(worker_cpu), 1), "postgres": pg_cpu}
    # The machine may be shared: what every process together kept busy, and what was neither side of the test.
    busy, total = machine1[0] - machine0[0], machine1[1] - machine0[1]
    everyone = (os.cpu_count() or 1) * busy / total if total else None
    ours = sum(v for v in cpu_s.values() if v is not None)
    cores = {
        "all_processes": round(everyone, 2) if everyone is not None else None,
        "server": round(ours / load_s, 2),
        **{f"{role}_processes": round(v / load_s, 2) for role, v in cpu_s.items() if v is not None},
        "load_generator": round(generator_cpu / load_s, 2),
        "other_processes": round(everyone - (ours + generator_cpu) / load_s, 2) if everyone is not None else None,
    }
    return {"server": out, "processes": processes, "cpu_s_during_load": cpu_s, "cores_busy_during_load": cores,
            "load_generator_cpu_s": round(generator_cpu, 1), "tally": tally, "load_s": load_s,
            "without_ingest": before}


def _prepared_name(args: argparse.Namespace) -> str:
    """The prepared PostgreSQL database's name: what it holds (seed, hours, embedder), so another load builds
    its own."""
    return f"prepared_s{args.seed}_{round(args.hours * 100)}ch_{args.embedder_name}".replace("-", "_").lower()[:60]


def _postgres(ctx: Any, args: argparse.Namespace, tmp: Path, sqlite_db: Path, meetings: list[tuple[str, Corpus]],
              stamp: str) -> tuple[PgDeployment, str, str, dict[str, Any]]:
    """The PostgreSQL cluster started, the prepared database made or found, and this run's copy of it."""
    data_dir = Path(f"{args.work_db}.pg") if args.work_db else tmp / "pg"
    deployment = PgDeployment(data_dir)
    _note(ctx, f"starting PostgreSQL in {data_dir} ...")
    deployment.start()
    try:
        ids = [meeting_id for meeting_id, _ in meetings]

        def index(url: str) -> dict[str, Any]:
            from meetmem.store.index.embedder_routes import embedder_routes

            settings = ctx.settings
            routes = None if settings.embedder == "none" else embedder_routes(
                settings.embedder, settings.embedder_zh, threads=settings.threads,
                on_load=lambda name: _note(ctx, f"loading the {name} embedding model ..."))
            _note(ctx, f"indexing {len(ids)} meetings for search (lexical rows and vectors) ...")
            return index_search_rows(url, ids, ctx.tenant, routes)

        template = _prepared_name(args)
        preparation = deployment.prepared(template, sqlite_db, ids, ctx.tenant, index=index,
                                          note=lambda m: _note(ctx, m))
        url = deployment.run_database(template, f"run_{stamp.lower()}")
    except BaseException:
        deployment.stop()
        raise
    return deployment, template, url, {"data_dir": str(data_dir) if args.work_db else "temporary", **preparation}


def run(args: argparse.Namespace, ctx: Any) -> int:
    if args.workers is None:
        args.workers = 1 if args.backend == "postgres" else 0
    elif args.workers < 0:
        raise ServeBenchError("--workers must be 0 or more")
    wall0 = time.perf_counter()
    info = machine_info()
    info["loadavg_at_start"] = [round(x, 2) for x in os.getloadavg()]
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    tenant = ctx.tenant
    args.embedder_name = ctx.settings.embedder
    postgres = args.backend == "postgres"
    if not postgres and (args.api_processes != 1 or args.workers):
        raise ServeBenchError("--api-processes and --workers need --backend postgres: the SQLite service is one "
                              "process, with its background work inside it")
    meetings = preloaded_meetings(args.hours, args.seed)
    preload_questions = [Question(mid, f.question, f.text, "preloaded") for mid, c in meetings for f in c.facts]
    with tempfile.TemporaryDirectory(prefix="meetmem-bench-serve-") as tmp:
        run_db = Path(tmp) / "serve.db"
        work_db = Path(args.work_db) if args.work_db else run_db
        built = not work_db.exists()
        _note(ctx, f"{'building' if built else 'checking'} {len(meetings)} meetings ({args.hours:g} h) in {work_db}")
        preparation = {"work_db": str(work_db) if args.work_db else "temporary", "built_now": built,
                       **prepare(ctx, work_db, meetings, tenant)}
        deployment: PgDeployment | None = None
        url = None
        try:
            if postgres:
                deployment, template, url, preparation["postgres"] = _postgres(ctx, args, Path(tmp), work_db,
                                                                               meetings, stamp)
                key_home = Path(tmp) / "keys.db"  # every process names the same --db: the receipt key is beside it
                token = create_token_pg(url, tenant)
                db_before = deployment.database_bytes(url.rsplit("/", 1)[1])
            else:
                if args.work_db:
                    shutil.copyfile(work_db, run_db)  # the run's live meetings never land in the reusable database
                key_home = run_db
                token = create_token(run_db, tenant)
                db_before = db_bytes(run_db)
            endpoint = WebhookEndpoint(args.webhook) if args.webhook != "none" else None
            if endpoint is not None:
                endpoint.register(url or run_db, tenant)
            ports = [free_port() if args.port in ("auto", "0") else int(args.port) + i
                     for i in range(args.api_processes)]
            servers = [Server(key_home, port, ctx.settings.embedder, Path(tmp) / f"server-{i + 1}.log",
                              database_url=url) for i, port in enumerate(ports)]
            workers = [Worker(url, ctx.settings.embedder, Path(tmp) / f"worker-{i + 1}.log")
                       for i in range(args.workers)] if url else []
            plan = LoadPlan(servers[0].url, token, _live_meetings(args, stamp), preload_questions, args.devices,
                            args.askers, args.duration, pace=args.pace, jitter=args.jitter, think=args.think,
                            probe_fraction=args.probe_fraction, probe_timeout=args.probe_timeout, seed=args.seed,
                            base_urls=[s.url for s in servers])
            measured = measure(ctx, servers, plan, args.ready_timeout, compare=args.compare_ingest, workers=workers,
                               deployment=deployment, database_url=url)
            if endpoint is not None:
                measured["webhook"] = endpoint.stop()
            if deployment is not None and url is not None:
                name = url.rsplit("/", 1)[1]
                db_after = deployment.database_bytes(name)
                measured["jobs"] = deployment.jobs(url)
                deployment.drop_database(name)
            else:
                db_after = db_bytes(run_db)
        finally:
            if deployment is not None:
                deployment.stop()
    load_s = measured["load_s"]
    info["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    info["cores_busy_during_load"] = measured["cores_busy_during_load"]
    report = {
        "benchmark": "serve",
        "machine": info,
        "code": dict(zip(("git_head", "uncommitted"), checkout(["cloud", "store", "meetmem"]), strict=True)),
        "config": {
            "backend": args.backend, "api_processes": args.api_processes, "workers": len(workers),
            "spread": "device d posts to process d mod N and its probes search on process d+1 mod N; asker a asks "
                      "process a mod N" if len(servers) > 1 else "one process",
            "devices": args.devices, "per_meeting": args.per_meeting, "live_meetings": len(plan.live),
            "askers": args.askers, "think_s": args.think,
            "asking": "back-to-back" if args.think == 0 else f"think time {args.think:g} s x U(0.5, 1.5)",
            "duration_s": args.duration, "pace_s": args.pace, "pace_jitter": args.jitter,
            "segments_per_request": 1, "hours_preloaded": args.hours, "preloaded_meetings": len(meetings),
            "preloaded_segments": sum(len(c) for _, c in meetings), "preloaded_questions": len(preload_questions),
            "probe_fraction": args.probe_fraction, "probe_timeout_s": args.probe_timeout,
            "seed": args.seed, "embedder": ctx.settings.embedder, "server_threads": 1, "tenant": tenant,
            "load_generator": "one asyncio loop, httpx.AsyncClient per API process, in the bench process",
            "timing": "wall clock of successful requests (failures are only counted); percentiles nearest-rank; "
                      "searchable = first search whose top hit is the segment, timed from the POST's response",
        },
        "preparation": preparation,
        "server": measured["server"],
        "processes": measured["processes"],
        "cpu_s_during_load": measured["cpu_s_during_load"],
        **({"jobs": measured["jobs"]} if "jobs" in measured else {}),
        "load_generator": {"cpu_s": measured["load_generator_cpu_s"],
                           "cores_busy": measured["cores_busy_during_load"]["load_generator"]},
        "load_s": round(load_s, 1),
        **load_report(args, measured["tally"], load_s),
        **({"compare_ingest": compared(measured["without_ingest"], measured["tally"])}
           if measured["without_ingest"] is not None else {}),
        **({"webhook": measured["webhook"]} if "webhook" in measured else {}),
        "db_bytes": {"before": db_before, "after": db_after},
        "wall_s": round(time.perf_counter() - wall0, 1),
    }
    emit_figures(report, as_json=args.json)
    sys.stdout.flush()
    return 0 if report["targets"]["all_pass"] or not args.check else 1


def _positive(kind: type) -> Any:
    def parse(value: str) -> Any:
        number = kind(value)
        if number <= 0:
            raise argparse.ArgumentTypeError("must be more than 0")
        return number

    return parse


def add_parser(bench_sub: argparse._SubParsersAction) -> None:
    p = bench_sub.add_parser(
        "serve", parents=flags(TENANT, MODEL, JSON, QUIET),
        help="the cloud service under devices and askers, on loopback",
        description="Start `meetmem serve` on a database holding --hours of meetings, then simulate glasses "
                    "posting segments at speaking pace and people asking questions for --duration seconds. "
                    "Prints ingest, ask and ingest-to-searchable latencies, errors, requests/s and the server's "
                    "memory on stdout (one JSON object with --json), with the targets (50 devices + 10 askers "
                    "for 300 s, no errors, ask p95 <= 300 ms, searchable p95 <= 1 s) as pass/fail; progress on stderr. "
                    "--work-db keeps the prepared database: the first run builds and embeds it, later runs copy it.")
    p.add_argument("--devices", type=_positive(int), default=50, help="simulated glasses (default 50)")
    p.add_argument("--per-meeting", type=_positive(int), default=5,
                   help="wearers sharing one live meeting, each posting their own speech (default 5)")
    p.add_argument("--askers", type=int, default=10, help="people asking questions (default 10)")
    p.add_argument("--think", type=float, default=0.0,
                   help="mean seconds an asker waits between an answer and the next question (default 0: "
                        "back-to-back)")
    p.add_argument("--duration", type=_positive(float), default=300.0, help="seconds of load (default 300)")
    p.add_argument("--hours", type=_positive(float), default=10.0,
                   help="hours of meetings in the database before the run, one hour per meeting (default 10)")
    p.add_argument("--work-db", default=None, metavar="PATH",
                   help="keep the prepared database here and reuse it (the first run builds it; each run works "
                        "on a copy); default: a temporary database built every run")
    p.add_argument("--pace", type=_positive(float), default=4.0,
                   help="mean seconds between one device's segments (default 4: ~5-12 words said in 3-5 s)")
    p.add_argument("--jitter", type=float, default=0.25, help="each gap is pace x U(1-j, 1+j) (default 0.25)")
    p.add_argument("--probe-fraction", type=float, default=0.2,
                   help="share of segments timed until searchable (default 0.2)")
    p.add_argument("--probe-timeout", type=_positive(float), default=10.0,
                   help="seconds before an unsearchable segment counts as an error (default 10)")
    p.add_argument("--port", default="auto", help="the server's port (default auto: a free one; 0 means auto)")
    p.add_argument("--ready-timeout", type=_positive(float), default=600.0,
                   help="seconds to wait for /healthz (default 600)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of the meetings, pace and questions")
    p.add_argument("--compare-ingest", action="store_true",
                   help="run the askers alone for --duration first, then with the devices for --duration, on the "
                        "same server; the report gains compare_ingest (ask p50/p95 of both and the ratio)")
    p.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite",
                   help="the store the service runs on (default sqlite: one process on one file); postgres starts "
                        "a local PostgreSQL with pgvector (the postgres extra), runs `meetmem db upgrade`, copies the "
                        "preloaded meetings in with `meetmem migrate`, and runs --api-processes and --workers on it")
    p.add_argument("--api-processes", type=_positive(int), default=1,
                   help="`meetmem serve` processes on their own loopback ports, devices and askers spread over them "
                        "as a load balancer would (postgres only; default 1)")
    p.add_argument("--workers", type=int, default=None,
                   help="`meetmem worker` processes running the queue's jobs (postgres only; default 1 there)")
    p.add_argument("--webhook", choices=("none", "ok", "hang"), default="none",
                   help="register a webhook endpoint for meeting.closed and ledger.updated in the bench process: "
                        "ok answers 204 at once, hang answers after 60 s (longer than the service waits); the "
                        "report gains webhook (what it received); default none")
    p.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    p.set_defaults(func=guarded(run, (ServeBenchError,)))
