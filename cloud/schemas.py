"""Request and response models of the HTTP API (kept apart from the store's records).

The field names and meanings are the CONTRACT's. Validation here is the API's first line: a body that
fails it gets a 422 naming the field, before anything touches the log. The store checks again on append.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from meetmem.store.interchange import MAX_TEXT_CHARS, MAX_TIMESTAMP_S
from meetmem.store.webhooks import EVENTS

#: SQLite integers are signed 64-bit; a larger seq could not be stored.
MAX_SEQ = 2**63 - 1


def _storable(value: str | None) -> str | None:
    """Text must be valid Unicode (JSON can carry lone surrogates, which no UTF-8 database can store)."""
    if value is not None:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError("contains a lone surrogate; text must be valid Unicode") from exc
        if "\x00" in value:
            raise ValueError("contains a NUL character")
    return value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty or only whitespace")
    return value


Text = Annotated[str, AfterValidator(_storable)]
# The pattern says "holds a non-space character" in the OpenAPI document too (JSON Schema patterns search).
NonBlank = Annotated[str, Field(min_length=1, pattern=r"\S"), AfterValidator(_storable), AfterValidator(_not_blank)]
Seconds = Annotated[float, Field(ge=0, le=MAX_TIMESTAMP_S, allow_inf_nan=False)]


class _Strict(BaseModel):
    """Unknown fields and loose types (`"explain": 0`, `"seq": "3"`) are refused, not guessed at."""

    model_config = ConfigDict(extra="forbid", strict=True, str_max_length=MAX_TEXT_CHARS)


class SegmentIn(_Strict):
    """One utterance: the interchange fields plus the device's `seq`."""

    seq: int = Field(ge=0, le=MAX_SEQ, description="the device's sequence number; increases per device")
    start: Seconds = Field(description="seconds from the meeting's start")
    end: Seconds = Field(description="seconds from the meeting's start; not before `start`")
    text: NonBlank = Field(max_length=MAX_TEXT_CHARS, description="the (cleaned) text, stored exactly as given")
    speaker: Text | None = Field(default=None, max_length=200)
    lang: Text | None = Field(default=None, max_length=35, description="BCP 47 language tag: en, zh, ...")
    raw_text: Text | None = Field(default=None, max_length=MAX_TEXT_CHARS, description="the ASR text before cleaning")
    confidence: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False)
    supersedes: Text | None = Field(default=None, max_length=64, description="segment id this one corrects")

    @model_validator(mode="after")
    def _end_after_start(self) -> SegmentIn:
        if self.end < self.start:
            raise ValueError(f"end ({self.end}) is before start ({self.start})")
        return self


class IngestRequest(_Strict):
    device_id: NonBlank = Field(max_length=200, description="the posting device; `(device_id, seq)` is unique")
    segments: list[SegmentIn] = Field(min_length=1, description="all stored or none; at least one (an empty "
                                      "batch would store nothing and make no meeting)")
    title: NonBlank | None = Field(default=None, max_length=300, description="the meeting's title")
    started_at: NonBlank | None = Field(
        default=None, max_length=64, examples=["2027-03-01T10:00:00+01:00"],
        description="when the meeting started: ISO 8601 date-time with a UTC offset; relative dates said in "
        "the meeting (\"by Friday\", \"下周五\") resolve against its day",
    )
    participants: list[NonBlank] | None = Field(default=None, max_length=200, description="who took part, by name")
    ics: NonBlank | None = Field(
        default=None, max_length=20_000,
        description="the meeting's calendar invite (an iCalendar file's text): its first event gives the title, "
        "the start with its timezone and the attendees, where the fields above do not say otherwise")


class WebhookIn(_Strict):
    url: NonBlank = Field(max_length=2000, description="where to POST each event: an http(s) URL")
    events: list[NonBlank] = Field(min_length=1, max_length=len(EVENTS), description=f"any of {', '.join(EVENTS)}")
    secret: NonBlank | None = Field(default=None, max_length=200,
                                    description="the signing secret, `whsec_` + base64 of 24 to 64 bytes; made "
                                    "when left out")
    description: Text | None = Field(default=None, max_length=200)


