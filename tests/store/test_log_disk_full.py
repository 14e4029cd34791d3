"""A database that fills up mid-batch (a size-capped file, `PRAGMA max_page_count`) stores none of the
batch, keeps everything stored before it and its chain intact, and takes the same batch once there is room."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from meetmem.store.errors import StoreError
from meetmem.store.log import TranscriptLog


@pytest.fixture
def log(tmp_path: Path) -> Iterator[TranscriptLog]:
    """SQLite only: a size-capped file (`PRAGMA max_page_count`) is SQLite's."""
    with TranscriptLog(tmp_path / "log.db") as opened:
        yield opened


def test_a_full_database_refuses_the_whole_batch_and_loses_nothing(log: TranscriptLog, segments_factory) -> None:
    log.append("m", "g1", segments_factory([f"stored line {i}" for i in range(20)]))
    head = log.head("m")
    pages = log.db.execute("PRAGMA page_count").fetchone()[0]
    log.db.execute(f"PRAGMA max_page_count = {pages + 2}")
    big = segments_factory([f"line {i}: " + "the supplier quoted 4,250 euros " * 40 for i in range(200)],
                           first_seq=20, start=100.0)
    with pytest.raises(StoreError, match="full"):
        log.append("m", "g1", big)
    assert log.count() == 20 and log.head("m") == head
    assert log.verify("m").ok
    log.db.execute("PRAGMA max_page_count = 1073741823")
    result = log.append("m", "g1", big)
    assert result.new == 200 and log.verify("m").ok and log.head("m")[0] == 219
