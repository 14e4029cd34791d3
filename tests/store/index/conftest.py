"""The derived indexes read the SQLite log (their PostgreSQL counterparts are tested apart)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from meetmem.store.log import TranscriptLog


@pytest.fixture
def log(tmp_path: Path) -> Iterator[TranscriptLog]:
    with TranscriptLog(tmp_path / "log.db") as opened:
        yield opened