class ReceiptOut(BaseModel):
    version: int
    tenant: str
    meeting_id: str
    pos: int = Field(description="the meeting's last chain position once the batch was stored (-1: none)")
    head: str = Field(description="the hash of the chain at that position")
    key_id: str = Field(description="which server key signed it")
    sig: str = Field(description="HMAC-SHA256 of the fields above with the server's receipt key")


class TombstoneOut(BaseModel):
    """What stays of a deleted meeting, forever: signed with the server's receipt key."""

    version: int
    tenant: str
    meeting_id: str
    deleted_at: str = Field(description="when it was deleted (UTC, ISO 8601)")
    reason: str = Field(description="why: the tenant's request, or the retention policy and the meeting's age")
    segments: int = Field(description="how many segment rows the meeting held")
    head_pos: int = Field(description="the last chain position of the meeting's log (-1: none)")
    head_hash: str = Field(description="the hash of the chain at that position")
    key_id: str = Field(description="which server key signed it")
    sig: str = Field(description="HMAC-SHA256 of the fields above with the server's receipt key")


class IngestResponse(BaseModel):
    meeting_id: str
    device_id: str
    new: int = Field(description="how many segments of the batch were stored now")
    duplicates: int = Field(description="how many were already stored (replays add nothing)")
    segment_ids: list[str] = Field(description="the id of every segment of the batch, in seq order")
    receipt: ReceiptOut = Field(description="the server's signed statement of where the meeting's log stood "
                                "once the batch was stored; keep it to check the log later (`meetmem verify "
                                "--receipt`)")


class SegmentOut(BaseModel):
    segment_id: str
    device_id: str
    seq: int
    start: float
    end: float
    speaker: str | None
    text: str
    raw_text: str | None
    lang: str | None
    confidence: float | None = None
    supersedes: str | None = None


class HitOut(BaseModel):
    segment_id: str
    start: float
    end: float
    speaker: str | None
    text: str
    score: float


class CrossHitOut(HitOut):
    meeting_id: str = Field(description="the meeting the segment belongs to")


class AskRequest(_Strict):
    question: NonBlank = Field(max_length=2_000)
    explain: bool = Field(default=False, description="also return the manifest of the context used")
    device_id: str | None = Field(
        default=None, min_length=1, max_length=200,
        pattern=r"^[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$",
        description="the asking device: \"what was said since I joined?\" starts at its first segment",
    )
    session_id: str | None = Field(
        default=None, min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._-]+$",
        description="questions with the same session id are one conversation: with a language model "
        "configured, each prompt shows the earlier rounds (kept in memory, per tenant and meeting)",
    )


class CitationOut(BaseModel):
    segment_id: str
    start: float
    end: float
    speaker: str | None
    speaker_name: str | None = Field(default=None, description="the name the meeting's speaker map gives the "
                                     "speaker label (a user's, else a suggestion); absent when it has none")
    text: str


class ManifestBlockOut(BaseModel):
    block: str
    tokens: int
    reason: str


class RouteOut(BaseModel):
    name: str = Field(description="time, topic, speaker, why, decision, verbatim, overview (across: across)")
    reason: str = Field(description="why this route was taken")


class PlanOut(BaseModel):
    route: str = Field(description="the route, as `route.name`")
    params: dict[str, Any] = Field(description="what the route uses: start/end (seconds), topic, speaker_mention, "
                                   "speaker (the label it resolved to), focus, owner, answer_types, ...")
    why: str = Field(description="why this route, with what was read from the question")


class AnswerOut(BaseModel):
    question: str
    kind: Literal["verbatim", "overview"]
    answer: str
    citations: list[CitationOut]
    manifest: list[ManifestBlockOut] | None = Field(default=None, description="only with `explain`")
    route: RouteOut | None = Field(default=None, description="only with `explain`: how the question was routed")
    plan: PlanOut | None = Field(default=None, description="only with `explain`: the route, its parameters, why")


class VoiceAnswerOut(AnswerOut):
    transcribed_question: str = Field(description="what the recogniser heard")


class SourceOut(BaseModel):
    start: float
    end: float
    segment_ids: list[str]


class MadeByOut(BaseModel):
    kind: Literal["rules", "model", "both"]
    version: str


