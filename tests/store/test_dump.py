"""A dumped meeting loaded into a log that holds it already (`meetmem migrate` run again, or a clash), on
both backends: the same meeting is skipped, another one under its id is refused with nothing changed, and
so is another tombstone for a meeting the target has one for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from meetmem.store.errors import StoreError
from meetmem.store.log import TranscriptLog
from meetmem.store.receipts import ReceiptKey


def test_a_meeting_held_already_is_skipped_and_one_with_other_rows_refused(log: Any, tmp_path: Path,
                                                                            segments_factory) -> None:
    with TranscriptLog(tmp_path / "source.db") as source, TranscriptLog(tmp_path / "other.db") as other:
        source.append("m", "d", segments_factory(["Ship on March 3.", "Budget is 40k."]))
        other.append("m", "d", segments_factory(["Something else was said."]))
        dump, clash = source.dump_meeting("m"), other.dump_meeting("m")
    assert log.load_meeting(dump) is True
    assert log.load_meeting(dump) is False  # the same head: a migration run again
    with pytest.raises(StoreError, match="already holds meeting 'm' of tenant 'local' with other rows"):
        log.load_meeting(clash)
    assert [s.text for s in log.segments("m")] == ["Ship on March 3.", "Budget is 40k."]
    assert log.verify("m").ok


def test_a_tombstone_held_already_is_skipped_and_another_one_refused(log: Any, tmp_path: Path,
                                                                     segments_factory) -> None:
    key = ReceiptKey.load(tmp_path / "receipt-key", create=True)
    tombstones = []
    for name, reason in (("a.db", "deleted by the tenant"), ("b.db", "retention: older than 30 days")):
        with TranscriptLog(tmp_path / name) as source:
            source.append("gone", "d", segments_factory(["Delete me."]))
            tombstones.append(source.delete_meeting("gone", reason=reason, key=key)[0])
    first, second = tombstones
    assert log.load_tombstone(first) is True
    assert log.load_tombstone(first) is False
    with pytest.raises(StoreError, match="holds another tombstone for meeting 'gone'"):
        log.load_tombstone(second)
    assert log.tombstone("gone") == first
