"""Readiness: 200 only once the models are loaded, the stored meetings indexed and the database answers."""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from meetmem.store.errors import DatabaseUnavailable

from ..schemas import HealthOut
from .deps import Service, token_record

log = logging.getLogger(__name__)

router = APIRouter(tags=["health"])

#: A meeting looked for to see that the database answers (whether it exists does not matter).
_PROBE = ("healthz", "healthz")


@router.get(
    "/healthz",
    response_model=HealthOut,
    responses={503: {"model": HealthOut, "description": "still loading, loading failed, or the database cannot be "
                     "reached"}},
    summary="Is the service ready to answer?",
)
def healthz(request: Request, service: Service) -> JSONResponse:
    """No token needed. `ready` (200), or `loading` / `failed` / `unavailable` (503) with the reason. With a
    valid token, also how many of its tenant's segments still wait for their vectors (never another's)."""
    try:
        service.log.has_meeting(_PROBE[1], tenant=_PROBE[0])
    except Exception as exc:  # whatever the driver raised: a health check answers, it does not fail
        reason = exc.reason if isinstance(exc, DatabaseUnavailable) else "it did not answer"
        log.warning("health check: the database cannot be reached: %s", exc)
        from ..app import public_detail

        body = HealthOut(status="unavailable", detail=f"the database cannot be reached ({public_detail(reason)})")
        return JSONResponse(body.model_dump(), status_code=503, headers={"Retry-After": "2"})
    pending = None
    try:
        _, record = token_record(request)
        if record is not None:
            pending = service.pending_vectors(tenant=record.tenant)
    except Exception:  # a health check reports what it can; the database's state shows in the requests' errors
        log.warning("counting the segments waiting for vectors failed", exc_info=True)
    body = HealthOut(status=service.state, detail=service.failure, pending_vectors=pending)
    return JSONResponse(body.model_dump(), status_code=200 if service.state == "ready" else 503)
