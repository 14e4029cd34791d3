"""Questions about a meeting (the CLI's answer path) and plain search over its transcript."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Query, Response, UploadFile

from meetmem.store.index.timing import server_timing, timed_request

from ..schemas import AnswerOut, AskRequest, HitOut, VoiceAnswerOut
from .deps import MeetingId, Service, Tenant, errors

router = APIRouter(prefix="/v1/meetings", tags=["questions"])


@router.post(
    "/{meeting_id}/ask",
    response_model=AnswerOut,
    response_model_exclude_unset=True,
    responses=errors(400, 401, 404, 413, 422, 503),
    summary="Answer a question about the meeting, citing timestamped segments",
)
def ask(meeting_id: MeetingId, body: AskRequest, service: Service, tenant: Tenant,
        response: Response) -> dict[str, Any]:
    """`verbatim` questions (exact words, names, numbers, dates) are answered with the transcript's own
    words; `overview` questions with the best-cited segments. `explain` adds the manifest of the context.
    With a language model configured, it writes the answer over a compiled context and its citations are
    verified; `session_id` makes questions one conversation."""
    with timed_request() as spans:
        answer = service.ask(tenant, meeting_id, body.question.strip(), session_id=body.session_id,
                             device_id=body.device_id)
    # Where the answer's time went (catch-up wait, embedding, ranking): standard, and free to ignore.
    response.headers["Server-Timing"] = server_timing(spans)
    return answer.public(explain=body.explain)


@router.post(
    "/{meeting_id}/ask/voice",
    response_model=VoiceAnswerOut,
    response_model_exclude_unset=True,
    responses=errors(400, 401, 404, 413, 422, 503),
    summary="Answer a spoken question (the audio is transcribed here)",
)
def ask_voice(
    meeting_id: MeetingId,
    service: Service,
    tenant: Tenant,
    file: Annotated[UploadFile, File(description="the question: WAV, FLAC or Ogg; or raw 16-bit mono PCM "
                                                 "with `sample_rate`")],
    sample_rate: Annotated[int | None, Form(ge=4000, le=192000, description="raw PCM's sample rate")] = None,
    language: Annotated[str | None, Form(pattern="^(en|zh)$", description="en or zh (default: detect)")] = None,
    explain: Annotated[bool, Form()] = False,
) -> dict[str, Any]:
    """The answer as for a typed question, plus `transcribed_question`: what the recogniser heard."""
    data = file.file.read()
    question, answer = service.ask_voice(tenant, meeting_id, data, filename=file.filename or "upload",
                                         sample_rate=sample_rate, language=language)
    return {**answer.public(explain=explain), "transcribed_question": question}


@router.get(
    "/{meeting_id}/search",
    response_model=list[HitOut],
    responses=errors(401, 404, 422, 503),
    summary="Hybrid (BM25 + dense) search over the meeting's segments",
)
def search(
    meeting_id: MeetingId,
    service: Service,
    tenant: Tenant,
    q: Annotated[str, Query(min_length=1, max_length=2_000, description="the query")],
    k: Annotated[int, Query(ge=1, le=100, description="how many hits")] = 10,
) -> list[dict[str, Any]]:
    """The `k` best segments for `q`, best first (the CLI's `search --json`)."""
    return [hit.public() for hit in service.find(tenant, meeting_id, q, k=k)]
