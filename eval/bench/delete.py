"""`meetmem bench delete`: how long deleting a meeting takes, with the rest of the database around it.

A fresh database holds `--meetings` meetings of `--segments` generated segments each (written through
`TranscriptLog.append` in batches of 50), each segment with a 384-float vector in the vector cache (random
bytes of a MiniLM vector's size: what is timed is removing the rows, not embedding them) and each meeting
with a stored digest (summary sections and ledger items made by the extractive digester). Then one meeting
is deleted (`TranscriptLog.delete_meeting`, one transaction, tombstone signed) and timed, and another
meeting's chain is verified before and after, to show its cost and its result unchanged.

Prints its figures on stdout (one JSON object with --json); progress goes to stderr.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from meetmem.cli.options import JSON, QUIET, flags
from meetmem.cli.output import emit_figures

from ..harness import checkout, machine_info


def _note(ctx: Any, message: str) -> None:
    if not ctx.quiet:
        from meetmem.cli.progress import note

        note(message)


def run(args: argparse.Namespace, ctx: Any) -> int:
    from meetmem.store.index.search import TranscriptSearch
    from meetmem.store.log import TranscriptLog
    from meetmem.store.receipts import ReceiptKey
    from meetmem.store.records import SegmentInput
    from meetmem.summarizers.backends import make_digest_parts
    from meetmem.summarizers.digest import MeetingDigester

    started = datetime.now(UTC).isoformat(timespec="seconds")
    head, dirty = checkout(["store", "eval"])
    rng = random.Random(20261201)
    words = ("budget casing quote supplier launch price deadline review ship friday team design test plan "
             "battery hinge screen order march april number decide agree owner send").split()
    n, meetings = args.segments, args.meetings
    with tempfile.TemporaryDirectory(prefix="meetmem-bench-delete-") as folder:
        db = Path(folder) / "bench.db"
        log = TranscriptLog(db)
        search = TranscriptSearch(log)
        key = ReceiptKey.load(Path(folder) / "receipt-key", create=True)
        summarizer, ledger = make_digest_parts("extractive")
        digester = MeetingDigester(log, search, summarizer, extract_ledger=ledger)
        for m in range(meetings):
            _note(ctx, f"writing meeting {m + 1}/{meetings} ({n} segments)")
            for first in range(0, n, 50):
                batch = [SegmentInput(seq=i, start=3.0 * i, end=3.0 * i + 2.5, speaker=f"S{i % 4}",
                                      text=" ".join(rng.choice(words) for _ in range(12)))
                         for i in range(first, min(first + 50, n))]
                log.append(f"m{m}", "glasses", batch)
            log.close_meeting(f"m{m}")
            with log.transaction():
                log.db.conn.executemany(
                    "INSERT INTO segment_vectors VALUES (?, 'minilm', ?)",
                    [(s.segment_id, os.urandom(4 * 384)) for s in log.chain(f"m{m}")])
            digester.digest(f"m{m}")
        size_before = db.stat().st_size + (Path(f"{db}-wal").stat().st_size if Path(f"{db}-wal").exists() else 0)
        t0 = time.perf_counter()
        before = log.verify("m1")
        verify_s = time.perf_counter() - t0
        derived = {t: log.read(f"SELECT COUNT(*) FROM {t} WHERE meeting_id = 'm0'")[0][0]
                   for t in ("summary_sections", "ledger_items")}
        _note(ctx, "deleting meeting m0")
        t0 = time.perf_counter()
        tombstone, _ = log.delete_meeting("m0", key=key, reason="bench")
        delete_s = time.perf_counter() - t0
        after = log.verify("m1")
        left = log.read("SELECT COUNT(*) FROM segments WHERE meeting_id = 'm0'")[0][0]
        log.close()
    result = {
        "bench": "delete",
        "started": started,
        "checkout": {"head": head, "dirty": dirty},
        "machine": machine_info(),
        "segments_per_meeting": n,
        "meetings": meetings,
        "deleted": {"segments": tombstone.segments, "vectors": n, **derived},
        "delete_s": round(delete_s, 3),
        "delete_segments_per_s": round(n / delete_s) if delete_s else None,
        "verify_other_meeting_s": round(verify_s, 3),
        "other_meeting_intact": before.ok and after.ok and before.checked == after.checked == n,
        "rows_left": left,
        "db_bytes_before": size_before,
    }
    emit_figures(result, as_json=args.json)
    return 0


def add_parser(bench_sub: argparse._SubParsersAction) -> None:
    p = bench_sub.add_parser(
        "delete", parents=flags(JSON, QUIET), help="how long deleting a meeting takes",
        description="Build meetings of N segments with vectors and digests, delete one and time it; verify "
                    "another before and after. Prints the figures on stdout (one JSON object with --json).")
    p.add_argument("--segments", type=int, default=10_000, metavar="N", help="segments per meeting (10000)")
    p.add_argument("--meetings", type=int, default=3, metavar="M", help="meetings in the database (3)")
    p.set_defaults(func=run)
