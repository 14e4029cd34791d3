"""A meeting written out: Markdown minutes, SRT and WebVTT subtitles, or the JSON of segments, summary and
ledger (the same bytes as `meetmem export`)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from meetmem.store.export import EXPORT_FORMATS, EXPORT_SUFFIX, header_for, render

from ..service import MeetingService
from .deps import MeetingId, Service, Tenant, errors

router = APIRouter(prefix="/v1/meetings", tags=["export"])


def export_meeting(service: MeetingService, tenant: str, meeting_id: str, fmt: str, *,
                   base_url: str | None = None) -> str:
    """The meeting rendered in `fmt`; the summary and ledger are brought up to date as for GET summary."""
    info = service.meeting(tenant, meeting_id)
    segments = service.log.segments(meeting_id, tenant=tenant, include_superseded=True)
    meta = info.meta  # title, date and participants, as far as they were given
    header = header_for(meeting_id, segments, title=meta.title if meta else None,
                        started_at=meta.started_at if meta else None,
                        participants=meta.participants if meta else None, closed=info.closure is not None)
    digest = service.digest(tenant, meeting_id) if segments else None
    # The JSON's ledger is GET ledger's (suggested names included, as `owner_name`); the minutes, a document
    # people read as fact, name an owner only by a name a user set or confirmed.
    # The subtitles' speakers are named the same way: a document, by the names users set.
    names = service.owner_names(tenant, meeting_id, confirmed=fmt != "json")
    return render(fmt, header, segments, digest, owner_names=names if fmt in ("md", "json", "ics", "csv") else None,
                  speaker_names=names, base_url=base_url)


@router.get(
    "/{meeting_id}/export",
    responses={
        200: {"description": "the meeting in the format asked for",
              "content": {media.split(";")[0]: {"schema": {"type": "object" if "json" in media else "string"}}
                          for media in EXPORT_FORMATS.values()}},
        **errors(401, 404, 422, 503),
    },
    response_class=Response,
    summary="The meeting as Markdown minutes, SRT or WebVTT subtitles, JSON, or its open todos as iCalendar or CSV",
)
def export(
    meeting_id: MeetingId,
    service: Service,
    tenant: Tenant,
    request: Request,
    format: Annotated[Literal["md", "srt", "vtt", "json", "ics", "csv"],
                      Query(description="md (minutes), srt, vtt (subtitles), json, or the open todos as ics "
                            "(VTODO) or csv")] = "md",
) -> Response:
    """`md`: title, date, participants, the summary, decisions, todos (owner, task, due), open questions and
    facts, each with its time. `srt` / `vtt`: one cue per segment (corrections replace what they correct).
    `json`: every segment (corrected ones kept and marked), the summary and the ledger. `ics`: the todos that
    stand as VTODOs (task, owner, due date, a link to the moment it was said); `csv`: the same as rows."""
    settings = request.app.state.settings
    base = getattr(settings, "public_url", None) or str(request.base_url)
    body = export_meeting(service, tenant, meeting_id, format, base_url=base)
    filename = "".join(c if c.isalnum() or c in "-_." else "_" for c in meeting_id)[:80] + EXPORT_SUFFIX[format]
    return Response(body, media_type=EXPORT_FORMATS[format],
                    headers={"Content-Disposition": f'attachment; filename="{filename}"'})
