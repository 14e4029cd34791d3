"""Live captions: Server-Sent Events, one per new segment, resumable with `Last-Event-ID`.

Each event's id is the segment's chain position (its place in arrival order), so a client that reconnects
with the last id it saw gets exactly the segments it missed. A closure is sent as an `event: closed`
(ignored by a plain `onmessage` handler); the stream stays open, since a device catching up may still add
segments after it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.sse import EventSourceResponse, format_sse_event

from meetmem.store.errors import InvalidSegment

from .deps import MeetingId, Service, Tenant, errors

router = APIRouter(prefix="/v1/meetings", tags=["live"])

_BATCH = 200


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
    last_event_id: Annotated[str | None, Header(description="resume after this event id")] = None,
    after: Annotated[int | None, Query(ge=-1, le=2**62, description="resume after this event id "
                                                                  "(for clients that cannot set headers)")] = None,
) -> EventSourceResponse:
    """Every segment appended after the resume point (from the meeting's first without one)."""
    await run_in_threadpool(service.require_meeting, tenant, meeting_id)
    resume = after if after is not None else -1
    if last_event_id is not None and last_event_id.strip():
        try:
            resume = int(last_event_id.strip())
        except ValueError:
            raise InvalidSegment(
                f"Last-Event-ID must be the id of an event of this stream (an integer), got {last_event_id[:40]!r}"
            ) from None
        if resume < -1:
            raise InvalidSegment("Last-Event-ID must be -1 or more")
    keepalive = request.app.state.settings.sse_keepalive
    return EventSourceResponse(_stream(service, tenant, meeting_id, resume, keepalive),
                               headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


async def _stream(service: Service, tenant: str, meeting_id: str, after: int, keepalive: float) -> AsyncIterator[bytes]:
    key = (tenant, meeting_id)
    announced: str | None = None
    with service.feed.subscribe(key) as wake:
        yield format_sse_event(comment="meetmem live captions", retry=2000)
        while True:
            wake.clear()
            rows = await run_in_threadpool(service.chain_after, tenant, meeting_id, after, _BATCH)
            for seg in rows:
                data = json.dumps(seg.public(), ensure_ascii=False)
                yield format_sse_event(data_str=data, id=str(seg.chain_pos))
                after = seg.chain_pos
            if len(rows) == _BATCH:
                continue
            closure = await run_in_threadpool(service.log.closure, meeting_id, tenant=tenant)
            if closure is not None and closure.closed_at != announced:
                announced = closure.closed_at
                yield format_sse_event(data_str=json.dumps(closure.public()), event="closed")
            try:
                await asyncio.wait_for(wake.wait(), timeout=keepalive)
            except TimeoutError:
                yield format_sse_event(comment="keep-alive")
