"""Record types of the transcript store: small frozen dataclasses, standard library only."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

#: The device id used for a file ingested by the CLI is this prefix plus the sha256 of the file's bytes.
FILE_DEVICE_PREFIX = "file:"


@dataclass(frozen=True, slots=True)
class SegmentInput:
    """One utterance as it arrives (the CONTRACT's interchange fields plus `seq`), validated."""

    seq: int
    start: float
    end: float
    text: str
    speaker: str | None = None
    lang: str | None = None
    raw_text: str | None = None
    confidence: float | None = None
    supersedes: str | None = None


@dataclass(frozen=True, slots=True)
class Segment:
    """One stored row of the append-only transcript log."""

    segment_id: str
    tenant: str
    meeting_id: str
    device_id: str
    seq: int
    start: float
    end: float
    text: str
    speaker: str | None
    lang: str | None
    raw_text: str | None
    confidence: float | None
    supersedes: str | None
    received_at: str
    chain_pos: int
    prev_hash: str
    hash: str

    def public(self) -> dict[str, Any]:
        """The CONTRACT's listing shape (`segments --json`), plus the correction link."""
        return {
            "segment_id": self.segment_id,
            "device_id": self.device_id,
            "seq": self.seq,
            "start": self.start,
            "end": self.end,
            "speaker": self.speaker,
            "text": self.text,
            "raw_text": self.raw_text,
            "lang": self.lang,
            "confidence": self.confidence,
            "supersedes": self.supersedes,
        }

    def as_row(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class AppendResult:
    """What one append did: the rows it stored and how many of the batch were already there."""

    added: tuple[Segment, ...] = field(default_factory=tuple)
    duplicates: int = 0

    @property
    def new(self) -> int:
        return len(self.added)


@dataclass(frozen=True, slots=True)
class Closure:
    """A meeting's recorded end: when, why (`closed` by a client or `silence`), and its last row then."""

    meeting_id: str
    closed_at: str
    reason: str
    through_pos: int

    def public(self) -> dict[str, Any]:
        return {"closed_at": self.closed_at, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class ChainReport:
    """The outcome of recomputing a meeting's hash chain."""

    meeting_id: str
    checked: int
    ok: bool
    broken_at: str | None = None
    broken_pos: int | None = None
    reason: str | None = None


def segment_id_for(tenant: str, meeting_id: str, device_id: str, seq: int) -> str:
    """A stable id for `(device_id, seq)` within a meeting: the same on every rebuild and every replica."""
    key = json.dumps([tenant, meeting_id, device_id, seq], ensure_ascii=False)
    return "s_" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:20]


#: The fields a link of the hash chain covers, in this order. Changing it breaks every stored chain.
CHAINED_FIELDS = (
    "segment_id",
    "tenant",
    "meeting_id",
    "device_id",
    "seq",
    "start",
    "end",
    "speaker",
    "text",
    "raw_text",
    "lang",
    "confidence",
    "supersedes",
    "received_at",
    "chain_pos",
)

GENESIS_HASH = "0" * 64


def chain_hash(prev_hash: str, row: dict[str, Any]) -> str:
    """sha256 over the previous link and the canonical JSON of the row's chained fields."""
    body = json.dumps([row[name] for name in CHAINED_FIELDS], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256((prev_hash + "\n" + body).encode("utf-8")).hexdigest()
