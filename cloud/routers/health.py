"""Readiness: 200 only once the models are loaded and the stored meetings indexed."""

from __future__ import annotations

import logging

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from ..schemas import HealthOut
from .deps import Service

log = logging.getLogger(__name__)

router = APIRouter(tags=["health"])


@router.get(
    "/healthz",
    response_model=HealthOut,
    responses={503: {"model": HealthOut, "description": "still loading, or loading failed"}},
    summary="Is the service ready to answer?",
)
def healthz(service: Service) -> JSONResponse:
    """No token needed. `ready` (200), or `loading` / `failed` (503) with the reason; and how many segments
    still wait for their vectors."""
    try:
        pending = service.pending_vectors()
    except Exception:  # a health check reports what it can; the database's state shows in the requests' errors
        log.warning("counting the segments waiting for vectors failed", exc_info=True)
        pending = None
    body = HealthOut(status=service.state, detail=service.failure, pending_vectors=pending)
    return JSONResponse(body.model_dump(), status_code=200 if service.state == "ready" else 503)
