"""What every step of the fault campaigns shares: the segments the devices send, waiting on processes we do not
control, and, on SQLite, the count of what the database holds against what was acknowledged."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import serve_process
from .serve_process import Server


def note(quiet: bool, message: str) -> None:
    """A line of the campaign's progress on stderr (none when `quiet`)."""
    if not quiet:
        from meetmem.cli.progress import note as say

        say(f"bench faults: {message}")


def segment(device: int, seq: int) -> dict[str, Any]:
    """Device `device`'s segment `seq`, as a request body's item: its words carry a number and a date."""
    start = seq * 2.0 + device * 0.01
    return {"seq": seq, "start": start, "end": start + 1.5, "speaker": f"S{device}",
            "text": f"device {device} utterance {seq}: order {seq * 13 + device} units by March {seq % 28 + 1}"}


def wait_until(condition: Callable[[], bool], timeout: float, what: str, every: float = 0.1) -> float:
    """Seconds until `condition()` held; RuntimeError naming `what` after `timeout`."""
    t0 = time.monotonic()
    while not condition():
        if time.monotonic() - t0 > timeout:
            raise RuntimeError(f"{what}: not within {timeout:g} s")
        time.sleep(every)  # polling processes we do not control; the deadline bounds it
    return time.monotonic() - t0


def create_token(db: Path, tenant: str) -> str:
    """A token of `tenant` in the SQLite database `db`."""
    return serve_process.create_token(db, tenant, label="bench faults")


def tally(db: Path, tenant: str, acknowledged: dict[tuple[str, str], set[int]],
           batches: dict[tuple[str, str], list[list[int]]] | None = None) -> dict[str, Any]:
    """What the database holds against what was acknowledged, per (meeting, device)."""
    from meetmem.store.log import TranscriptLog

    stored = lost = duplicated = partial = 0
    verified = broken = 0
    with TranscriptLog(db) as transcript_log:
        meetings = {m for m, _ in acknowledged} | {m for t, m in transcript_log.meetings() if t == tenant}
        for meeting in sorted(meetings):
            if not transcript_log.has_meeting(meeting, tenant=tenant):
                continue
            rows = list(transcript_log.chain(meeting, tenant=tenant))
            stored += len(rows)
            seen: dict[tuple[str, str], int] = {}
            for row in rows:
                seen[(row.device_id, row.text)] = seen.get((row.device_id, row.text), 0) + 1
            duplicated += sum(n - 1 for n in seen.values() if n > 1)
            by_device: dict[str, set[int]] = {}
            for row in rows:
                by_device.setdefault(row.device_id, set()).add(row.seq)
            for (m, device), seqs in acknowledged.items():
                if m == meeting:
                    lost += len(seqs - by_device.get(device, set()))
            for (m, device), groups in (batches or {}).items():
                if m == meeting:
                    have = by_device.get(device, set())
                    partial += sum(1 for group in groups if 0 < len(have & set(group)) < len(group))
            if transcript_log.verify(meeting, tenant=tenant).ok:
                verified += 1
            else:
                broken += 1
    return {"acknowledged": sum(len(s) for s in acknowledged.values()), "stored": stored,
            "acknowledged_lost": lost, "duplicated": duplicated, "partial_batches": partial,
            "chains_verified": verified, "chains_broken": broken}


def wait_up(server: Server, timeout: float = 120.0) -> float:
    """Seconds until the server answers at all: a restart on a large meeting is not ready for questions for a
    while, but it takes segments at once."""
    return server.wait_ready(timeout, any_answer=True)
