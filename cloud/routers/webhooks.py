"""A tenant's webhook endpoints and their deliveries (store/webhooks.py; sent by cloud/webhooks.py)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel, Field

from meetmem.store.webhooks import WebhookStore

from ..schemas import WebhookIn
from .deps import Tenant, errors

router = APIRouter(prefix="/v1/webhooks", tags=["webhooks"])
deliveries_router = APIRouter(prefix="/v1/webhook-deliveries", tags=["webhooks"])

WebhookId = Annotated[str, Path(max_length=64, pattern=r"^wh_[0-9a-f]{16}$", description="the endpoint's id")]


class WebhookOut(BaseModel):
    id: str
    url: str
    events: list[str]
    created_at: str
    description: str | None
    secret: str | None = Field(default=None, description="only in the answer to the POST that made it")


class DeliveryOut(BaseModel):
    id: str = Field(description="the `webhook-id` header it is sent under, on every attempt")
    webhook_id: str
    event: str
    meeting_id: str
    status: str = Field(description="`pending`, `delivered` or `failed` (given up after the last retry)")
    attempts: int
    next_attempt_at: str | None
    last_status: int | None = Field(description="the endpoint's last HTTP status; null: no answer")
    last_error: str | None
    created_at: str
    delivered_at: str | None


def _store(request: Request) -> WebhookStore:
    return request.app.state.webhooks


@router.get("", response_model=list[WebhookOut], responses=errors(401, 503), summary="The tenant's endpoints")
def list_webhooks(request: Request, tenant: Tenant) -> list[dict[str, Any]]:
    return [e.public() for e in _store(request).list(tenant)]


@router.post("", response_model=WebhookOut, status_code=201, responses=errors(400, 401, 422, 503),
             summary="Register an endpoint; the answer holds its signing secret, shown only here")
def add_webhook(body: WebhookIn, request: Request, tenant: Tenant) -> dict[str, Any]:
    endpoint = _store(request).add(tenant, body.url, body.events, secret=body.secret, description=body.description)
    return endpoint.public(with_secret=True)


@router.delete("/{webhook_id}", response_model=WebhookOut, responses=errors(401, 404, 422, 503),
               summary="Remove an endpoint (its pending deliveries are dropped)")
def remove_webhook(webhook_id: WebhookId, request: Request, tenant: Tenant) -> dict[str, Any]:
    return _store(request).remove(tenant, webhook_id).public()


# Beside /v1/webhooks rather than under it: /v1/webhooks/{id} is an endpoint's own path.
@deliveries_router.get("", response_model=list[DeliveryOut], responses=errors(401, 422, 503),
                       summary="The tenant's latest webhook deliveries, newest first")
def list_deliveries(request: Request, tenant: Tenant,
                    webhook_id: Annotated[str | None, Query(max_length=64)] = None,
                    limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> list[dict[str, Any]]:
    return [d.public() for d in _store(request).deliveries(tenant, webhook_id=webhook_id, limit=limit)]
