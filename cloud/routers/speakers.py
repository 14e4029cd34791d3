"""A meeting's speaker map: who each of the edge's speaker labels is, suggested and corrected.

The segments keep their labels (`S1`, `wearer`, ...); names live in a versioned map beside them
(`store.speaker_map`), which asks ("what did Priya say about X") and the ledger's owners read.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from .deps import MeetingId, Service, Tenant, errors

router = APIRouter(prefix="/v1/meetings", tags=["speakers"])


class EvidenceOut(BaseModel):
    how: str = Field(description="`introduced themself`, `addressed by name` or `spoke next`")
    segment_id: str
    start: float
    end: float
    speaker: str | None
    text: str


class SuggestionOut(BaseModel):
    label: str
    name: str
    weight: int = Field(description="an introduction counts 3, being addressed by name right before speaking 1")
    evidence: list[EvidenceOut]


class SpeakerOut(BaseModel):
    label: str = Field(description="the label the segments carry")
    name: str | None = Field(description="the name now: a user's, else the suggestion's; null: none")
    source: str | None = Field(description="`user`, `suggested` or null")
    version: int = Field(description="the user's version of this label's name (0: never set)")
    segments: int
    seconds: float = Field(description="seconds of speech under the label")
    suggestion: SuggestionOut | None


class SpeakerMapOut(BaseModel):
    meeting_id: str
    speakers: list[SpeakerOut]


class SpeakerNamesIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    speakers: dict[str, str | None] = Field(
        description='labels to names, e.g. {"S2": "Priya"}; null withdraws a name (or a suggestion)',
        min_length=1, max_length=200)


class SpeakerVersionOut(BaseModel):
    label: str
    name: str | None
    version: int
    source: str
    set_at: str


@router.get("/{meeting_id}/speakers", response_model=SpeakerMapOut, responses=errors(401, 404, 422),
            summary="The meeting's speaker labels, their names and the evidence for suggested names")
def get_speakers(meeting_id: MeetingId, service: Service, tenant: Tenant) -> dict[str, Any]:
    return service.speakers(tenant, meeting_id)


@router.put("/{meeting_id}/speakers", response_model=SpeakerMapOut, responses=errors(400, 401, 404, 413, 422),
            summary="Name or rename speaker labels (a new version each; the segments are never rewritten)")
def put_speakers(meeting_id: MeetingId, body: SpeakerNamesIn, service: Service, tenant: Tenant) -> dict[str, Any]:
    """Labels not given keep their names. A label the meeting has no segment for yet may be named (a
    device still catching up)."""
    return service.set_speakers(tenant, meeting_id, body.speakers)


@router.get("/{meeting_id}/speakers/history", response_model=list[SpeakerVersionOut],
            responses=errors(401, 404, 422), summary="Every version of the meeting's speaker names")
def get_speaker_history(meeting_id: MeetingId, service: Service, tenant: Tenant) -> list[dict[str, Any]]:
    return service.speaker_history(tenant, meeting_id)
