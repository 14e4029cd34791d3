"""Record types of the transcript store: small frozen dataclasses, standard library only."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

#: The tenant of a single-user install, and of every call that names none.
DEFAULT_TENANT = "local"

#: The device id used for a file ingested by the CLI is this prefix plus the sha256 of the file's bytes.
FILE_DEVICE_PREFIX = "file:"


def utc_now() -> str:
    """Now, UTC, ISO 8601 to the microsecond: the log's arrival, closing and deletion times."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


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
    #: The meeting's head once the batch was stored: its last chain position and that row's hash.
    head_pos: int = -1
    head_hash: str = "0" * 64

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
    #: Where the chain ends (-1: no rows) and how many signed receipts were checked against it.
    head_pos: int = -1
    receipts: int = 0


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


# -- derived records: summaries and the ledger (rebuildable from the log) --------------------------------

#: The ledger's item kinds, in the order `ledger --json` lists them (CONTRACT: `ledger`).
LEDGER_KINDS = ("decision", "todo", "open_question", "fact", "glossary")
#: The CONTRACT's key for each kind in `ledger --json`.
LEDGER_KEYS = {"decision": "decisions", "todo": "todos", "open_question": "open_questions", "fact": "facts",
               "glossary": "glossary"}


@dataclass(frozen=True, slots=True)
class Source:
    """Where a summary line or ledger item comes from: the segments it cites and their time span."""

    start: float
    end: float
    segment_ids: tuple[str, ...]

    def public(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "segment_ids": list(self.segment_ids)}

    @staticmethod
    def of(segments: Any) -> Source:
        """The source spanning `segments` (a non-empty sequence of `Segment`), in the order given."""
        items = list(segments)
        if not items:
            raise ValueError("a source needs at least one segment")
        return Source(min(s.start for s in items), max(s.end for s in items), tuple(s.segment_id for s in items))


@dataclass(frozen=True, slots=True)
class LedgerItem:
    """One decision, todo, open question, fact or glossary entry, citing the segments it was read from.

    `status` is `current` until a later statement changes the item; then it is `superseded` and
    `superseded_by` names the item that replaced it. Both stay in the ledger, in time order.
    `origin` says what extracted it: `rules`, `detector` (the learned detector), `both` (the rules' item
    the detector also found), or `llm` (a validated model pass); `version` is the detector's or model's
    version when one took part. `made_by` in the public shape says both.
    """

    id: str
    kind: str
    text: str
    source: Source
    status: str = "current"
    superseded_by: str | None = None
    owner: str | None = None
    task: str | None = None
    due: str | None = None
    due_date: str | None = None
    what: str | None = None
    value: str | None = None
    origin: str = "rules"
    version: str | None = None

    def made_by(self) -> dict[str, str]:
        """The CONTRACT's `made_by`: `rules`, `model` or `both`, and the version of what made it."""
        kind = {"rules": "rules", "both": "both"}.get(self.origin, "model")
        return {"kind": kind, "version": self.version or ("rules" if kind == "rules" else self.origin)}

    def public(self) -> dict[str, Any]:
        """The CONTRACT's item shape; todos add owner/task/due/due_date, facts add what/value."""
        out: dict[str, Any] = {"id": self.id, "text": self.text, "status": self.status,
                               "superseded_by": self.superseded_by, "source": self.source.public()}
        if self.kind == "todo":
            out.update(owner=self.owner, task=self.task, due=self.due, due_date=self.due_date)
        elif self.kind == "fact":
            out.update(what=self.what, value=self.value)
        elif self.kind == "glossary" and self.what is not None:
            out["category"] = self.what
        out["origin"] = self.origin
        out["made_by"] = self.made_by()
        return out


@dataclass(frozen=True, slots=True)
class SummaryLine:
    """One sentence of a summary with the segments it rests on.

    `made_by` is what made it, as `kind` and `version` (`rules` for the extractive summarizer, `model` for a
    learned head or a language model, with its version); None for lines stored before it was recorded.
    """

    text: str
    source: Source
    made_by: tuple[str, str] | None = None

    def public(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text, "segment_ids": list(self.source.segment_ids),
                               "start": self.source.start, "end": self.source.end}
        if self.made_by is not None:
            out["made_by"] = {"kind": self.made_by[0], "version": self.made_by[1]}
        return out


