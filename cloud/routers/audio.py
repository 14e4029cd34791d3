"""A meeting's audio, kept apart from its transcript: upload (when the policy allows), play back with HTTP
ranges, delete on its own.

The audio store (`meetmem.store.audio`) keeps Ogg files named by their sha256 beside a SQLite database, or
the bytes in rows of the PostgreSQL database (`meetmem.store.pg.audio`); the transcript log and its hash
chain never change when audio is added or deleted.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, Header, HTTPException, Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from pydantic import BaseModel, Field, StrictBool

from meetmem.store.audio import OGG_MEDIA_TYPE, AudioStore, InvalidAudio, audio_store_for
from meetmem.store.errors import InvalidSegment

from ..ranges import blob_response
from .deps import MeetingId, Service, Tenant, errors

if TYPE_CHECKING:
    from meetmem.store.pg.audio import PgAudioStore

    AnyAudioStore = AudioStore | PgAudioStore
else:
    AnyAudioStore = Any

router = APIRouter(prefix="/v1", tags=["audio"])

_lock = threading.Lock()


def get_audio(request: Request, service: Service) -> AnyAudioStore:
    """The service's audio store, opened on first use beside its database."""
    store = getattr(request.app.state, "audio", None)
    if store is None:
        with _lock:
            store = getattr(request.app.state, "audio", None)
            if store is None:
                settings = request.app.state.settings
                store = audio_store_for(service.log, default_keep=settings.audio_upload)
                request.app.state.audio = store
    return store


Audio = Annotated[AnyAudioStore, Depends(get_audio)]
Seconds = Annotated[float | None, Query(ge=0, le=10 * 24 * 3600, allow_inf_nan=False,
                                        description="seconds from the meeting's start")]
DeviceId = Annotated[str, Path(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f/]+$",
                               description="the device that recorded the chunk")]


class AudioPolicy(BaseModel):
    keep: StrictBool = Field(description="whether audio uploaded for the meeting (or the tenant) is kept")


class AudioPolicyOut(AudioPolicy):
    scope: str = Field(description="what decided it: `meeting`, `tenant`, or `service` (MEETMEM_AUDIO_UPLOAD)")


class AudioChunkOut(BaseModel):
    device_id: str
    chunk_seq: int
    start: float
    end: float
    duration: float
    sha256: str
    bytes: int
    codec: str
    added_at: str


class AudioUploadOut(AudioChunkOut):
    new: bool


class AudioDeleteOut(BaseModel):
    meeting_id: str
    deleted_chunks: int


@router.get(
    "/meetings/{meeting_id}/audio",
    response_class=Response,
    responses={
        200: {"description": "the audio (Ogg), whole", "content": {OGG_MEDIA_TYPE: {"schema": {"type": "string",
                                                                                          "format": "binary"}}}},
        206: {"description": "the byte range asked for with `Range`"},
        416: {"description": "the range lies past the end of the audio"},
        **errors(401, 404, 422, 503),
    },
    summary="Play back the meeting's audio, whole or from `start` to `end` (HTTP ranges supported)",
)
async def get_audio_range(
    meeting_id: MeetingId,
    service: Service,
    tenant: Tenant,
    audio: Audio,
    start: Seconds = None,
    end: Seconds = None,
    range: Annotated[str | None, Header(description="e.g. `bytes=0-65535`")] = None,
) -> Response:
    """The audio on the meeting's clock: with no `start`/`end` the whole meeting (position 0 is the
    meeting's start); with them, that stretch (position 0 is `start`; the `X-Audio-Start` header says so).
    404 when the meeting keeps no audio."""
    if start is not None and end is not None and end <= start:
        raise InvalidSegment(f"end ({end}) must be after start ({start})")
    await run_in_threadpool(service.require_meeting, tenant, meeting_id)
    chunks = await run_in_threadpool(audio.chunks, meeting_id, tenant=tenant)
    if not chunks:
        raise HTTPException(404, f"meeting {meeting_id!r} keeps no audio")
    last = max(c.end for c in chunks)
    lo = start or 0.0
    hi = min(end, last) if end is not None else last
    if lo >= hi:
        raise InvalidSegment(f"the meeting's audio ends at {last:.2f} s; start ({lo}) is past it")
    if start is None and end is None and len(chunks) == 1 and chunks[0].start == 0:
        blob = audio.blob(chunks[0])
    else:
        from meetmem.edge.errors import EdgeError

        from ..audio_render import render_range

        try:
            blob = await run_in_threadpool(lambda: audio.render(meeting_id, chunks, lo, hi, renderer=render_range,
                                                                tenant=tenant))
        except EdgeError as exc:  # PyAV missing, or a stored file it cannot decode: the server's problem
            raise HTTPException(503, f"the meeting's audio could not be prepared: {exc}",
                                headers={"Retry-After": "60"}) from exc
    return blob_response(blob, range, OGG_MEDIA_TYPE,
                         {"X-Audio-Start": f"{lo:.3f}", "Cache-Control": "private, no-store"})


