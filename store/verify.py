"""Checking a meeting's hash chain (pure): every link, where the chain ends, and the receipts held outside it.

`TranscriptLog.verify` reads the chain, the meeting's head, its closures and the receipts; this module only
judges them, so the rules of what `verify` proves sit in one place apart from the log's I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .receipts import Receipt, ReceiptError, ReceiptKey
from .records import CHAINED_FIELDS, GENESIS_HASH, ChainReport, Segment, chain_hash


def check_chain(
    meeting_id: str, chain: Iterable[Segment], *, head: tuple[int, str] | None, closed_through: int,
    receipts: Sequence[Receipt] = (), key: ReceiptKey | None = None,
) -> ChainReport:
    """Recompute a meeting's hash chain and name the first broken link, if any.

    Beyond the links, the chain must end where the meeting's head (kept apart from the segments) says,
    and reach every position a closure record names, so rows removed from the end show too. Each
    receipt (signed by `key` when the cloud acknowledged a batch, and kept by the device) must find its
    position in the chain with the hash it was signed with: that holds even against someone who rewrote
    the segments, the head and the closures together, as long as they do not hold the key.

    Args:
        chain: the meeting's segments in chain order.
        head: the meeting's recorded head (last position, its hash), or None when none is recorded.
        closed_through: the furthest position a closure record names (-1: none).
        receipts: this meeting's receipts.

    Raises:
        ReceiptError: a receipt was not signed by `key` (or no key was given).
    """
    if receipts and key is None:
        raise ReceiptError("receipts are checked with the server's receipt key; none was given")
    for receipt in receipts:
        assert key is not None
        key.check_signature(receipt)
    prev = GENESIS_HASH
    checked = 0
    hashes: dict[int, str] = {}
    for expected_pos, seg in enumerate(chain):
        where = f"segment {seg.segment_id} (chain position {seg.chain_pos}, device {seg.device_id}, seq {seg.seq})"
        if seg.chain_pos != expected_pos:
            return ChainReport(meeting_id, checked, False, seg.segment_id, expected_pos,
                               f"{where}: expected chain position {expected_pos}; a row is missing")
        if seg.prev_hash != prev:
            return ChainReport(meeting_id, checked, False, seg.segment_id, seg.chain_pos,
                               f"{where}: its link to the previous row does not match")
        row = {name: getattr(seg, name) for name in CHAINED_FIELDS}
        if chain_hash(prev, row) != seg.hash:
            return ChainReport(meeting_id, checked, False, seg.segment_id, seg.chain_pos,
                               f"{where}: its content does not match its hash (altered after it was stored)")
        prev = seg.hash
        hashes[seg.chain_pos] = seg.hash
        checked += 1
    end = checked - 1

    def cut(reason: str, pos: int) -> ChainReport:
        return ChainReport(meeting_id, checked, False, None, pos, reason, head_pos=end)

    if head is None:
        return cut(f"the meeting has no recorded head, yet it was made by storing segments; its log ends at "
                   f"chain position {end}, so rows may have been removed", end + 1)
    head_pos, head_hash = head
    if head_pos > end:
        return cut(f"the log ends at chain position {end}, but the meeting's head records position {head_pos}: "
                   f"{head_pos - end} rows were removed from the end", end + 1)
    if head_pos < end or head_hash != prev:
        return cut(f"the chain ends at position {end} with a hash the meeting's head (position {head_pos}) "
                   "does not record: the end of the log was rewritten", min(head_pos, end) + 1)
    if closed_through > end:
        return cut(f"the log ends at chain position {end}, but the meeting's closure record says it ran to "
                   f"position {closed_through}: {closed_through - end} rows were removed from the end", end + 1)
    for receipt in sorted(receipts, key=lambda r: r.pos):
        held = hashes.get(receipt.pos, GENESIS_HASH if receipt.pos == -1 else None)
        if held is None:
            return cut(f"a signed receipt acknowledges chain position {receipt.pos}, but the log ends at "
                       f"position {end}: acknowledged rows were removed", end + 1)
        if held != receipt.head:
            return cut(f"a signed receipt acknowledges chain position {receipt.pos} with another hash than the "
                       "log holds there: the log was rewritten from that position or before", receipt.pos)
    return ChainReport(meeting_id, checked, True, head_pos=end, receipts=len(receipts))
