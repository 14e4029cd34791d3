"""Live captions: Server-Sent Events, one per new segment, resumable with `Last-Event-ID`.

Each event's id is the segment's chain position (its place in arrival order), so a client that reconnects
with the last id it saw gets exactly the segments it missed. A closure is sent as an `event: closed`
(ignored by a plain `onmessage` handler); the stream stays open, since a device catching up may still add
segments after it. The stream's token is checked again every few seconds and before every event it sends:
once it is revoked or expired, an `event: unauthorized` ends the stream (a reconnect then gets 401).

Partial captions (`POST .../partials`, from an edge while someone is still speaking) go out as `event:
partial` without an id: they are never stored, a reconnecting stream does not get them again, and the
final segment (a plain event) replaces them. A partial that starts before the end of a segment the stream
already sent is late and skipped.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Callable
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.sse import EventSourceResponse, format_sse_event
from pydantic import BaseModel, ConfigDict, Field, model_validator

from meetmem.store.errors import InvalidSegment

from .deps import MeetingId, Service, Tenant, Token, errors

router = APIRouter(prefix="/v1/meetings", tags=["live"])

_BATCH = 200
#: Event ids are chain positions, SQLite integers; a larger resume point could not even be compared.
MAX_EVENT_ID = 2**62


class PartialIn(BaseModel):
    """A caption of the utterance in progress: its start, how far the edge has heard, the words so far."""

    model_config = ConfigDict(extra="forbid", strict=True)

    device_id: str = Field(min_length=1, max_length=200, description="the device capturing the utterance")
    start: float = Field(ge=0, le=1e7, allow_inf_nan=False, description="the utterance's start (meeting seconds)")
    heard_until: float = Field(ge=0, le=1e7, allow_inf_nan=False,
                               description="the end of the audio the caption covers (meeting seconds)")
    text: str = Field(max_length=4000, description="the words confirmed so far")

    @model_validator(mode="after")
    def _heard_after_start(self) -> PartialIn:
        if self.heard_until < self.start:
            raise ValueError(f"heard_until ({self.heard_until}) is before start ({self.start})")
        return self


class PartialAccepted(BaseModel):
    meeting_id: str
    partial: int = Field(description="the partial's number on this server (not stored)")
    followers: int = Field(description="streams of the meeting it was sent to")


@router.post(
    "/{meeting_id}/partials",
    response_model=PartialAccepted,
    status_code=202,
    responses=errors(401, 422),
    summary="Show a partial caption on the meeting's live streams (never stored)",
)
def post_partial(meeting_id: MeetingId, body: PartialIn, service: Service, tenant: Tenant) -> PartialAccepted:
    """Pass a partial caption to the meeting's event streams as an `event: partial`. Nothing is written: the
    final segment replaces it. Accepted for a meeting with no segments yet (its first words come first)."""
    key = (tenant, meeting_id)
    number = service.feed.post_partial(key, body.device_id, body.model_dump())
    return PartialAccepted(meeting_id=meeting_id, partial=number, followers=service.feed.subscribers(key))


@router.get(
    "/{meeting_id}/events",
    # Not `response_class=EventSourceResponse`: FastAPI would take this for a generator endpoint. The
    # meeting is checked (404) before the stream starts, and the stream is built here.
    responses={
        200: {
            "description": "an endless `text/event-stream`: `id: <chain position>` and `data: <segment JSON>` "
            "(the shape of a segments listing item) per segment, in arrival order",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
        **errors(401, 404, 422),
    },
    summary="Follow the meeting's new segments live",
    response_model=None,
)
async def events(
    meeting_id: MeetingId,
    request: Request,
    service: Service,
    tenant: Tenant,
    token: Token,
    last_event_id: Annotated[str | None, Header(description="resume after this event id")] = None,
    after: Annotated[int | None, Query(ge=-1, le=MAX_EVENT_ID, description="resume after this event id "
                                                                  "(for clients that cannot set headers)")] = None,
) -> EventSourceResponse:
    """Every segment appended after the resume point (from the meeting's first without one)."""
    await run_in_threadpool(service.require_meeting, tenant, meeting_id)
    resume = -1
    if after is not None:  # checked again as written: the query's int parsing would take `1_000` or `+5`
        resume = _event_id(request.query_params.get("after", ""), "after")
    if last_event_id is not None and last_event_id.strip(" \t"):
        resume = _event_id(last_event_id, "Last-Event-ID")
    settings = request.app.state.settings
    tokens = request.app.state.tokens

    def authorised() -> bool:
        return tokens.tenant_for(token) == tenant

    return EventSourceResponse(_stream(service, tenant, meeting_id, resume, settings.sse_keepalive, authorised,
                                       settings.token_recheck),
                               headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


_EVENT_ID_RE = re.compile(r"^[ \t]*(-?[0-9]{1,19})[ \t]*$")


def _event_id(text: str, name: str) -> int:
    """A resume point as the stream wrote it: ASCII digits (or -1), nothing else. Python's `int` would also
    read `1_000`, `+5` or other scripts' digits as numbers no event of this stream ever had.

    Raises:
        InvalidSegment: not an event id (422, as any malformed input of the API).
    """
    match = _EVENT_ID_RE.match(text)
    if match is None:
        raise InvalidSegment(f"{name} must be the id of an event of this stream (digits 0-9, or -1 for the "
                             f"start), got {text[:40]!r}")
    value = int(match.group(1))
    if not -1 <= value <= MAX_EVENT_ID:
        raise InvalidSegment(f"{name} must be between -1 and {MAX_EVENT_ID}, got {text[:40]!r}")
    return value


async def _stream(service: Service, tenant: str, meeting_id: str, after: int, keepalive: float,
                  authorised: Callable[[], bool], recheck: float) -> AsyncIterator[bytes]:
    key = (tenant, meeting_id)
    announced: str | None = None
    partial_seen = 0
    final_end = 0.0
    with service.feed.subscribe(key) as wake:
        yield format_sse_event(comment="meetmem live captions", retry=2000)
        quiet_since = time.monotonic()
        while True:
            wake.clear()
            # Before every event sent, and at least every `recheck` seconds while idle: a revoked or expired
            # token must not keep receiving a meeting's words.
            if not await run_in_threadpool(authorised):
                yield format_sse_event(data_str=json.dumps({"detail": "the token was revoked or has expired"}),
                                       event="unauthorized")
                return
            if not await run_in_threadpool(service.log.has_meeting, meeting_id, tenant=tenant):
                # Deleted while followed: say so and end (its segments are gone, nothing more comes).
                yield format_sse_event(data_str=json.dumps({"meeting_id": meeting_id}), event="deleted")
                return
            rows = await run_in_threadpool(service.chain_after, tenant, meeting_id, after, _BATCH)
            for seg in rows:
                data = json.dumps(seg.public(), ensure_ascii=False)
                yield format_sse_event(data_str=data, id=str(seg.chain_pos))
                after = seg.chain_pos
                final_end = max(final_end, seg.end)
            if len(rows) == _BATCH:
                continue
            for number, partial in service.feed.partials_after(key, partial_seen):
                partial_seen = number
                if partial["start"] >= final_end - 0.01:
                    yield format_sse_event(data_str=json.dumps(partial, ensure_ascii=False), event="partial")
            closure = await run_in_threadpool(service.log.closure, meeting_id, tenant=tenant)
            if closure is not None and closure.closed_at != announced:
                announced = closure.closed_at
                yield format_sse_event(data_str=json.dumps(closure.public()), event="closed")
            try:
                await asyncio.wait_for(wake.wait(), timeout=min(keepalive, recheck))
                quiet_since = time.monotonic()
            except TimeoutError:
                if time.monotonic() - quiet_since >= keepalive:
                    quiet_since = time.monotonic()
                    yield format_sse_event(comment="keep-alive")