@router.delete(
    "/meetings/{meeting_id}/audio",
    response_model=AudioDeleteOut,
    responses=errors(401, 404, 422),
    summary="Delete the meeting's audio; its transcript and hash chain stay as they are",
)
def delete_audio(meeting_id: MeetingId, service: Service, tenant: Tenant, audio: Audio) -> AudioDeleteOut:
    """Removes every audio chunk of the meeting (on SQLite the files too, unless another meeting holds the
    same bytes). Later uploads are refused unless the policy keeps audio. Deleting twice is not an error."""
    return AudioDeleteOut(meeting_id=meeting_id, deleted_chunks=audio.delete(meeting_id, tenant=tenant))


@router.get("/meetings/{meeting_id}/audio/chunks", response_model=list[AudioChunkOut],
            responses=errors(401, 404, 422), summary="The meeting's stored audio chunks")
def list_chunks(meeting_id: MeetingId, service: Service, tenant: Tenant, audio: Audio) -> list[dict[str, Any]]:
    """Each chunk's device, seq, place on the meeting's clock and sha256 (a device resumes from these)."""
    service.require_meeting(tenant, meeting_id)
    return [c.public() for c in audio.chunks(meeting_id, tenant=tenant)]


@router.put(
    "/meetings/{meeting_id}/audio/chunks/{device_id}/{chunk_seq}",
    response_model=AudioUploadOut,
    responses={403: {"description": "the policy does not keep audio for this meeting"},
               **errors(400, 401, 404, 409, 413, 422)},
    # Any media type is read as the chunk's bytes; declared as octet-stream so generic clients can send it.
    openapi_extra={"requestBody": {"required": True, "content": {
        "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}},
    summary="Upload one chunk of a device's recording (Ogg Opus), idempotent by (device, chunk seq)",
)
async def put_chunk(
    meeting_id: MeetingId,
    device_id: DeviceId,
    chunk_seq: Annotated[int, Path(ge=0, le=2**62)],
    request: Request,
    service: Service,
    tenant: Tenant,
    audio: Audio,
    start: Annotated[float, Query(ge=0, le=10 * 24 * 3600, allow_inf_nan=False,
                                  description="where the chunk starts, in seconds from the meeting's start")],
) -> AudioUploadOut:
    """The body is the chunk's bytes. The same chunk again adds nothing (`new: false`); other bytes under
    a stored `(device, chunk seq)` are refused (409). 403 when the policy does not keep audio."""
    data = await request.body()
    await run_in_threadpool(service.require_meeting, tenant, meeting_id)
    keep, scope = await run_in_threadpool(audio.keeps, meeting_id, tenant=tenant)
    if not keep:
        raise HTTPException(403, f"audio is not kept for this meeting (decided by the {scope} setting); "
                            "set it with PUT /v1/meetings/{id}/audio/policy or MEETMEM_AUDIO_UPLOAD")
    try:
        chunk, new = await run_in_threadpool(lambda: audio.add(meeting_id, device_id, chunk_seq, data, start=start,
                                                               tenant=tenant))
    except InvalidAudio as exc:
        raise InvalidSegment(f"chunk {chunk_seq}: {exc.reason}") from None
    return AudioUploadOut(**chunk.public(), new=new)


@router.get("/meetings/{meeting_id}/audio/policy", response_model=AudioPolicyOut,
            responses=errors(401, 404, 422), summary="Whether the meeting's uploaded audio is kept")
def get_policy(meeting_id: MeetingId, service: Service, tenant: Tenant, audio: Audio) -> AudioPolicyOut:
    service.require_meeting(tenant, meeting_id)
    keep, scope = audio.keeps(meeting_id, tenant=tenant)
    return AudioPolicyOut(keep=keep, scope=scope)


@router.put("/meetings/{meeting_id}/audio/policy", response_model=AudioPolicyOut,
            responses=errors(400, 401, 404, 413, 422), summary="Keep (or refuse) uploaded audio for this meeting")
def put_policy(meeting_id: MeetingId, body: AudioPolicy, service: Service, tenant: Tenant,
               audio: Audio) -> AudioPolicyOut:
    service.require_meeting(tenant, meeting_id)
    audio.set_policy(body.keep, tenant=tenant, meeting_id=meeting_id)
    return AudioPolicyOut(keep=body.keep, scope="meeting")


@router.put("/audio/policy", response_model=AudioPolicyOut, responses=errors(400, 401, 413, 422),
            summary="Keep (or refuse) uploaded audio for every meeting of the tenant without its own setting")
def put_tenant_policy(body: AudioPolicy, tenant: Tenant, audio: Audio) -> AudioPolicyOut:
    audio.set_policy(body.keep, tenant=tenant)
    return AudioPolicyOut(keep=body.keep, scope="tenant")