@dataclass(frozen=True, slots=True)
class Section:
    """A topic section of a meeting: consecutive segments between two cuts (a long pause or a topic turn).

    `closed_by` says why it ended: `pause`, `topic`, `length` (the longest a section may grow) or `end`
    (the meeting closed). A section that has not ended yet is never summarized.
    """

    index: int
    start: float
    end: float
    segment_ids: tuple[str, ...]
    closed_by: str

    @property
    def key(self) -> str:
        """A stable id from the segments it holds: the same section always gets the same key."""
        return "sec_" + hashlib.sha256("\n".join(self.segment_ids).encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class SectionSummary:
    """L1: the summary of one closed section, made from that section's raw segments only."""

    section: Section
    lines: tuple[SummaryLine, ...]
    backend: str = "extractive"
    note: str | None = None  # why a model's summary was rejected, when it was

    @property
    def text(self) -> str:
        return " ".join(line.text for line in self.lines)

    def public(self) -> dict[str, Any]:
        ids: list[str] = []
        for line in self.lines:
            ids.extend(sid for sid in line.source.segment_ids if sid not in ids)
        out = {"start": self.section.start, "end": self.section.end, "text": self.text, "segment_ids": ids,
               "section_segment_ids": list(self.section.segment_ids), "closed_by": self.section.closed_by,
               "backend": self.backend, "lines": [line.public() for line in self.lines]}
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True, slots=True)
class MeetingDigest:
    """Everything derived from a meeting's log for overview questions: L1s, L2 and the ledger.

    `through_pos` is the last chain position it was made from; `final` says the meeting had closed then
    (so its last section was summarized too); `open_from` is where the still-open section starts.
    """

    meeting_id: str
    sections: tuple[SectionSummary, ...]
    l2: tuple[SummaryLine, ...]
    ledger: tuple[LedgerItem, ...]
    through_pos: int
    final: bool
    open_from: float | None = None
    l2_backend: str = "extractive"
    l2_note: str | None = None
    made_at: str = ""
    ledger_notes: tuple[str, ...] = ()  # why a model's ledger items were left out, when they were

    def summary_public(self) -> dict[str, Any]:
        """The CONTRACT's `summary --json` shape, plus how current it is."""
        out: dict[str, Any] = {
            "meeting_id": self.meeting_id,
            "l2": [line.public() for line in self.l2],
            "l1": [s.public() for s in self.sections],
            "final": self.final,
            "open_from": self.open_from,
            "through_pos": self.through_pos,
            "backend": self.l2_backend,
            "made_at": self.made_at,
        }
        if self.l2_note:
            out["note"] = self.l2_note
        return out

    def ledger_public(self) -> dict[str, Any]:
        """The CONTRACT's `ledger --json` shape: one list per kind, each in time order."""
        out: dict[str, Any] = {key: [] for key in LEDGER_KEYS.values()}
        for item in self.ledger:
            out[LEDGER_KEYS[item.kind]].append(item.public())
        out["meeting_id"] = self.meeting_id
        out["final"] = self.final
        out["through_pos"] = self.through_pos
        if self.ledger_notes:
            out["notes"] = list(self.ledger_notes)
        return out


@dataclass(frozen=True, slots=True)
class MeetingDump:
    """Everything the log holds of one meeting, exactly as stored: for moving it to another database
    (`meetmem migrate`), where it arrives with the same rows, links and head."""

    tenant: str
    meeting_id: str
    created_at: str
    title: str | None
    started_at: str | None
    participants: str | None  # the stored JSON list, as stored
    segments: tuple[Segment, ...]  # in chain order
    closures: tuple[tuple[str, str, int], ...]  # (closed_at, reason, through_pos), in the order recorded
    head: tuple[int, str] | None
