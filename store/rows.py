"""The log's tables as the record types, the same on SQLite and PostgreSQL.

A segment row's columns are the `Segment` record's fields in the record's order, and a tombstone row's the
`Tombstone`'s: both logs read and write them by these names, and a dumped meeting (`MeetingDump`) carries its
rows in this form from one backend to the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from .records import Segment

# The log's columns are the record's fields, in the record's order.
SEGMENT_COLUMNS = tuple(f.name for f in fields(Segment))
SEGMENT_SELECT = ", ".join(f'"{c}"' for c in SEGMENT_COLUMNS)

TOMBSTONE_COLUMNS = "tenant, meeting_id, deleted_at, reason, segments, head_pos, head_hash, key_id, sig, version"


def row_to_segment(row: Sequence[Any]) -> Segment:
    return Segment(**dict(zip(SEGMENT_COLUMNS, row, strict=True)))
