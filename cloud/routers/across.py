"""Search and questions across all of the tenant's meetings: every hit and citation names its meeting."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from ..schemas import AskRequest, CrossAnswerOut, CrossHitOut
from .deps import Service, Tenant, errors

router = APIRouter(prefix="/v1", tags=["questions"])


@router.get(
    "/search",
    response_model=list[CrossHitOut],
    responses=errors(401, 422, 503),
    summary="Search all of the tenant's meetings, ranked on one scale",
)
def search_all(
    service: Service,
    tenant: Tenant,
    q: Annotated[str, Query(min_length=1, max_length=2_000, pattern=r"\S", description="the query")],
    k: Annotated[int, Query(ge=1, le=100, description="how many hits")] = 10,
) -> list[dict[str, Any]]:
    """The `k` best segments of all the tenant's meetings for `q`, best first, each with `meeting_id`
    (as `meetmem search --all QUERY --json`)."""
    return [hit.public() for hit in service.find_all(tenant, q, k=k)]


@router.post(
    "/ask",
    response_model=CrossAnswerOut,
    response_model_exclude_unset=True,
    responses=errors(400, 401, 413, 422, 503),
    summary="Answer a question from all of the tenant's meetings",
)
def ask_all(body: AskRequest, service: Service, tenant: Tenant) -> dict[str, Any]:
    """The meeting holding the best match answers (with its time, topic, speaker and why routes); the
    other meetings' best hits follow as citations. A period in the question ("last week") keeps the
    meetings whose `started_at` falls in it. Every citation names its `meeting_id`."""
    return service.ask_all(tenant, body.question.strip(), explain=body.explain)
