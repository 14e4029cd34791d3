"""Tombstones: the signed record, kept forever, that a meeting existed and was deleted, and when.

Deleting a meeting (`TranscriptLog.delete_meeting`) is the one way rows leave the log. What stays is a
tombstone: the meeting's id and tenant, when and why it was deleted, how many segments it held and where
its hash chain ended (position and hash), signed with the server's receipt key (HMAC-SHA256, the key of
`store/receipts.py`, kept outside the database). `verify` of a deleted meeting reports the deletion and
checks that signature, so a tombstone written by someone who can write the database but does not hold the
key (to pass off removed rows as a deletion) shows as forged.
"""

from __future__ import annotations

import hmac
import json
from dataclasses import dataclass
from typing import Any

from .receipts import ReceiptError, ReceiptKey

#: Bumped if the signed message ever changes shape; a tombstone names the version it was signed with.
TOMBSTONE_VERSION = 1


@dataclass(frozen=True, slots=True)
class Tombstone:
    """A deleted meeting: `segments` rows whose chain ended at `head_pos` with `head_hash` (-1 and the
    genesis hash for a meeting with no rows), deleted at `deleted_at` (UTC, ISO 8601) for `reason`."""

    tenant: str
    meeting_id: str
    deleted_at: str
    reason: str
    segments: int
    head_pos: int
    head_hash: str
    key_id: str
    sig: str
    version: int = TOMBSTONE_VERSION

    def public(self) -> dict[str, Any]:
        return {"version": self.version, "tenant": self.tenant, "meeting_id": self.meeting_id,
                "deleted_at": self.deleted_at, "reason": self.reason, "segments": self.segments,
                "head_pos": self.head_pos, "head_hash": self.head_hash, "key_id": self.key_id, "sig": self.sig}


def _message(version: int, tenant: str, meeting_id: str, deleted_at: str, reason: str, segments: int,
             head_pos: int, head_hash: str) -> bytes:
    return json.dumps(["meetmem-tombstone", version, tenant, meeting_id, deleted_at, reason, segments, head_pos,
                       head_hash], ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def sign_tombstone(key: ReceiptKey, *, tenant: str, meeting_id: str, deleted_at: str, reason: str, segments: int,
                   head_pos: int, head_hash: str) -> Tombstone:
    sig = key.mac(_message(TOMBSTONE_VERSION, tenant, meeting_id, deleted_at, reason, segments, head_pos,
                             head_hash))
    return Tombstone(tenant, meeting_id, deleted_at, reason, segments, head_pos, head_hash, key.key_id, sig)


def check_tombstone(key: ReceiptKey, tombstone: Tombstone) -> None:
    """Raises `ReceiptError` unless `key` signed exactly this tombstone."""
    t = tombstone
    if t.version != TOMBSTONE_VERSION:
        raise ReceiptError(f"tombstone version {t.version} is not known here (expected {TOMBSTONE_VERSION})")
    if t.key_id != key.key_id:
        raise ReceiptError(f"the tombstone was signed with key {t.key_id}, not this server's {key.key_id}")
    want = key.mac(_message(t.version, t.tenant, t.meeting_id, t.deleted_at, t.reason, t.segments, t.head_pos,
                              t.head_hash))
    if not hmac.compare_digest(want, t.sig):
        raise ReceiptError(f"the tombstone of meeting {t.meeting_id!r} does not carry this server's signature "
                           "(altered, or forged)")
