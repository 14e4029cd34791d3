"""What appending one device's batch means (pure): which rows are replays, which are refused, and the new links.

Both backends of the log (SQLite in store/log.py, PostgreSQL in store/pg/log.py) read the same facts inside
their write transaction (the rows already stored under the batch's ids, the device's highest seq, the
meeting's chain end) and hand them here, so the rules of the one write path and the hashes they produce
are the same whatever the database: the same input gives the same chain, position for position.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidSegment, SequenceError
from .records import Segment, SegmentInput, chain_hash


@dataclass
class PlannedBatch:
    """The rows to insert (as column dicts, in chain order), as records, and how many were replays."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    added: list[Segment] = field(default_factory=list)
    duplicates: int = 0
    head_pos: int = -1
    head_hash: str = ""


def same_content(old: Segment, new: SegmentInput) -> bool:
    return (
        old.start == new.start
        and old.end == new.end
        and old.text == new.text
        and old.speaker == new.speaker
        and old.lang == new.lang
        and old.raw_text == new.raw_text
        and old.confidence == new.confidence
        and old.supersedes == new.supersedes
    )


def plan_batch(
    *, tenant: str, meeting_id: str, device_id: str, ordered: Sequence[SegmentInput], ids: Sequence[str],
    stored: Mapping[str, Segment], max_seq: int, next_pos: int, prev_hash: str, received_at: str,
    supersedes_exists: Callable[[str], bool],
) -> PlannedBatch:
    """Plan the append of `ordered` (sorted by seq; `ids` their segment ids).

    Args:
        stored: rows already in the log under any of `ids`.
        max_seq: the device's highest stored seq in this meeting (-1: none).
        next_pos, prev_hash: the chain position and link the first new row takes.
        supersedes_exists: whether a segment id names a stored row of this meeting.

    Raises:
        SequenceError: a stored seq with other content, or a seq going backwards.
        InvalidSegment: `supersedes` names no segment of this meeting.
    """
    plan = PlannedBatch(head_pos=next_pos - 1, head_hash=prev_hash)
    pos, prev = next_pos, prev_hash
    seen: set[str] = set()
    for sid, item in zip(ids, ordered, strict=True):
        if sid in seen:
            plan.duplicates += 1
            continue
        seen.add(sid)
        old = stored.get(sid)
        if old is not None:
            if not same_content(old, item):
                raise SequenceError(
                    f"seq {item.seq} of device {device_id!r} is already stored with different content "
                    f"(segment {sid}); a correction needs a new seq and 'supersedes'"
                )
            plan.duplicates += 1
            continue
        if item.seq <= max_seq:
            raise SequenceError(
                f"seq {item.seq} of device {device_id!r} goes backwards: the meeting already holds "
                f"seq {max_seq} of that device"
            )
        if item.supersedes is not None and item.supersedes not in {s.segment_id for s in plan.added}:
            if not supersedes_exists(item.supersedes):
                raise InvalidSegment(
                    f"'supersedes' names {item.supersedes!r}, which is not a segment of this meeting", seq=item.seq
                )
        row: dict[str, Any] = {
            "segment_id": sid,
            "tenant": tenant,
            "meeting_id": meeting_id,
            "device_id": device_id,
            "seq": item.seq,
            "start": float(item.start),
            "end": float(item.end),
            "speaker": item.speaker,
            "text": item.text,
            "raw_text": item.raw_text,
            "lang": item.lang,
            "confidence": None if item.confidence is None else float(item.confidence),
            "supersedes": item.supersedes,
            "received_at": received_at,
            "chain_pos": pos,
        }
        digest = chain_hash(prev, row)
        row["prev_hash"] = prev
        row["hash"] = digest
        plan.rows.append(row)
        plan.added.append(Segment(**row))
        prev = digest
        pos += 1
    plan.head_pos, plan.head_hash = pos - 1, prev
    return plan
