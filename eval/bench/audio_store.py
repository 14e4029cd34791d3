"""Kept audio on SQLite (files beside the database) against PostgreSQL (bytea rows): upload and Range reads.

    python -m meetmem.eval.bench.audio_store [--chunks 60] [--chunk-seconds 60] [--reads 300]
                                             [--database postgresql://...]

Both stores get the same `--chunks` Ogg Opus chunks of `--chunk-seconds` each (what the edge uploads: one a
minute by default, made here with the edge's own encoder from a tone with noise), through `add` as the upload
route calls it; then `--reads` HTTP-Range-sized reads (64 KiB at random offsets, as a player seeking asks)
and whole-chunk reads, through the same `blob().read()` the route streams from; then one 30-second stretch
made from two chunks (the player's `?start=&end=`), first made (decode, join, encode, store), then again
(from the cache: files on SQLite, rows on PostgreSQL). PostgreSQL is the bundled server (`store/pg/server.py`)
with fsync on, in a temporary directory, unless `--database` names one (its user must be allowed to create
databases).

Prints one JSON object on stdout; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from meetmem.eval.harness import BenchPostgres

RANGE_BYTES = 64 * 1024


def _note(message: str) -> None:
    sys.stderr.write(f"bench_audio_store: {message}\n")


def _chunk_bytes(seconds: float, seed: int, folder: Path) -> bytes:
    import numpy as np

    from meetmem.edge.recording import OggOpusWriter

    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * 16000)) / 16000
    samples = (np.sin(2 * np.pi * (220 + 20 * seed % 400) * t) * 6000 + rng.normal(0, 1500, t.size)).astype(np.int16)
    path = folder / f"chunk{seed}.ogg"
    with OggOpusWriter(path) as writer:
        writer.write(samples)
    return path.read_bytes()


def _ms(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 2),
            "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000, 2),
            "mean_ms": round(statistics.fmean(ordered) * 1000, 2)}


def _measure(log: Any, chunks: list[bytes], chunk_seconds: float, reads: int) -> dict[str, Any]:
    from meetmem.cloud.audio_render import render_range
    from meetmem.store.backends import audio_store_for
    from meetmem.store.records import SegmentInput

    log.append("bench", "glasses", [SegmentInput(seq=0, start=0.0, end=1.0, text="the audio bench")], tenant="acme")
    audio = audio_store_for(log)
    uploads = []
    for i, data in enumerate(chunks):
        started = time.perf_counter()
        _, new = audio.add("bench", "glasses", i, data, start=i * chunk_seconds, tenant="acme")
        uploads.append(time.perf_counter() - started)
        assert new
    replays = []
    for i, data in enumerate(chunks[:10]):
        started = time.perf_counter()
        assert not audio.add("bench", "glasses", i, data, start=i * chunk_seconds, tenant="acme")[1]
        replays.append(time.perf_counter() - started)
    stored = audio.chunks("bench", tenant="acme")
    rng = random.Random(7)
    ranges, wholes = [], []
    for _ in range(reads):
        chunk = rng.choice(stored)
        blob = audio.blob(chunk)
        first = rng.randrange(0, max(1, blob.size - RANGE_BYTES))
        started = time.perf_counter()
        got = b"".join(blob.read(first, min(blob.size, first + RANGE_BYTES) - 1))
        ranges.append(time.perf_counter() - started)
        assert len(got) == min(RANGE_BYTES, blob.size - first)
    for chunk in stored[: min(len(stored), 30)]:
        blob = audio.blob(chunk)
        started = time.perf_counter()
        got = b"".join(blob.read(0, blob.size - 1))
        wholes.append(time.perf_counter() - started)
        assert len(got) == chunk.size
    pair = stored[:2]
    lo, hi = chunk_seconds * 0.75, chunk_seconds * 0.75 + 30
    started = time.perf_counter()
    made = audio.render("bench", pair, lo, hi, renderer=render_range, tenant="acme")
    render_first = time.perf_counter() - started
    started = time.perf_counter()
    again = audio.render("bench", pair, lo, hi, renderer=render_range, tenant="acme")
    b"".join(again.read(0, again.size - 1))
    render_cached = time.perf_counter() - started
    assert again.size == made.size
    return {
        "upload": _ms(uploads), "upload_replay": _ms(replays),
        "range_read_64k": _ms(ranges), "whole_chunk_read": _ms(wholes),
        "stretch_30s_first_s": round(render_first, 3), "stretch_30s_cached_ms": round(render_cached * 1000, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m meetmem.eval.bench.audio_store",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=60, help="chunks to upload (default 60: an hour)")
    parser.add_argument("--chunk-seconds", type=float, default=60.0, help="seconds per chunk (default 60)")
    parser.add_argument("--reads", type=int, default=300, help="64 KiB range reads (default 300)")
    parser.add_argument("--database", default=None, help="an existing PostgreSQL server's URL (default: the "
                        "bundled server in a temporary directory)")
    args = parser.parse_args(argv)

    from meetmem.store.log import TranscriptLog
    from meetmem.store.pg import migrate
    from meetmem.store.pg.log import PgTranscriptLog

    work = Path(tempfile.mkdtemp(prefix="meetmem-bench-audio-"))
    server = BenchPostgres(args.database, work / "pgdata", durable=True)
    base, admin = server.base, server.admin
    try:
        import psycopg

        _note(f"encoding {args.chunks} chunks of {args.chunk_seconds:g} s")
        chunks = [_chunk_bytes(args.chunk_seconds, i, work) for i in range(args.chunks)]
        results: dict[str, Any] = {}
        _note("SQLite")
        with TranscriptLog(work / "bench.db") as log:
            results["sqlite"] = _measure(log, chunks, args.chunk_seconds, args.reads)
        _note("PostgreSQL")
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute('DROP DATABASE IF EXISTS "meetmem_bench_audio" WITH (FORCE)')
            conn.execute('CREATE DATABASE "meetmem_bench_audio"')
        url = f"{base}/meetmem_bench_audio"
        migrate.upgrade(url)
        with PgTranscriptLog(url) as log:
            results["postgres"] = _measure(log, chunks, args.chunk_seconds, args.reads)
        ratio = {k: round(results["postgres"][k]["p50_ms"] / results["sqlite"][k]["p50_ms"], 2)
                 for k in ("upload", "range_read_64k", "whole_chunk_read")}
        out = {
            "bench": "audio_store", "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "params": {k: v for k, v in vars(args).items() if k != "database"},
            "chunk_bytes_mean": round(statistics.fmean(len(c) for c in chunks)),
            "postgres": server.describe(),
            "machine": {"cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2),
                        "python": platform.python_version()},
            "results": results,
            "postgres_over_sqlite_p50": ratio,
        }
        print(json.dumps(out))
    finally:
        server.remove()
    return 0


if __name__ == "__main__":
    sys.exit(main())
