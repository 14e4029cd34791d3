"""Open file handles on the database stay flat however many threads read (issue 16: 173 -> 301 handles).

A server's worker threads come and go; a connection per thread that is never closed grows the process's
open files with every new thread until it hits the limit. Reads borrow from a bounded pool instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from meetmem.store.log import TranscriptLog
from meetmem.store.readers import READER_POOL_SIZE


def open_handles(db: Path) -> int:
    """How many of this process's file descriptors point at the database file or its WAL/shared memory."""
    names = {str(db), f"{db}-wal", f"{db}-shm"}
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") in names:
                count += 1
        except OSError:  # closed between listing and reading
            continue
    return count


@pytest.fixture
def log(tmp_path: Path) -> Iterator[TranscriptLog]:
    """SQLite only: file handles on the database file."""
    with TranscriptLog(tmp_path / "log.db") as opened:
        yield opened


def test_handles_stay_flat_over_rounds_of_reads_from_fresh_threads(log: TranscriptLog, segments_factory) -> None:
    log.append("m", "d", segments_factory([f"line {i}" for i in range(20)]))

    def read(i: int) -> int:
        return len(log.segments("m")) + log.last_chain_pos("m") + len(list(log.chain("m", limit=5)))

    threads = 40
    counts = []
    for _ in range(6):
        with ThreadPoolExecutor(max_workers=threads) as pool:  # new threads every round, as a server's come and go
            assert set(pool.map(read, range(200))) == {20 + 19 + 5}
        counts.append(open_handles(log.path))
    # A connection per thread grew by about 45 handles every round here. SQLite may keep a closed connection's
    # descriptor a while (it cannot close a file another connection holds a lock on without dropping that
    # lock), so the count follows how many readers happened to run at once: it can step up once when a round
    # runs more of them together (24 then 51 flat; 23, 23, 25, 38, 38, 38 with another test process on the
    # other core), then stays level. It never climbs round after round.
    steps_up = sum(1 for before, after in zip(counts, counts[1:], strict=False) if after > before + 10)
    assert steps_up <= 1 and counts[-1] - counts[-2] <= 10, counts
    # Never more than the connections that can be open at once: the writer and one per thread reading at that
    # moment, each with the database, its WAL and its shared memory. How many of the extra readers' descriptors
    # SQLite keeps after they close depends on how many ran at once (it defers closing a file another
    # connection holds a lock on), so the bound is the concurrency, not the pool's idle size; six rounds of a
    # connection kept per thread come to several times more.
    assert max(counts) <= 3 * (1 + max(threads, READER_POOL_SIZE)), counts
    log.close()
    assert open_handles(log.path) == 0