class SummaryLineOut(BaseModel):
    text: str = Field(description="a sentence of the transcript, verbatim (extractive) or a validated model line")
    segment_ids: list[str] = Field(description="the segments it rests on")
    start: float
    end: float
    made_by: MadeByOut | None = Field(default=None, description="what made the line (rules: the extractive "
                                      "summarizer; model: the learned head or a language model) and its version")


class SectionSummaryOut(BaseModel):
    start: float
    end: float
    text: str
    segment_ids: list[str] = Field(description="the segments its lines cite")
    section_segment_ids: list[str] = Field(description="every segment of the topic section")
    closed_by: str = Field(description="why the section ended: pause, topic, length or end")
    backend: str
    lines: list[SummaryLineOut]
    note: str | None = Field(default=None, description="why a model's summary was rejected, if it was")


class SummaryOut(BaseModel):
    meeting_id: str
    l2: list[SummaryLineOut] = Field(description="the meeting's summary, made from the L1s alone")
    l1: list[SectionSummaryOut] = Field(description="one per closed topic section, from its raw segments")
    final: bool = Field(description="the meeting had closed, so its last section is summarized too")
    open_from: float | None = Field(description="where the section still in progress starts")
    through_pos: int
    backend: str
    made_at: str
    note: str | None = None


class LedgerItemOut(BaseModel):
    id: str
    text: str
    status: Literal["current", "superseded"]
    superseded_by: str | None
    source: SourceOut
    origin: str = "rules"
    made_by: MadeByOut | None = Field(default=None, description="what extracted the item (rules, model or both) "
                                      "and its version")
    owner: str | None = None
    owner_name: str | None = Field(default=None, description="the owner's name in the speaker map, when the owner "
                                   "is a speaker label")
    task: str | None = None
    due: str | None = Field(default=None, description="the due date as said")
    due_date: str | None = Field(default=None, description="ISO date when it could be resolved")
    what: str | None = None
    value: str | None = None
    category: str | None = None


class LedgerOut(BaseModel):
    meeting_id: str
    decisions: list[LedgerItemOut]
    todos: list[LedgerItemOut]
    open_questions: list[LedgerItemOut]
    facts: list[LedgerItemOut]
    glossary: list[LedgerItemOut]
    final: bool
    through_pos: int
    notes: list[str] | None = Field(default=None, description="why a model's ledger items were left out")


class ClosureOut(BaseModel):
    closed_at: str
    reason: str = Field(description="`closed` (a client said so) or `silence`")


class MeetingOut(BaseModel):
    meeting_id: str
    title: str | None = Field(default=None, description="as given on ingest; null when not given")
    started_at: str | None = Field(default=None, description="ISO 8601 with offset; null when not given")
    participants: list[str] = Field(default_factory=list, description="names, as given on ingest")
    status: Literal["live", "closed"] = Field(default="live", description="`closed` once the meeting ended")
    segments: int
    duration: float = Field(description="seconds from the meeting's start to the end of its last segment")
    closed: bool
    closure: ClosureOut | None = None


class HealthOut(BaseModel):
    status: Literal["ready", "loading", "failed", "unavailable"] = Field(
        description="ready (200); loading, failed (the models), or unavailable (the database cannot be reached): 503")
    detail: str | None = None
    pending_vectors: int | None = Field(
        default=None,
        description="with a valid token: its tenant's segments found by their words but still waiting for their "
                    "vectors (on PostgreSQL a `meetmem worker` embeds them); null without a token, without an "
                    "embedding model or when the count cannot be read")


class ErrorOut(BaseModel):
    detail: str = Field(description="what was wrong, in words a person can act on")
    errors: list[dict[str, Any]] | None = Field(default=None, description="per-field problems (422 only)")


class CrossCitationOut(CitationOut):
    meeting_id: str = Field(description="the meeting the segment belongs to")


class CrossAnswerOut(BaseModel):
    question: str
    kind: Literal["verbatim", "overview"]
    meeting_id: str | None = Field(description="the meeting the answer comes from (null: nothing matched)")
    answer: str
    citations: list[CrossCitationOut]
    manifest: list[ManifestBlockOut] | None = Field(default=None, description="only with `explain`")
    route: RouteOut | None = Field(default=None, description="only with `explain`")
    plan: PlanOut | None = Field(default=None, description="only with `explain`")
