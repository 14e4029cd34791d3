"""A meeting's layered summary and its ledger (decisions, todos, open questions, facts, glossary)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from meetmem.store.export import named_ledger

from ..schemas import LedgerOut, SummaryOut
from .deps import MeetingId, Service, Tenant, errors

router = APIRouter(prefix="/v1/meetings", tags=["summaries"])


@router.get(
    "/{meeting_id}/summary",
    response_model=SummaryOut,
    response_model_exclude_none=False,
    responses=errors(401, 404, 422, 503),
    summary="The meeting's layered summary: L2 from the L1s, one L1 per closed topic section",
)
def get_summary(meeting_id: MeetingId, service: Service, tenant: Tenant) -> dict[str, Any]:
    """As `meetmem summary --json`. A live meeting's sections are summarized in the background as they
    close; the section in progress is not summarized yet (`open_from` says where it starts)."""
    return service.digest(tenant, meeting_id).summary_public()


@router.get(
    "/{meeting_id}/ledger",
    response_model=LedgerOut,
    responses=errors(401, 404, 422, 503),
    summary="The meeting's decisions, todos, open questions, facts and glossary, each citing its segments",
)
def get_ledger(meeting_id: MeetingId, service: Service, tenant: Tenant) -> dict[str, Any]:
    """As `meetmem ledger --json`. An item a later statement changed stays, `superseded`, with
    `superseded_by` naming the item that replaced it."""
    # An owner who is a speaker label ("S2") is also given by the name the meeting's speaker map has for it.
    return named_ledger(service.digest(tenant, meeting_id), service.owner_names(tenant, meeting_id))
