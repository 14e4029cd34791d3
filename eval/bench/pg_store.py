"""The transcript log on PostgreSQL against SQLite: append throughput, verify time, `migrate` time.

    python -m meetmem.eval.bench.pg_store [--segments 10000] [--meetings 4] [--batch 50] [--writers 4]
                                          [--database postgresql://...]

Both logs get the same generated meetings through `append` in batches of `--batch` (what a device's sync
sends), first from one writer, then from `--writers` threads at once, each with a log of its own (as that
many API processes would hold) writing its own meetings. Then one meeting of `--segments` rows is verified on
each, and the SQLite database is copied to a fresh PostgreSQL database with `copy_log` (what `meetmem
migrate` runs). PostgreSQL is the bundled server (`store/pg/server.py`) with its durable defaults (fsync on,
synchronous commit), started in a temporary directory, unless `--database` names one (its user must be
allowed to create databases). SQLite runs as the service runs it (WAL, synchronous=NORMAL).

Prints one JSON object on stdout; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from meetmem.eval.harness import BenchPostgres


def _note(message: str) -> None:
    sys.stderr.write(f"bench_pg_store: {message}\n")


def _batches(meeting: int, segments: int, batch: int) -> list[list[Any]]:
    from meetmem.store.records import SegmentInput

    rows = [SegmentInput(seq=i, start=2.0 * i, end=2.0 * i + 1.8, speaker="ABCD"[i % 4],
                         text=f"meeting {meeting} line {i}: the supplier quoted 4,250 euros for the casing")
            for i in range(segments)]
    return [rows[i : i + batch] for i in range(0, len(rows), batch)]


def _append_all(log: Any, meetings: list[int], segments: int, batch: int, tenant: str) -> int:
    n = 0
    for m in meetings:
        for part in _batches(m, segments, batch):
            n += log.append(f"m{m}", "glasses-1", part, tenant=tenant).new
    return n


def _timed_appends(open_log: Any, *, meetings: int, segments: int, batch: int, writers: int) -> dict[str, Any]:
    """One writer, then `writers` at once (each its own log and meetings); segments per second."""
    log = open_log()
    started = time.perf_counter()
    stored = _append_all(log, list(range(meetings)), segments, batch, "solo")
    solo = time.perf_counter() - started
    verify_started = time.perf_counter()
    report = log.verify("m0", tenant="solo")
    verify_s = time.perf_counter() - verify_started
    assert report.ok and report.checked == segments, report
    log.close()

    counts: list[int] = []
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            own = open_log()
            try:
                counts.append(_append_all(own, [w], segments, batch, "many"))
            finally:
                own.close()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    many = time.perf_counter() - started
    if errors:
        raise errors[0]
    return {
        "one_writer": {"segments": stored, "seconds": round(solo, 3), "segments_per_s": round(stored / solo, 1),
                       "batch_ms": round(1000 * solo / (stored / batch), 2)},
        f"{writers}_writers": {"segments": sum(counts), "seconds": round(many, 3),
                               "segments_per_s": round(sum(counts) / many, 1)},
        "verify_one_meeting": {"segments": segments, "seconds": round(verify_s, 3),
                               "segments_per_s": round(segments / verify_s, 1)},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m meetmem.eval.bench.pg_store", description=__doc__.split("\n")[0])
    parser.add_argument("--segments", type=int, default=10_000, help="segments per meeting (default 10000)")
    parser.add_argument("--meetings", type=int, default=4, help="meetings for the one-writer run (default 4)")
    parser.add_argument("--batch", type=int, default=50, help="segments per append (default 50)")
    parser.add_argument("--writers", type=int, default=4, help="concurrent writers (default 4)")
    parser.add_argument("--database", default=None, help="an existing PostgreSQL server's URL (default: the "
                        "bundled server in a temporary directory)")
    args = parser.parse_args(argv)

    from meetmem.store.log import TranscriptLog
    from meetmem.store.pg import migrate
    from meetmem.store.pg.log import PgTranscriptLog
    from meetmem.store.transfer import copy_log

    work = Path(tempfile.mkdtemp(prefix="meetmem-bench-pg-"))
    server = BenchPostgres(args.database, work / "pgdata", durable=True)
    base, admin = server.base, server.admin

    def create(name: str) -> str:
        import psycopg

        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
        url = f"{base}/{name}"
        migrate.upgrade(url)
        return url

    try:
        results: dict[str, Any] = {}
        _note(f"SQLite: {args.meetings} meetings x {args.segments} segments, batches of {args.batch}")
        sqlite_path = work / "bench.db"
        results["sqlite"] = _timed_appends(lambda: TranscriptLog(sqlite_path), meetings=args.meetings,
                                           segments=args.segments, batch=args.batch, writers=args.writers)
        _note("PostgreSQL: the same")
        url = create("meetmem_bench")
        results["postgres"] = _timed_appends(lambda: PgTranscriptLog(url), meetings=args.meetings,
                                             segments=args.segments, batch=args.batch, writers=args.writers)
        _note("migrate: the SQLite database into a fresh PostgreSQL database")
        target_url = create("meetmem_bench_migrated")
        with TranscriptLog(sqlite_path) as source, PgTranscriptLog(target_url) as target:
            report = copy_log(source, target)
            assert report.ok, report.failed
            results["migrate_sqlite_to_postgres"] = {
                "meetings": report.copied, "segments": report.segments, "seconds": round(report.seconds, 3),
                "segments_per_s": round(report.segments / report.seconds, 1),
                "note": "includes verifying every chain on arrival"}
        ratio = {k: round(results["postgres"][k]["segments_per_s"] / results["sqlite"][k]["segments_per_s"], 2)
                 for k in results["sqlite"]}
        out = {
            "bench": "pg_store", "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "params": {k: v for k, v in vars(args).items() if k != "database"},
            "postgres": server.describe(),
            "machine": {"cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2),
                        "python": platform.python_version()},
            "results": results,
            "postgres_over_sqlite": ratio,
        }
        print(json.dumps(out))
    finally:
        server.remove()
    return 0


if __name__ == "__main__":
    sys.exit(main())
