"""Meetings and their segments: post a device's batch, list by time range, close, describe."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from meetmem.store.calendar import read_invite, with_invite
from meetmem.store.errors import InvalidSegment
from meetmem.store.interchange import validate_segment
from meetmem.store.meeting_meta import meeting_meta
from meetmem.store.records import SegmentInput

from ..schemas import ClosureOut, IngestRequest, IngestResponse, MeetingOut, ReceiptOut, SegmentOut, TombstoneOut
from ..service import MeetingInfo
from .deps import MeetingId, Service, Tenant, errors

router = APIRouter(prefix="/v1/meetings", tags=["meetings"])

Seconds = Annotated[float | None, Query(ge=0, allow_inf_nan=False, description="seconds from the meeting's start")]


def _meeting_out(info: MeetingInfo) -> MeetingOut:
    closure = info.closure
    meta = info.meta
    return MeetingOut(
        meeting_id=info.meeting_id,
        title=meta.title if meta else None,
        started_at=meta.started_at if meta else None,
        participants=list(meta.participants or ()) if meta else [],
        status="closed" if closure is not None else "live",
        segments=info.segments,
        duration=info.duration,
        closed=closure is not None,
        closure=ClosureOut(**closure.public()) if closure is not None else None,
    )


@router.get("", response_model=list[MeetingOut], responses=errors(401), summary="The tenant's meetings")
def list_meetings(service: Service, tenant: Tenant) -> list[MeetingOut]:
    return [_meeting_out(info) for info in service.meetings(tenant)]


@router.get("/{meeting_id}", response_model=MeetingOut, responses=errors(401, 404, 422), summary="One meeting")
def get_meeting(meeting_id: MeetingId, service: Service, tenant: Tenant) -> MeetingOut:
    return _meeting_out(service.meeting(tenant, meeting_id))


@router.post(
    "/{meeting_id}/segments",
    response_model=IngestResponse,
    responses=errors(400, 401, 409, 413, 422, 503),
    summary="Append a device's batch of segments (all or nothing, idempotent)",
)
def post_segments(meeting_id: MeetingId, body: IngestRequest, request: Request, service: Service,
                  tenant: Tenant) -> IngestResponse:
    """Store the batch, all or nothing. A replayed `(device_id, seq)` with the same content adds nothing,
    so a device may resend a batch it is unsure about. The first batch to an unknown meeting id creates it;
    a deleted meeting's id stays taken by its tombstone (409);
    `title`, `started_at` and `participants` beside `device_id` describe the meeting (given later, they
    replace what was stored); `ics`, a calendar invite, gives whichever of them the batch does not.
    The answer comes once the batch is durable; indexing follows in the background (searchable at once)."""
    limit = request.app.state.settings.max_batch
    if len(body.segments) > limit:
        raise InvalidSegment(f"the batch holds {len(body.segments)} segments; send at most {limit} per request")
    inputs: list[SegmentInput] = []
    for i, item in enumerate(body.segments):
        fields = item.model_dump(exclude={"seq"})
        try:
            inputs.append(validate_segment(fields, item.seq))
        except InvalidSegment as exc:
            raise InvalidSegment(f"segments[{i}] (seq {item.seq}): {exc.reason}") from None
    invite = read_invite(body.ics, name="the `ics` field") if body.ics is not None else None
    meta = meeting_meta(*with_invite(invite, body.title, body.started_at, body.participants))
    result, ids = service.ingest(tenant, meeting_id, body.device_id, inputs, meta=meta)
    receipt = request.app.state.receipts.sign(tenant, meeting_id, result.head_pos, result.head_hash)
    return IngestResponse(meeting_id=meeting_id, device_id=body.device_id, new=result.new,
                          duplicates=result.duplicates, segment_ids=ids, receipt=ReceiptOut(**receipt.public()))


@router.get(
    "/{meeting_id}/segments",
    response_model=list[SegmentOut],
    responses=errors(401, 404, 422),
    summary="The meeting's segments, ordered by start, optionally within a time range",
)
def get_segments(meeting_id: MeetingId, service: Service, tenant: Tenant, start: Seconds = None,
                 end: Seconds = None) -> list[dict]:
    """Segments overlapping `[start, end]` (seconds), ordered by start, device id and seq; corrected
    segments are replaced by their corrections."""
    if start is not None and end is not None and end < start:
        raise InvalidSegment(f"end ({end}) is before start ({start})")
    return [s.public() for s in service.segments(tenant, meeting_id, start=start, end=end)]


@router.post(
    "/{meeting_id}/close",
    response_model=MeetingOut,
    responses=errors(401, 404, 422),
    summary="The meeting ended",
)
def close_meeting(meeting_id: MeetingId, service: Service, tenant: Tenant) -> MeetingOut:
    """Record the meeting's end (a no-op if it is already closed). Segments that arrive later, from a
    device catching up, are still stored and reopen it."""
    service.close(tenant, meeting_id)
    return _meeting_out(service.meeting(tenant, meeting_id))


@router.delete(
    "/{meeting_id}",
    response_model=TombstoneOut,
    responses=errors(401, 404, 422),
    summary="Delete the meeting: segments, derived data and audio; answers with its signed tombstone",
)
def delete_meeting(meeting_id: MeetingId, service: Service, tenant: Tenant) -> TombstoneOut:
    """Remove the meeting's segments, summaries, ledger, vectors and audio, in one transaction (the audio
    files right after), and keep a tombstone signed with the server's receipt key: the meeting's id, when,
    why, how many segments it held and where its hash chain ended. Afterwards every route of the meeting
    answers 404, it leaves the meeting list and cross-meeting search, its live streams end with an event
    `deleted`, and segments posted under its id are refused with 409."""
    return TombstoneOut(**service.delete(tenant, meeting_id).public())


tombstones_router = APIRouter(prefix="/v1/tombstones", tags=["meetings"])


@tombstones_router.get("", response_model=list[TombstoneOut], responses=errors(401),
                       summary="The tenant's deleted meetings, oldest deletion first")
def list_tombstones(service: Service, tenant: Tenant) -> list[TombstoneOut]:
    return [TombstoneOut(**t.public()) for t in service.tombstones(tenant)]
