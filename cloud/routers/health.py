"""Readiness: 200 only once the models are loaded and the stored meetings indexed."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from ..schemas import HealthOut
from .deps import Service

router = APIRouter(tags=["health"])


@router.get(
    "/healthz",
    response_model=HealthOut,
    responses={503: {"model": HealthOut, "description": "still loading, or loading failed"}},
    summary="Is the service ready to answer?",
)
def healthz(service: Service) -> JSONResponse:
    """No token needed. `ready` (200), or `loading` / `failed` (503) with the reason."""
    body = HealthOut(status=service.state, detail=service.failure)
    return JSONResponse(body.model_dump(), status_code=200 if service.state == "ready" else 503)
