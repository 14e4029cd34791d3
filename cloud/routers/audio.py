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

from meetmem.store.audio import OGG_MEDIA_TYPE, AudioStore, InvalidAudio, RendersBusy, ogg_info
from meetmem.store.backends import audio_store_for
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
#: The longest a meeting's clock runs: a chunk starts and ends within it.
MAX_MEETING_SECONDS = 10 * 24 * 3600.0
Seconds = Annotated[float | None, Query(ge=0, le=MAX_MEETING_SECONDS, allow_inf_nan=False,
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
        422: {"description": "`end` before `start`, `start` past the audio's end, or a stretch longer than an "
                             "hour to make (ask for it in parts)"},
        **errors(401, 404, 503),
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
    meeting's start); with them, that stretch (position 0 is `start`; the `X-Audio-Start` and `X-Audio-End`
    headers say which stretch it is). 404 when the meeting keeps no audio.

    Audio made from several chunks (or a part of one) is at most an hour per request (`MAX_RENDER_SECONDS`,
    3600 s): a longer stretch, or the whole of a meeting longer than that, is refused with 422 saying how to
    ask for it in parts, rather than answered short without saying so. A player asks for a stretch around the
    time it wants (`?start=&end=`) and seeks inside it with `Range`. Requests for a stretch being made share
    that one render; a few renders run at once, and a request that waits too long for one gets 503 with
    `Retry-After`."""
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
        blob = audio.blob(chunks[0])  # a stored file played as it is: nothing made
    else:
        from meetmem.edge.errors import ModelUnavailable

        from ..audio_render import MAX_RENDER_SECONDS, ChunkUnreadable, render_range

        if hi - lo > MAX_RENDER_SECONDS:
            raise InvalidSegment(
                f"the stretch asked for is {hi - lo:.0f} s long; at most {MAX_RENDER_SECONDS:.0f} s of a meeting's "
                f"audio is made per request: ask for it in parts with `start` and `end` (e.g. start={lo:g}&end="
                f"{lo + MAX_RENDER_SECONDS:g})")
        # Only the chunks the stretch overlaps are read (and name the made file, so a live meeting gaining
        # chunks later does not make it again).
        wanted = [c for c in chunks if c.end > lo and c.start < hi]
        try:
            blob = await run_in_threadpool(lambda: audio.render(meeting_id, wanted, lo, hi, renderer=render_range,
                                                                tenant=tenant))
        except ModelUnavailable as exc:  # PyAV missing: the server's installation
            raise HTTPException(503, f"the meeting's audio could not be prepared: {exc}",
                                headers={"Retry-After": "60"}) from exc
        except ChunkUnreadable as exc:  # a chunk stored before uploads were decoded on arrival
            raise HTTPException(503, f"the meeting's audio could not be prepared: {exc}; the operator can find "
                                "it with `meetmem verify`") from exc
        except RendersBusy as exc:
            raise HTTPException(503, str(exc), headers={"Retry-After": "10"}) from exc
    return blob_response(blob, range, OGG_MEDIA_TYPE,
                         {"X-Audio-Start": f"{lo:.3f}", "X-Audio-End": f"{hi:.3f}",
                          "Cache-Control": "private, no-store"})


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
               **errors(400, 401, 404, 409, 413, 422, 503)},
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
    start: Annotated[float, Query(ge=0, le=MAX_MEETING_SECONDS, allow_inf_nan=False,
                                  description="where the chunk starts, in seconds from the meeting's start")],
) -> AudioUploadOut:
    """The body is the chunk's bytes. The same chunk again adds nothing (`new: false`); other bytes under
    a stored `(device, chunk seq)` are refused (409), also when two uploads race. The chunk is checked before
    anything is stored: Ogg Opus (or Vorbis) with well-formed headers, at most an hour, granule positions its
    packets can reach, and it decodes to the length it claims; else 422 naming the problem. 403 when the
    policy does not keep audio."""
    data = await request.body()
    await run_in_threadpool(service.require_meeting, tenant, meeting_id)
    keep, scope = await run_in_threadpool(audio.keeps, meeting_id, tenant=tenant)
    if not keep:
        raise HTTPException(403, f"audio is not kept for this meeting (decided by the {scope} setting); "
                            "set it with PUT /v1/meetings/{id}/audio/policy or MEETMEM_AUDIO_UPLOAD")
    try:
        await run_in_threadpool(_check_chunk, data, start)
        chunk, new = await run_in_threadpool(lambda: audio.add(meeting_id, device_id, chunk_seq, data, start=start,
                                                               tenant=tenant))
    except InvalidAudio as exc:
        raise InvalidSegment(f"chunk {chunk_seq}: {exc.reason}") from None
    return AudioUploadOut(**chunk.public(), new=new)


def _check_chunk(data: bytes, start: float) -> None:
    """An uploaded chunk is whole Ogg Opus (or Vorbis) with well-formed headers, no longer than a render may
    be, ending within the meeting's ten days, and decodes to the length it claims (issue 30).

    Raises:
        InvalidAudio: what is wrong with it.
    """
    from meetmem.edge.errors import ModelUnavailable

    from ..audio_render import MAX_RENDER_SECONDS, check_decodes

    info = ogg_info(data)
    if info.duration > MAX_RENDER_SECONDS:
        raise InvalidAudio(f"the chunk plays {info.duration:.0f} s; upload at most {MAX_RENDER_SECONDS:.0f} s per "
                           "chunk (the edge sends a minute at a time)")
    if start + info.duration > MAX_MEETING_SECONDS:
        raise InvalidAudio(f"the chunk would end {start + info.duration:.0f} s into the meeting, past the "
                           f"{MAX_MEETING_SECONDS:.0f} s a meeting may last")
    try:
        check_decodes(data, info.duration)
    except ModelUnavailable as exc:  # PyAV missing: the server's installation, not the chunk
        raise HTTPException(503, f"uploaded audio cannot be checked here: {exc}",
                            headers={"Retry-After": "60"}) from exc


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
